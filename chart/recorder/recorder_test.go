package recorder

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/obs"
)

func TestChartOfAnAlertedSeries(t *testing.T) {
	const w = int64(300e9)
	t0 := time.Date(2021, 1, 13, 0, 0, 0, 0, time.UTC)
	agg := aggregate.New(aggregate.Config{})
	rec := New()
	// Two days of a steady series that drops to a tenth at 17:00 on day 1.
	onset := t0.Add(17 * time.Hour)
	for i := int64(0); i < 2*288; i++ {
		ts := t0.UnixNano() + i*w
		v := 1000.0
		if ts >= onset.UnixNano() && ts < onset.Add(5*time.Hour).UnixNano() {
			v = 100
		}
		agg.Observe(&obs.Observation{Time: ts, Signal: obs.TrafficBytes, Entity: "country:UG", Value: v})
		agg.Observe(&obs.Observation{Time: ts, Signal: obs.TrafficBytes, Entity: "country:KE", Value: v})
		agg.Advance(ts+w, rec.Bucket)
	}
	end := onset.Add(5 * time.Hour)
	events := []alerting.Event{
		{ID: "a", Status: alerting.Firing, Detector: "traffic_drop", Signal: "traffic_bytes", Entity: "country:UG",
			Start: onset, At: onset.Add(10 * time.Minute), ChangePct: -90},
		{ID: "a", Status: alerting.Resolved, Detector: "traffic_drop", Signal: "traffic_bytes", Entity: "country:UG",
			Start: onset, End: &end, At: end.Add(30 * time.Minute)},
	}
	// The chart spans a day before the alert to the end of the data, and
	// the drop shows: the path goes down to a tenth of the level.
	if rec.series["traffic_bytes{country:UG}"] == nil || len(rec.series["traffic_bytes{country:UG}"].values) != 2*288 {
		t.Fatalf("recorded %d buckets", len(rec.series["traffic_bytes{country:UG}"].values))
	}
	if v, ok := rec.get("traffic_bytes{country:UG}", onset.UnixNano()); !ok || v != 100 {
		t.Fatalf("recorded value at onset %v %v, want the observed 100", v, ok)
	}
	// The chart runs from a day before the alert (clipped to the data's
	// start, 00:00) to a day after the resolve event (22:30 on day 2): 559
	// buckets, averaged in pairs to 280 points of 10 minutes. On the second
	// day the baseline (the previous day, less than a week of history) is
	// 1000 bytes a bucket, and the shaded span ends at the resolve.
	c := rec.Chart("traffic_bytes{country:UG}", events)
	if !c.Start.Equal(t0) || len(c.Series[0].Values) != 280 || c.Step != 10*time.Minute {
		t.Fatalf("chart from %v, %d points of %v", c.Start, len(c.Series[0].Values), c.Step)
	}
	if got := c.Series[1].Values[(24+12)*6]; math.Abs(got-1000*8/300.0) > 1e-9 {
		t.Errorf("baseline on day 2 at 12:00 %g bit/s, want %g", got, 1000*8/300.0)
	}
	if got := c.Series[0].Values[17*6]; math.Abs(got-100*8/300.0) > 1e-9 {
		t.Errorf("observed at onset %g bit/s, want %g", got, 100*8/300.0)
	}
	if !math.IsNaN(c.Series[1].Values[0]) {
		t.Errorf("baseline on day 1 %g: no history yet, want no value", c.Series[1].Values[0])
	}
	if len(c.Spans) != 1 || !c.Spans[0].From.Equal(onset) || !c.Spans[0].To.Equal(end) {
		t.Errorf("spans %+v", c.Spans)
	}
	var png bytes.Buffer
	if err := rec.PNG(&png, events[0], events[1:]); err != nil || !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")) {
		t.Errorf("PNG: %v, %d bytes", err, png.Len())
	}
}

// A count per bucket that the chart's axis shows as a count (withdrawals)
// says its bucket in the legend; one shown as a rate (traffic in bit/s)
// and a level (announced space) do not.
func TestObservedLegendSaysItsBucket(t *testing.T) {
	const w = int64(300e9)
	t0 := time.Date(2021, 1, 13, 0, 0, 0, 0, time.UTC)
	agg := aggregate.New(aggregate.Config{})
	rec := New()
	for i := int64(0); i < 24; i++ {
		ts := t0.UnixNano() + i*w
		for _, sig := range []obs.Signal{obs.TrafficBytes, rib.Withdrawals, rib.AnnouncedV4} {
			agg.Observe(&obs.Observation{Time: ts, Signal: sig, Entity: "country:UG", Value: 10})
		}
		agg.Advance(ts+w, rec.Bucket)
	}
	for k, want := range map[string]string{
		"bgp_withdrawals{country:UG}":  "observed, per 5 min",
		"traffic_bytes{country:UG}":    "observed",
		"bgp_announced_v4{country:UG}": "observed",
	} {
		c := rec.ChartBetween(k, nil, t0, t0.Add(2*time.Hour))
		if c == nil {
			t.Errorf("%s: no chart", k)
			continue
		}
		if c.Series[0].Name != want {
			t.Errorf("%s: observed line named %q, want %q", k, c.Series[0].Name, want)
		}
	}
}

// A bucket closed a second time (a live task restored from an older
// snapshot closes it again) is recorded in place: the later values of the
// series keep their times.
func TestBucketRecordedAgainInPlace(t *testing.T) {
	r := New()
	s := &aggregate.Series{Key: aggregate.Key{Signal: obs.TrafficBytes, Entity: "asn:20294"}}
	const w = int64(5 * time.Minute)
	closeAt := func(i int64, v float64) {
		r.Bucket(&aggregate.Closed{Start: i * w, End: (i + 1) * w, Points: []aggregate.Point{{Series: s, Value: v}}})
	}
	for i := int64(10); i < 14; i++ {
		closeAt(i, float64(i))
	}
	closeAt(12, 120) // again, with a different value
	closeAt(9, 90)   // before the first kept: ignored
	closeAt(14, 14)
	k := s.Key.String()
	want := map[int64]float64{10: 10, 11: 11, 12: 120, 13: 13, 14: 14}
	for i, v := range want {
		if got, ok := r.get(k, i*w); !ok || got != v {
			t.Errorf("bucket %d = %v %v, want %v", i, got, ok, v)
		}
	}
	if _, ok := r.get(k, 9*w); ok {
		t.Error("a bucket before the first kept was recorded")
	}
	if _, ok := r.get(k, 15*w); ok {
		t.Error("a bucket after the last was recorded")
	}
}
