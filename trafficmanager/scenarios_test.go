package trafficmanager

import (
	"math"
	"strings"
	"testing"
)

// Each scenario file is a table, tick by tick, of exact moves, changes,
// withdrawals and notes, worked out by hand in its comments.
func TestScenarios(t *testing.T) {
	for _, f := range []string{"thresholds", "cascade", "stale", "pace", "errors"} {
		t.Run(f, func(t *testing.T) {
			sc, err := LoadScenario("testdata/" + f + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			sc.Run(func(i int, tk *ScenarioTick, r Result) {
				if tk.Moves == nil || tk.Changes == nil {
					t.Fatalf("tick %d (%s): expectations missing", i, tk.Name)
				}
				if d := tk.Mismatch(r); d != "" {
					t.Errorf("tick %d (%s, line %d):\n%s", i, tk.Name, tk.Line, d)
				}
			})
		})
	}
}

func cascadeInputs(t *testing.T) []Input {
	sc, err := LoadScenario("testdata/cascade.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, ins := sc.Inputs()
	return ins
}

// With one location withdrawn at most, AKL's loss keeps its routes: the
// load balancer moves all its own 600 away instead (20 to WLG, at 680 with
// CHC's share, the rest to SYD), and the 320 of CHC's traffic that still
// fails over onto it cannot move, which the plan says.
func TestWithdrawalLimit(t *testing.T) {
	ins := cascadeInputs(t)
	var st State
	var r Result
	for i := range 3 {
		ins[i].MaxWithdrawn = 1
		r = Tick(ins[i], st)
		st = r.State
	}
	if got := strings.Join(r.State.Withdrawn, " "); got != "CHC" || strings.Join(r.HeldBack, " ") != "AKL" {
		t.Fatalf("withdrawn %q held back %v", got, r.HeldBack)
	}
	want := []string{
		"AKL: not withdrawn (no capacity): 1 locations withdrawn already, the most at once",
		"AKL: 320 ms/s above its maximum cannot move (failover inflow or held moves)",
	}
	if strings.Join(r.Notes, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notes %q", r.Notes)
	}
	if got := movesString(r.State.Moves); got != "Pro 100% AKL→SYD 200\nFree 95% AKL→SYD 380\nFree 5% AKL→WLG 20" {
		t.Fatalf("moves\n%s", got)
	}
}

// A failover row that leads back to where it started, or into a withdrawn
// location with no row, loses that share and says so.
func TestLandingLoops(t *testing.T) {
	fo := map[string]map[string]float64{
		"A": {"B": 0.5, "C": 0.5},
		"B": {"A": 0.4, "D": 0.6},
		"C": {"E": 1},
	}
	land, paths, lost := Landing(fo, map[string]bool{"A": true, "B": true, "C": true, "E": true}, "A")
	if len(land) != 1 || math.Abs(land["D"]-0.3) > 1e-12 {
		t.Fatalf("land %v", land)
	}
	if strings.Join(paths, "; ") != "30% of its traffic lands on D through B (withdrawn)" {
		t.Fatalf("paths %q", paths)
	}
	if strings.Join(lost, "; ") != "20% of its traffic comes back to A through B; 50% of its traffic is lost: E is withdrawn too and has no failover of its own" {
		t.Fatalf("lost %q", lost)
	}
}

func TestParseThresholdErrors(t *testing.T) {
	head := "thresholds: {max: 0.9, target: 0.8, acceptable: 0.7}\nunits:\n"
	for _, c := range []struct{ doc, want string }{
		{head + "  A:\n    capacity: 10\n    thresholds: {target: 0.95}\n", "s.yaml:5: unit A: thresholds acceptable 0.7, target 0.95, max 0.9"},
		{head + "  A:\n    capacity: 10\n    thresholds:\n      maxx: 0.5\n", `s.yaml:6: unknown key "maxx" in thresholds: did you mean "max"?`},
		{"thresholds: {max: 0.9, target: 0.8, acceptable: 0.7, slo: -1}\nunits:\n  A: {capacity: 1}\n", "s.yaml:1: thresholds slo -1"},
		{head + "  A: {capacity: 10}\npace: 1.5\n", "s.yaml:4: pace 1.5"},
		{head + "  A: {capacity: 10}\nmax_report_age: soon\n", "s.yaml:4: want a duration such as 30s, 5m or 168h, not soon"},
		{head + "  A: {capacity: 10}\nticks:\n  - errors: {A: 2}\n", "s.yaml:5: tick 0: errors A 2"},
		{head + "  A: {capacity: 10}\nticks:\n  - age: {B: 1m}\n", "s.yaml:5: tick 0: age B 1m0s"},
	} {
		_, err := ParseScenario("s.yaml", []byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\nerror %v\nwant  %q", c.doc, err, c.want)
		}
	}
	// What a unit leaves out comes from the global block.
	sc, err := ParseScenario("s.yaml", []byte(head+"  A:\n    capacity: 10\n    thresholds: {max: 0.95, slo: 30}\n"))
	if err != nil {
		t.Fatal(err)
	}
	start, _ := sc.Inputs()
	if got := start.Units[0].Thresholds; got != (Thresholds{Max: 0.95, Target: 0.8, Acceptable: 0.7, SLO: 30}) {
		t.Fatalf("thresholds %+v", got)
	}
}

func errorInputs(t *testing.T) []Input {
	sc, err := LoadScenario("testdata/errors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, ins := sc.Inputs()
	return ins
}

// The error trigger is under the same guardrails as any withdrawal: with
// IAD drained and one withdrawal allowed, EWR keeps its routes and the
// plan says why; and with ORD too small to take EWR's 75 %, EWR is not
// withdrawn onto it.
func TestErrorWithdrawalGuardrails(t *testing.T) {
	ins := errorInputs(t)
	var st State
	var r Result
	for i := range 4 {
		if i >= 2 {
			ins[i].Units[1].Capacity = 0 // IAD
		}
		r = Tick(ins[i], st)
		st = r.State
	}
	if strings.Join(r.State.Withdrawn, " ") != "IAD" || strings.Join(r.HeldBack, " ") != "EWR" ||
		!contains(r.Notes, "EWR: not withdrawn (error rate 25% above 5% for 2 ticks): 1 locations withdrawn already, the most at once") {
		t.Fatalf("withdrawn %v held back %v notes %q", r.State.Withdrawn, r.HeldBack, r.Notes)
	}

	ins = errorInputs(t)
	st = State{}
	for i := range 4 {
		ins[i].Units[2].Capacity = 1200 // ORD: 800 + 450 would not fit
		r = Tick(ins[i], st)
		st = r.State
	}
	if len(r.State.Withdrawn) != 0 || !contains(r.Notes, "EWR: not withdrawn (error rate 25% above 5% for 2 ticks): its traffic would push ORD past its capacity") {
		t.Fatalf("withdrawn %v notes %q", r.State.Withdrawn, r.Notes)
	}
}

// A tick without a withdrawn: expectation does not check withdrawals.
func TestWithdrawnUnchecked(t *testing.T) {
	sc, err := ParseScenario("s.yaml", []byte("thresholds: {max: 0.9, target: 0.8, acceptable: 0.7}\nunits:\n  A: {capacity: 10}\n  B: {capacity: 10}\nticks:\n  - capacity: {A: 0}\n    changes: [withdraw A]\n"))
	if err != nil {
		t.Fatal(err)
	}
	sc.Run(func(i int, tk *ScenarioTick, r Result) {
		if d := tk.Mismatch(r); d != "" || strings.Join(r.State.Withdrawn, " ") != "A" {
			t.Fatalf("mismatch %q withdrawn %v", d, r.State.Withdrawn)
		}
	})
}

// Paced steps follow the order the whole plan made its moves, kept in
// State.Target, not the plan's sorted order: with the worked example's
// destinations named so that the nearest sorts last (Z 100 ms, Y 110, X
// 120), the first step still fills Z, and the second carries on into Y.
func TestPacedOrderAcrossTicks(t *testing.T) {
	in := workedInput()
	for i, n := range []string{"A", "Z", "Y", "X"} {
		in.Units[i].Location = n
	}
	in.Latency = map[string]map[string]float64{"A": {"Z": 100, "Y": 110, "X": 120}}
	in.Pace = 0.2
	r := Tick(in, State{})
	if got := movesString(r.State.Moves); got != "Business 50% A→Z 100\nPro 30% A→Y 120\nPro 50% A→Z 200" {
		t.Fatalf("step 1:\n%s", got)
	}
	r = Tick(in, r.State)
	if got := movesString(r.State.Moves); got != "Business 50% A→Z 100\nPro 50% A→Y 200\nPro 50% A→Z 200\nFree 48% A→X 240\nFree 20% A→Y 100" {
		t.Fatalf("step 2:\n%s", got)
	}
}
