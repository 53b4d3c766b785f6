package rules

import (
	"strings"
	"testing"
)

// The severity block is written by operators: whatever it holds, Parse
// sets thresholds that order warning below critical, or fails with
// file:line, and never panics.
func FuzzParseSeverity(f *testing.F) {
	for _, seed := range []string{
		"severity:\n  warning: 0.05\n  critical: 0.25\n  full_after: 30m\n",
		"severity:\n  warning: 0.3\n  critical: 0.2\n  full_after: 1h\n",
		"severity:\n  warning: .nan\n  critical: .inf\n  full_after: 1h\n",
		"severity:\n  warning: 0.1\n  critical: 0.4\n  full_after: 0s\n",
		"severity: ~\n", "severity:\n  - warning\n", "severity:\n  warning: [1]\n",
		"severity:\n  warning: 0.1\n  critical: 0.4\n  full_after: 1h\nrules: []\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if strings.Contains(doc, "signals") {
			return // FuzzParseSignals covers declarations
		}
		set, err := Parse("s.yaml", []byte(doc))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "s.yaml:") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if s := set.Severity; s != nil && !(s.Warning > 0 && s.Warning < s.Critical && s.Critical <= 1 && s.FullAfter > 0) {
			t.Fatalf("accepted %+v", s)
		}
	})
}
