package trafficmanager

import (
	"math"
	"testing"
)

func TestLearnFailover(t *testing.T) {
	m := LearnFailover([]Withdrawal{
		// EWR's 600 landed 540 on ORD, 60 on IAD; ATL moved by noise only.
		{Location: "EWR", Load: 600, Before: map[string]float64{"ORD": 400, "IAD": 1500, "ATL": 600}, After: map[string]float64{"ORD": 940, "IAD": 1560, "ATL": 590}},
		// The second time ORD took 480 of 600 and IAD 120.
		{Location: "EWR", Load: 600, Before: map[string]float64{"ORD": 400, "IAD": 1500}, After: map[string]float64{"ORD": 880, "IAD": 1620}},
		// Gains beyond the withdrawn load (other traffic growing) are
		// scaled to one: 300 and 100 of 200 become 0.75 and 0.25.
		{Location: "ORD", Load: 200, Before: map[string]float64{"ATL": 0, "IAD": 0}, After: map[string]float64{"ATL": 300, "IAD": 100}},
		{Location: "SFO", Load: 0},
	})
	want := map[string]map[string]float64{
		"EWR": {"ORD": 0.85, "IAD": 0.15},
		"ORD": {"ATL": 0.75, "IAD": 0.25},
	}
	if len(m) != len(want) {
		t.Fatalf("matrix %v", m)
	}
	for from, row := range want {
		if len(m[from]) != len(row) {
			t.Fatalf("%s: %v, want %v", from, m[from], row)
		}
		for to, v := range row {
			if math.Abs(m[from][to]-v) > 1e-12 {
				t.Errorf("%s→%s = %v, want %v", from, to, m[from][to], v)
			}
		}
	}
}
