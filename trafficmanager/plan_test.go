package trafficmanager

import (
	"math"
	"strings"
	"testing"
)

func TestToMoveAndToAccept(t *testing.T) {
	for _, c := range []struct {
		cpu, util, target, want float64
	}{
		{18000, 0.90, 0.85, 1000}, // the worked example: 90 % → 85 % on 18,000 ms/s
		{18000, 0.85, 0.85, 0},
		{10000, 0.50, 0.85, 0},
		{2000, 1.00, 0.50, 1000},
	} {
		if got := ToMove(c.cpu, c.util, c.target); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("ToMove(%v, %v, %v) = %v, want %v", c.cpu, c.util, c.target, got, c.want)
		}
	}
	if got := ToAccept(1000, 400, 0.7); math.Abs(got-300) > 1e-9 {
		t.Errorf("ToAccept(1000, 400, 0.7) = %v, want 300", got)
	}
	if got := ToAccept(1000, 800, 0.7); got != 0 {
		t.Errorf("ToAccept over the acceptable level = %v, want 0", got)
	}
}

// The worked example: 1,000 ms/s to move from A with Free 500, Pro 400,
// Business 200, Enterprise 1,000; B, C, D accept 300, 300, 1,000 at 100,
// 110 and 120 ms.
func TestSelectAssignWorkedExample(t *testing.T) {
	portions := Select([numPlans]float64{500, 400, 200, 1000}, 1000)
	want := []Portion{{Free, 500}, {Pro, 400}, {Business, 100}}
	if len(portions) != len(want) {
		t.Fatalf("Select = %v, want %v", portions, want)
	}
	for i := range want {
		if portions[i] != want[i] {
			t.Fatalf("Select = %v, want %v", portions, want)
		}
	}
	as, rest := Assign(portions, []Destination{{"B", 300}, {"C", 300}, {"D", 1000}})
	wantA := []Assignment{{Business, "B", 100}, {Pro, "B", 200}, {Pro, "C", 200}, {Free, "C", 100}, {Free, "D", 400}}
	if rest != 0 || len(as) != len(wantA) {
		t.Fatalf("Assign = %v rest %v, want %v", as, rest, wantA)
	}
	for i := range wantA {
		if as[i] != wantA[i] {
			t.Fatalf("Assign = %v, want %v", as, wantA)
		}
	}
}

func workedInput() Input {
	th := func(max, target, acc float64) Thresholds {
		return Thresholds{Max: max, Target: target, Acceptable: acc}
	}
	return Input{
		Units: []Unit{
			// 2,100 ms/s on 2,200: 95.5 % > 90 %; down to 50 % is 1,000 ms/s.
			{Location: "A", Capacity: 2200, Load: [numPlans]float64{500, 400, 200, 1000}, Thresholds: th(0.9, 0.5, 0.4)},
			{Location: "B", Capacity: 1000, Load: [numPlans]float64{400, 0, 0, 0}, Thresholds: th(0.9, 0.8, 0.7)},
			{Location: "C", Capacity: 1000, Load: [numPlans]float64{0, 400, 0, 0}, Thresholds: th(0.9, 0.8, 0.7)},
			{Location: "D", Capacity: 2000, Thresholds: th(0.9, 0.8, 0.5)},
		},
		Latency: map[string]map[string]float64{"A": {"B": 100, "C": 110, "D": 120}},
	}
}

func movesString(ms []Move) string {
	var b []string
	for _, m := range ms {
		b = append(b, m.String())
	}
	return strings.Join(b, "\n")
}

func TestTickWorkedExample(t *testing.T) {
	r := Tick(workedInput(), State{})
	want := strings.Join([]string{
		"Business 50%% A→B 100",
		"Pro 50%% A→B 200",
		"Pro 50%% A→C 200",
		"Free 20%% A→C 100",
		"Free 80%% A→D 400",
	}, "\n")
	want = strings.ReplaceAll(want, "%%", "%")
	if got := movesString(r.State.Moves); got != want {
		t.Fatalf("moves:\n%s\nwant:\n%s", got, want)
	}
	if len(r.Changes) != 5 || len(r.Notes) != 0 {
		t.Fatalf("changes %v notes %v", r.Changes, r.Notes)
	}
	// A at its target, B, C and D at their acceptable levels.
	for id, u := range map[string]float64{"A": 0.5, "B": 0.7, "C": 0.7, "D": 0.2} {
		if math.Abs(r.Util[id]-u) > 1e-9 {
			t.Errorf("util %s = %v, want %v", id, r.Util[id], u)
		}
	}
	// The same input again: the plan holds and nothing is emitted.
	r2 := Tick(workedInput(), r.State)
	if len(r2.Changes) != 0 || movesString(r2.State.Moves) != want {
		t.Fatalf("second tick changed: %v", r2.Changes)
	}
}

// A destination that loses capacity while it holds others' load sends
// that load back first, the cheapest plan first: D (400 ms/s of A's Free on
// 2,000) drops to 400 of capacity, 100 %; down to its 80 % target is 80
// ms/s, which goes back to A (now 1,180 on 2,200, under its maximum).
func TestDestinationBouncesLoad(t *testing.T) {
	in := workedInput()
	st := Tick(in, State{}).State
	in.Units[3].Capacity = 400
	r := Tick(in, st)
	var changes []string
	for _, c := range r.Changes {
		changes = append(changes, c.String())
	}
	if got := strings.Join(changes, "; "); got != "revert Free A→D 80%→64%" || len(r.Notes) != 0 {
		t.Fatalf("changes %q notes %v", got, r.Notes)
	}
	if math.Abs(r.Util["D"]-0.8) > 1e-9 || math.Abs(r.Util["A"]-1180.0/2200) > 1e-9 {
		t.Fatalf("util %v", r.Util)
	}
	// D down to 100: it keeps 80 (its target) and sends 240 more back. A
	// has 1,420 on 2,200 (65 %): under its maximum, so it stays.
	in.Units[3].Capacity = 100
	r = Tick(in, r.State)
	changes = nil
	for _, c := range r.Changes {
		changes = append(changes, c.String())
	}
	if got := strings.Join(changes, "; "); got != "revert Free A→D 64%→16%" || len(r.Notes) != 0 {
		t.Fatalf("changes %q notes %v", got, r.Notes)
	}
}

// A source with nowhere to go says so in the notes.
func TestNoDestinationNote(t *testing.T) {
	in := workedInput()
	in.Units[3].Load[Free] = 1000 // D at its acceptable level: no room
	r := Tick(in, State{})
	if len(r.Notes) != 1 || r.Notes[0] != "A: 400 ms/s found no destination" {
		t.Fatalf("notes %q moves %v", r.Notes, r.State.Moves)
	}
}
