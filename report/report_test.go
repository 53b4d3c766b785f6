package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/obs"
)

func TestReportChartsAlertedSeries(t *testing.T) {
	const w = int64(300e9)
	t0 := time.Date(2021, 1, 13, 0, 0, 0, 0, time.UTC)
	agg := aggregate.New(aggregate.Config{})
	rec := NewRecorder()
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
	base := 1000.0
	events := []alerting.Event{
		{ID: "a", Status: alerting.Firing, Detector: "traffic_drop", Signal: "traffic_bytes", Entity: "country:UG",
			Start: onset, At: onset.Add(10 * time.Minute), ChangePct: -90, Summary: "<drop> & more",
			Evidence: []alerting.Point{{Time: onset, Value: &base, Baseline: base}}},
		{ID: "a", Status: alerting.Resolved, Detector: "traffic_drop", Signal: "traffic_bytes", Entity: "country:UG",
			Start: onset, End: &end, At: end.Add(30 * time.Minute)},
	}
	var b bytes.Buffer
	if err := Write(&b, "uganda", events, rec); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if n := strings.Count(html, "<svg"); n != 1 {
		t.Fatalf("%d charts, want one (only the alerted series)", n)
	}
	for _, want := range []string{
		"<h2>traffic_bytes{country:UG} — traffic_drop</h2>",
		`<rect class="alert"`,
		"&lt;drop&gt; &amp; more", // escaped
		`<td class="resolved">resolved</td>`,
		"Jan 14",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The chart spans a day before the alert to the end of the data, and
	// the drop shows: the path goes down to a tenth of the level.
	if rec.series["traffic_bytes{country:UG}"] == nil || len(rec.series["traffic_bytes{country:UG}"].values) != 2*288 {
		t.Fatalf("recorded %d buckets", len(rec.series["traffic_bytes{country:UG}"].values))
	}
	if v, ok := rec.get("traffic_bytes{country:UG}", onset.UnixNano()); !ok || v != 100 {
		t.Fatalf("recorded value at onset %v %v, want the observed 100", v, ok)
	}
}
