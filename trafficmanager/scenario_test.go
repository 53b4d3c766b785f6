package trafficmanager

import (
	"strings"
	"testing"
)

func TestScenarioSectionsAndLoss(t *testing.T) {
	sc, err := LoadScenario("testdata/sections-and-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Ticks) != 7 {
		t.Fatalf("%d ticks", len(sc.Ticks))
	}
	sc.Run(func(i int, tk *ScenarioTick, r Result) {
		if tk.Moves == nil || tk.Changes == nil {
			t.Fatalf("tick %d (%s): expectations missing", i, tk.Name)
		}
		if d := tk.Mismatch(r); d != "" {
			t.Errorf("tick %d (%s, line %d):\n%s", i, tk.Name, tk.Line, d)
		}
		if len(r.Notes) != 0 {
			t.Errorf("tick %d (%s) notes: %v", i, tk.Name, r.Notes)
		}
	})
}

func TestParseScenarioErrors(t *testing.T) {
	base := "thresholds: {max: 0.9, target: 0.8, acceptable: 0.7}\nunits:\n  A: {capacity: 10}\n"
	for _, c := range []struct{ doc, want string }{
		{"thresholds: {max: 0.9, target: 0.95, acceptable: 0.7}\nunits:\n  A: {capacity: 10}\n", "s.yaml:1: thresholds acceptable 0.7, target 0.95, max 0.9"},
		{base + "latency:\n  A: {B: 5}\n", "s.yaml:5: latency A→B: unknown location"},
		{base + "ticks:\n  - capacity: {B: 5}\n", "s.yaml:5: tick 0: capacity B 5: want a known unit"},
		{base + "ticks:\n  - {name: x, capcity: {A: 5}}\n", `s.yaml:5: unknown key "capcity"`},
		{"thresholds: {max: 0.9, target: 0.8, acceptable: 0.7}\nunits:\n  A: {capacity: 10, load: {Gold: 3}}\n", "s.yaml:3: unit A: load Gold 3"},
		{"thresholds: {max: 0.9, target: 0.8, acceptable: 0.7}\nunits:\n  A: {capacity: 10}\n  B: {capacity: 10}\nfailover:\n  A: {B: 1.5}\n", "s.yaml:6: failover shares of A add up to 1.5"},
	} {
		_, err := ParseScenario("s.yaml", []byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\nerror %v\nwant  %q", c.doc, err, c.want)
		}
	}
}

func FuzzParseScenario(f *testing.F) {
	f.Add([]byte("thresholds: {max: 0.9, target: 0.8, acceptable: 0.7}\nunits:\n  A/s1: {capacity: 10, load: {Free: 9}}\n  B: {capacity: 10}\nlatency: {A: {B: 3}}\nticks:\n  - capacity: {A/s1: 0}\n"))
	f.Add([]byte("units: [\n"))
	f.Add([]byte("thresholds: {max: 0.9, target: 0.8, acceptable: 0.7}\npace: 0.3\nmax_withdrawn: 2\nmax_report_age: 1m\nerrors: {max: 0.1, ticks: 1}\nfailover: {A: {B: 0.5, C: 0.5}, B: {C: 1}}\nunits:\n  A: {capacity: 10, load: {Free: 9}, thresholds: {max: 0.8}}\n  B: {capacity: 10, load: {Pro: 8}}\n  C: {capacity: 30}\nlatency: {A: {B: 3, C: 5}, B: {C: 2}}\nticks:\n  - capacity: {A: 0}\n  - {errors: {B: 0.5}, served: {C: 20}}\n  - {age: {C: 2m}, learnt: {B: 0.5}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := ParseScenario("f.yaml", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml:") {
				t.Fatalf("error without file:line: %v", err)
			}
			return
		}
		if len(sc.Ticks) > 20 || len(sc.Units) > 20 {
			return
		}
		// Whatever the topology, a plan never moves more of a plan than a
		// unit has, and nothing moves into or out of a withdrawn location.
		sc.Run(func(i int, _ *ScenarioTick, r Result) {
			sum := map[string]float64{}
			gone := map[string]bool{}
			for _, l := range r.State.Withdrawn {
				gone[l] = true
			}
			for _, m := range r.State.Moves {
				if !(m.Fraction > 0 && m.Fraction <= 1+1e-9) || m.From == m.To {
					t.Fatalf("tick %d: bad move %v", i, m)
				}
				sum[m.From+"\x00"+m.Plan.String()] += m.Fraction
				from, _, _ := strings.Cut(m.From, "/")
				to, _, _ := strings.Cut(m.To, "/")
				if gone[from] || gone[to] {
					t.Fatalf("tick %d: move %v touches a withdrawn location", i, m)
				}
			}
			for k, v := range sum {
				if v > 1+1e-6 {
					t.Fatalf("tick %d: %q moves %v of its load", i, k, v)
				}
			}
		})
	})
}
