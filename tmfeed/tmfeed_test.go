package tmfeed

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/ingest/dcload"
	"github.com/outagewatch/outagewatch/ingest/linefile"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

func topology(t *testing.T) *trafficmanager.Scenario {
	sc, err := trafficmanager.LoadScenario("../trafficmanager/testdata/sections-and-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// The scenario written as dcload reports (one per unit and five-minute
// window) plans exactly what the scenario expects, tick by tick.
func TestReportsGiveTheScenarioPlan(t *testing.T) {
	sc := topology(t)
	f := New(sc)
	dec := dcload.NewDecoder()
	var ticks []*Tick
	file, err := os.Open("../trafficmanager/testdata/sections-and-loss.dcload.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	err = linefile.Scan(file, 1<<16, func(n int64, line []byte) error {
		l, err := dec.Parse(line)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		tk, err := f.Add(l)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if tk != nil {
			ticks = append(ticks, tk)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ticks = append(ticks, f.Flush())
	if len(ticks) != len(sc.Ticks) {
		t.Fatalf("%d ticks, want %d", len(ticks), len(sc.Ticks))
	}
	if ticks[0].At != time.Date(2025, 4, 28, 10, 5, 0, 0, time.UTC) {
		t.Fatalf("first tick at %v", ticks[0].At)
	}
	var st trafficmanager.State
	for i, tk := range ticks {
		r := trafficmanager.Tick(tk.Input, st)
		if d := sc.Ticks[i].Mismatch(r); d != "" {
			t.Errorf("tick %d (%s):\n%s", i, sc.Ticks[i].Name, d)
		}
		st = r.State
	}
}

func TestBadReports(t *testing.T) {
	f := New(topology(t))
	at := time.Date(2025, 4, 28, 10, 7, 0, 0, time.UTC).UnixNano()
	nan := math.NaN()
	l := dcload.Load{Time: at, DC: "IAD.s1", CPUUtil: nan, CPUms: nan, SLIp95ms: nan, PlanCPUms: [dcload.NumPlans]float64{nan, nan, nan, nan}}
	if _, err := f.Add(l); err != nil {
		t.Fatal(err)
	}
	bad := l
	bad.DC = "SFO"
	if _, err := f.Add(bad); err == nil || !strings.Contains(err.Error(), `dc "SFO" is not in the topology`) {
		t.Fatalf("unknown dc: %v", err)
	}
	late := l
	late.Time -= int64(10 * time.Minute)
	if _, err := f.Add(late); err == nil || !strings.Contains(err.Error(), "older than the open window") {
		t.Fatalf("late report: %v", err)
	}
	// A report with nothing but the time keeps the topology's values.
	tk := f.Flush()
	if u := tk.Input.Units[2]; u.ID() != "IAD/s1" || u.Capacity != 1000 || u.Load[trafficmanager.Free] != 200 {
		t.Fatalf("unit %+v", u)
	}
}

// A week of ATL reports whose p95 latency crosses 20 ms at 80 % CPU: the
// feed learns ATL's maximum from them and hands it to the planner.
func TestLearntFromReports(t *testing.T) {
	f := New(topology(t))
	f.Learn = &trafficmanager.LearnConfig{}
	r := rand.New(rand.NewPCG(9, 9))
	t0 := time.Date(2025, 4, 21, 0, 0, 0, 0, time.UTC)
	nan := math.NaN()
	var last *Tick
	for i := range 2016 {
		cpu := 0.2 + 0.75*r.Float64()
		sli := 5 + 23.4375*cpu*cpu + 0.5*r.NormFloat64()
		if i%13 == 0 {
			sli += 60
		}
		l := dcload.Load{Time: t0.Add(time.Duration(i) * 5 * time.Minute).UnixNano(), DC: "ATL", CPUUtil: cpu, CPUms: cpu * 2000, SLIp95ms: sli,
			PlanCPUms: [dcload.NumPlans]float64{nan, nan, nan, nan}}
		tk, err := f.Add(l)
		if err != nil {
			t.Fatal(err)
		}
		if tk != nil {
			last = tk
		}
	}
	var atl trafficmanager.Unit
	for _, u := range last.Input.Units {
		if u.ID() == "ATL" {
			atl = u
		}
	}
	if atl.Learnt == nil || !atl.Learnt.OK || math.Abs(atl.Learnt.Max-0.80) > 0.01 {
		t.Fatalf("ATL learnt %+v", atl.Learnt)
	}
	if math.Abs(atl.Capacity-2000) > 1e-6 {
		t.Fatalf("ATL capacity %v", atl.Capacity)
	}
	// Units without history report a poor fit and keep the static max.
	if l := f.Learnt()["ORD"]; l.OK || !strings.Contains(l.Reason, "0 samples") {
		t.Fatalf("ORD learnt %+v", l)
	}
}
