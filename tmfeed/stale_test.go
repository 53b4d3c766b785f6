package tmfeed

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/ingest/dcload"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

func report(t *testing.T, at time.Time, dc string, cpuMs, errShare float64) dcload.Load {
	t.Helper()
	js := fmt.Sprintf(`{"time": %q, "dc": %q, "cpu_ms_per_s": %v`, at.Format(time.RFC3339), dc, cpuMs)
	if !math.IsNaN(errShare) {
		js += fmt.Sprintf(`, "edge_error_share": %v`, errShare)
	}
	l, err := dcload.NewDecoder().Parse([]byte(js + "}"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// C reports once, at 10:01, then falls silent; the others report every
// window. With a 10-minute limit, C is 4 and 9 minutes old at the ends of
// the first two windows and 14 at the third's: stale from then on, and
// the plan says so. Every report's CPU time is the measured load.
func TestSilentUnitGoesStale(t *testing.T) {
	sc, err := trafficmanager.LoadScenario("../trafficmanager/testdata/stale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := New(sc)
	t0 := time.Date(2025, 4, 28, 10, 1, 0, 0, time.UTC)
	var ticks []*Tick
	for w := range 4 {
		at := t0.Add(time.Duration(w) * 5 * time.Minute)
		for _, dc := range []string{"A", "B", "C", "D"} {
			if dc == "C" && w > 0 {
				continue
			}
			tk, err := f.Add(report(t, at, dc, 100, math.NaN()))
			if err != nil {
				t.Fatal(err)
			}
			if tk != nil {
				ticks = append(ticks, tk)
			}
		}
	}
	ticks = append(ticks, f.Flush())
	var st trafficmanager.State
	var stale []string
	for _, tk := range ticks {
		r := trafficmanager.Tick(tk.Input, st)
		st = r.State
		stale = append(stale, strings.Join(r.Stale, ","))
	}
	if got := strings.Join(stale, " | "); got != " |  | C | C" {
		t.Fatalf("stale per tick %q", got)
	}
	for _, u := range ticks[3].Input.Units {
		if want := map[string]time.Duration{"A": 4 * time.Minute, "C": 19 * time.Minute}[u.ID()]; want != 0 && u.ReportAge != want {
			t.Errorf("%s age %v, want %v", u.ID(), u.ReportAge, want)
		}
		if u.ServedKnown != (u.ID() != "C") {
			t.Errorf("%s served known %v", u.ID(), u.ServedKnown)
		}
	}
}

// The error trigger from reports: EWR's edge error share above 5 % for
// two windows withdraws it; its reports back at 1 % announce it.
func TestErrorShareFromReports(t *testing.T) {
	sc, err := trafficmanager.LoadScenario("../trafficmanager/testdata/errors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := New(sc)
	t0 := time.Date(2025, 4, 28, 10, 1, 0, 0, time.UTC)
	shares := []float64{0.2, 0.3, 0.3, 0.01}
	var ticks []*Tick
	for w, sh := range shares {
		at := t0.Add(time.Duration(w) * 5 * time.Minute)
		for _, dc := range []string{"EWR", "IAD", "ORD"} {
			e := math.NaN()
			if dc == "EWR" {
				e = sh
			}
			tk, err := f.Add(report(t, at, dc, 500, e))
			if err != nil {
				t.Fatal(err)
			}
			if tk != nil {
				ticks = append(ticks, tk)
			}
		}
	}
	ticks = append(ticks, f.Flush())
	var st trafficmanager.State
	var got []string
	for _, tk := range ticks {
		r := trafficmanager.Tick(tk.Input, st)
		st = r.State
		var cs []string
		for _, c := range r.Changes {
			cs = append(cs, c.String())
		}
		got = append(got, strings.Join(cs, ","))
	}
	if !slices.Equal(got, []string{"", "withdraw EWR", "", "announce EWR"}) {
		t.Fatalf("changes per tick %q", got)
	}
}
