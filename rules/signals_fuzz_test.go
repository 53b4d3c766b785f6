package rules

import (
	"strings"
	"testing"
)

// Signals are declared in files operators write: whatever a signals list
// holds, Parse declares what is valid or fails with file:line, and never
// panics.
func FuzzParseSignals(f *testing.F) {
	for _, seed := range []string{
		"signals:\n  - {name: fz_a, kind: gauge, cadence: 10m, feed: fz}\n",
		"signals:\n  - {name: fz_b, kind: volume, missing_is_zero: true, aggregate: sum}\n",
		"signals:\n  - {name: fz_c, kind: ratio, cadence: 0s}\n",
		"signals:\n  - {name: traffic_bytes, kind: volume}\n",
		"signals: {}\n", "signals:\n  - 1\n", "signals:\n  - {name: fz_d, kind: distinct, aggregate: custom}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		// Names are confined to the fz_ prefix so that what the fuzzer
		// declares cannot clash with the other tests' signals.
		if strings.Contains(doc, "name:") && !strings.Contains(doc, "fz_") {
			return
		}
		if _, err := Parse("s.yaml", []byte(doc)); err != nil && !strings.HasPrefix(err.Error(), "s.yaml:") {
			t.Fatalf("error without the file: %v", err)
		}
	})
}
