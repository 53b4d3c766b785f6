package trafficmanager

import "testing"

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
