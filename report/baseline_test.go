package report

import (
	"math"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
)

// replayFixture replays a bundled fixture into a recorder and returns the
// alerts and outage events, in emission order.
func replayFixture(t *testing.T, name string) (*Recorder, []alerting.Event) {
	t.Helper()
	b, ok := fixtures.Read(name)
	if !ok {
		t.Fatalf("no fixture %s", name)
	}
	spec, err := scenario.Parse(name, b)
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder()
	var events []alerting.Event
	keep := func(ev *alerting.Event) { events = append(events, *ev) }
	p, err := pipeline.New(pipeline.Config{Map: spec.Map(), LocalASNs: spec.LocalASNs, Tap: rec.Bucket, Events: keep}, keep)
	if err != nil {
		t.Fatal(err)
	}
	if err := replay.Run(p, srcs, nil); err != nil {
		t.Fatal(err)
	}
	return rec, events
}

func seriesEvents(evs []alerting.Event, signal, entity string) []alerting.Event {
	var out []alerting.Event
	for _, ev := range evs {
		if !ev.IsEvent() && ev.Signal == signal && ev.Entity == entity {
			out = append(out, ev)
		}
	}
	return out
}

// Uganda's routed space: the detector held 243.8 /24s (the median of the
// hours before onset) through the five-day shutdown, and the chart draws
// that, not a median of previous days that sinks into the shutdown. The
// country's withdrawals peaked at 315 in one bucket, and the chart, which
// folds buckets four by four, draws 315.
func TestChartsTellTheTruthOnUganda(t *testing.T) {
	rec, events := replayFixture(t, "uganda-2021-01-13")

	v4 := seriesEvents(events, "bgp_announced_v4", "country:UG")
	if len(v4) != 2 || v4[0].Baseline != v4[1].Baseline || v4[1].End == nil {
		t.Fatalf("routed space alerts %+v", v4)
	}
	held := v4[0].Baseline
	c := rec.Chart("bgp_announced_v4{country:UG}", v4)
	if c.Step <= 5*time.Minute {
		t.Fatalf("chart step %v: the window should need folding", c.Step)
	}
	base := c.Series[1]
	if want := "baseline: detector's (median of the hours before onset), else median, same time, previous weeks or days"; base.Name != want {
		t.Errorf("baseline legend %q, want %q", base.Name, want)
	}
	in := 0
	for i, v := range base.Values {
		from := c.Start.Add(time.Duration(i) * c.Step)
		if from.Before(v4[0].Start) || !from.Add(c.Step).Before(*v4[1].End) {
			continue
		}
		in++
		if math.Abs(v-held) > 1e-3 { // the notification rounds to 0.001
			t.Fatalf("baseline at %v is %g, want the detector's %g", from, v, held)
		}
	}
	// 13 Jan 13:30 to 18 Jan 09:50 is 4 d 20 h 20 min: 349 points of 20
	// min, less the last, which ends at the resolve.
	if in != 348 {
		t.Errorf("%d points inside the alert, want 348", in)
	}

	wd := seriesEvents(events, "bgp_withdrawals", "country:UG")
	c = rec.Chart("bgp_withdrawals{country:UG}", wd)
	peak := math.Inf(-1)
	for _, v := range c.Series[0].Values {
		if !math.IsNaN(v) {
			peak = max(peak, v)
		}
	}
	band := math.Inf(-1)
	for _, v := range c.Series[0].Hi {
		if !math.IsNaN(v) {
			band = max(band, v)
		}
	}
	if c.Step <= 5*time.Minute || peak != 315 || band != 315 {
		t.Errorf("withdrawals drawn at most %g (band %g) in points of %v, want the bucket's 315", peak, band, c.Step)
	}
}
