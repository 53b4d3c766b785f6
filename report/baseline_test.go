package report

import (
	"math"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart"
	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/obs"
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

// A drop that lasts two days does not become its own baseline: the day
// after, the median of the same time on previous days leaves the alert's
// buckets out (1000, not the 100 two of the three days had), and inside
// the alert a time-of-day baseline between notifications is the same
// median of the days before it.
func TestAlertBucketsNeverFeedTheBaseline(t *testing.T) {
	const w = int64(300e9)
	hundred := 100.0
	t0 := time.Date(2021, 1, 10, 0, 0, 0, 0, time.UTC)
	agg := aggregate.New(aggregate.Config{})
	rec := NewRecorder()
	onset, end := t0.Add(24*time.Hour), t0.Add(72*time.Hour)
	for i := int64(0); i < 4*288; i++ {
		ts := t0.UnixNano() + i*w
		v := 1000.0
		if ts >= onset.UnixNano() && ts < end.UnixNano() {
			v = 100
		}
		agg.Observe(&obs.Observation{Time: ts, Signal: obs.TrafficBytes, Entity: "country:UG", Value: v})
		agg.Advance(ts+w, rec.Bucket)
	}
	evs := []alerting.Event{
		{ID: "a", Status: alerting.Firing, Detector: "traffic_drop", Signal: "traffic_bytes", Entity: "country:UG",
			Start: onset, At: onset.Add(10 * time.Minute), Observed: 100, Baseline: 1000, ChangePct: -90, BaselineMethod: "similar_days",
			// The detector's own baseline of the onset bucket.
			Evidence: []alerting.Point{{Time: onset, Value: &hundred, Baseline: 990}}},
		{ID: "a", Status: alerting.Resolved, Detector: "traffic_drop", Signal: "traffic_bytes", Entity: "country:UG",
			Start: onset, End: &end, At: end.Add(30 * time.Minute), Observed: 1000, Baseline: 1000, BaselineMethod: "similar_days"},
	}
	rec.mu.RLock()
	tr := rec.track("traffic_bytes{country:UG}", evs, t0, t0.Add(4*24*time.Hour))
	rec.mu.RUnlock()
	bucket := func(at time.Time) int { return int(at.Sub(tr.from) / tr.step) }
	unit := 8 / 300.0 // bytes a 5-minute bucket to bit/s
	for _, c := range []struct {
		at   time.Time
		want float64
	}{
		{t0.Add(3*24*time.Hour + 12*time.Hour), 1000}, // the day after: day 1 alone, days 2 and 3 left out
		{t0.Add(2*24*time.Hour + 12*time.Hour), 1000}, // inside the alert: day 1, not day 2
		{t0.Add(12 * time.Hour), math.NaN()},          // day 1: no history
		{onset, 990},                                  // the bucket the detector reported
	} {
		got := tr.baseline[bucket(c.at)] / unit
		if !(math.Abs(got-c.want) < 1e-9 || math.IsNaN(c.want) && math.IsNaN(got)) {
			t.Errorf("baseline at %v: %g, want %g", c.at, got, c.want)
		}
	}
	if want := "baseline: detector's (same time on similar previous days, where reported), else median, same time, previous days"; tr.legend != want {
		t.Errorf("legend %q, want %q", tr.legend, want)
	}
	if tr.keep != chart.KeepMin {
		t.Errorf("a drop keeps %v, want the lowest bucket (KeepMin)", tr.keep)
	}

	// The overlay draws it as a share of that baseline: a tenth inside
	// the alert, whole the day after; on a per cent axis, the alert shaded.
	ov := rec.Overlay("every signal of Uganda", []string{"traffic_bytes{country:UG}"},
		map[string][]alerting.Event{"traffic_bytes{country:UG}": evs}, t0, t0.Add(4*24*time.Hour))
	at := func(x time.Time) float64 { return ov.Series[0].Values[int(x.Sub(ov.Start)/ov.Step)] }
	if ov.Unit != chart.Percent || len(ov.Series) != 1 || ov.Series[0].Name != "traffic" || len(ov.Spans) != 1 ||
		math.Abs(at(t0.Add(60*time.Hour))-0.1) > 1e-9 || math.Abs(at(t0.Add(84*time.Hour))-1) > 1e-9 {
		t.Errorf("overlay %v %q, %d spans: %g inside the alert, %g the day after; want 0.1 and 1",
			ov.Unit, ov.Series[0].Name, len(ov.Spans), at(t0.Add(60*time.Hour)), at(t0.Add(84*time.Hour)))
	}
}
