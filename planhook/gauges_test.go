package planhook

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outagewatch/outagewatch/trafficmanager"
)

func scenarioInputs(t *testing.T, name string) []trafficmanager.Input {
	sc, err := trafficmanager.LoadScenario("../trafficmanager/testdata/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, ins := sc.Inputs()
	return ins
}

// The gauges say what the plan notes say: a stale unit, a target scaled
// to a learnt maximum, a paced step waiting.
func TestGaugesFollowNotes(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	d := &Driver{Mode: "dry-run", Metrics: NewMetrics(reg)}
	ctx := context.Background()
	for i, in := range scenarioInputs(t, "stale")[:2] {
		if _, err := d.Tick(ctx, time.Unix(int64(i), 0), in); err != nil {
			t.Fatal(err)
		}
	}
	// Tick 1 of the stale scenario: C's report is 15 minutes old.
	for unit, want := range map[string]float64{"A": 0, "B": 0, "C": 1, "D": 0} {
		if v := testutil.ToFloat64(d.Metrics.stale.WithLabelValues(unit)); v != want {
			t.Errorf("stale %s = %v, want %v", unit, v, want)
		}
	}

	reg = prometheus.NewPedanticRegistry()
	d = &Driver{Mode: "dry-run", Metrics: NewMetrics(reg)}
	for i, in := range scenarioInputs(t, "thresholds") {
		if _, err := d.Tick(ctx, time.Unix(int64(i), 0), in); err != nil {
			t.Fatal(err)
		}
	}
	// SYD's learnt 45 % scales its target from 80 % to 40 %; AKL keeps
	// its own 70 %.
	if v := testutil.ToFloat64(d.Metrics.reconciled.WithLabelValues("SYD")); v != 1 {
		t.Errorf("SYD reconciled %v", v)
	}
	if v := testutil.ToFloat64(d.Metrics.target.WithLabelValues("SYD")); v < 0.4-1e-9 || v > 0.4+1e-9 {
		t.Errorf("SYD target %v", v)
	}
	if v := testutil.ToFloat64(d.Metrics.target.WithLabelValues("AKL")); v != 0.7 {
		t.Errorf("AKL target %v", v)
	}
	if v := testutil.ToFloat64(d.Metrics.maxThreshold.WithLabelValues("SYD", "learnt")); v != 0.45 {
		t.Errorf("SYD max %v", v)
	}

	reg = prometheus.NewPedanticRegistry()
	d = &Driver{Mode: "dry-run", Metrics: NewMetrics(reg)}
	var waits []float64
	for i, in := range scenarioInputs(t, "pace")[:4] {
		if _, err := d.Tick(ctx, time.Unix(int64(i), 0), in); err != nil {
			t.Fatal(err)
		}
		waits = append(waits, testutil.ToFloat64(d.Metrics.waiting.WithLabelValues("A")))
	}
	// Tick 2 is the one whose reports lag.
	if !slices.Equal(waits, []float64{0, 0, 1, 0}) {
		t.Errorf("A waiting per tick %v", waits)
	}
}

// The driver feeds its predictor: CHC's withdrawal is published at tick
// 1, and tick 2's reports show its 400 landed half on AKL and half on WLG,
// not 80/20 as the topology says. With one observation enough, the learnt
// row replaces the topology's and the plan says so; AKL then expects 200
// of CHC's traffic, not 320: at 680 with its moves away it has room for
// 20 below its acceptable 70 %, and takes 20 home from SYD, the farthest.
func TestDriverLearnsFailover(t *testing.T) {
	ins := scenarioInputs(t, "cascade")
	served := func(in trafficmanager.Input, v map[string]float64) trafficmanager.Input {
		in.Units = append([]trafficmanager.Unit(nil), in.Units...)
		for i := range in.Units {
			u := &in.Units[i]
			u.Served, u.ServedKnown = v[u.ID()], true
		}
		return in
	}
	d := &Driver{Mode: "dry-run", Predictor: &trafficmanager.Predictor{After: 1}, Metrics: NewMetrics(prometheus.NewPedanticRegistry())}
	ctx := context.Background()
	steps := []trafficmanager.Input{
		served(ins[0], map[string]float64{"CHC": 400, "AKL": 600, "WLG": 600, "SYD": 2000}),
		served(ins[1], map[string]float64{"CHC": 400, "AKL": 600, "WLG": 600, "SYD": 2000}),
		served(ins[1], map[string]float64{"CHC": 0, "AKL": 800, "WLG": 800, "SYD": 2000}),
	}
	var last *Message
	for i, in := range steps {
		m, err := d.Tick(ctx, time.Unix(int64(i), 0), in)
		if err != nil {
			t.Fatal(err)
		}
		if m != nil {
			last = m
		}
	}
	if last == nil || last.Seq != 2 {
		t.Fatalf("last message %+v", last)
	}
	if !slices.Contains(last.Notes, "CHC: failover learnt from 1 withdrawals replaces the topology's: AKL 50%, WLG 50%") {
		t.Fatalf("notes %q", last.Notes)
	}
	if got := changeStrings(last.Changes); got != "revert Free AKL→SYD 25%→20%" {
		t.Fatalf("changes %q", got)
	}
	if v := testutil.ToFloat64(d.Metrics.util.WithLabelValues("AKL")); v != 0.7 {
		t.Fatalf("AKL planned %v", v)
	}
}
