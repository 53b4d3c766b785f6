package score

import (
	"strings"
	"testing"
)

// Labels files are written by hand: whatever they hold, parsing returns a
// result or an error that names the file, and never panics.
func FuzzParseLabels(f *testing.F) {
	for _, seed := range []string{
		"name: x\nexpect:\n  - {detector: traffic_drop, entity: \"country:UG\", onset: 2021-01-13T17:00:00Z, within: 15m}\n",
		"allow:\n  - {entity: \"asn:*\", from: 2021-01-13T17:00:00Z, to: 2021-01-12T00:00:00Z}\n",
		"inputs: [a.csv]\nexpect:\n  - {detector: latency, entity: \"probe:1>x\", onset: 2024-03-07T18:00:00Z, within: 20m, resolve_after: 2024-03-07T20:00:00Z}\n",
		"expect: {}\n", "- 1\n", "", "expect:\n  - [1, 2]\n", "name: [\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		l, err := ParseLabels("l.yaml", []byte(doc))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "l.yaml:") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if len(l.Expect) == 0 && len(l.Allow) == 0 {
			t.Fatal("accepted labels that expect and allow nothing")
		}
		_ = l.Spec()
	})
}
