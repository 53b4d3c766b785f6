package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart/recorder"
	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/scenario"
)

func TestReportChartsAlertedSeries(t *testing.T) {
	const w = int64(300e9)
	t0 := time.Date(2021, 1, 13, 0, 0, 0, 0, time.UTC)
	agg := aggregate.New(aggregate.Config{})
	rec := recorder.New()
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
			Start: onset, At: onset.Add(10 * time.Minute), Observed: 100, Baseline: 1000, ChangePct: -90, Summary: "<drop> & more",
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
		// The alert shaded from 17:00 to its resolve at 22:00.
		`fill="#d55e00" fill-opacity="0.14"/>`,
		"&lt;drop&gt; &amp; more", // escaped
		`<td class="resolved">resolved</td>`,
		// The change as the incidents write it.
		`<td class="n">−90 %</td>`,
		// 1000 bytes per 5 minutes is 26.7 bit/s: the axis says bit/s.
		" bit/s</text>", ">UTC</text>", ">Thu 14 Jan</text>", ">18:00</text>",
		">observed</text>", ">same time last week</text>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A fixture's labels become outlined windows on the charts of their series.
func TestReportLabelledWindows(t *testing.T) {
	b, ok := fixtures.Read("uganda-2021-01-13")
	if !ok {
		t.Fatal("no fixture")
	}
	spec, err := scenario.Parse("uganda", b)
	if err != nil {
		t.Fatal(err)
	}
	var mtn []Window
	for _, w := range FixtureWindows(spec) {
		if w.Entity == "asn:20294" && w.Signal == "traffic_bytes" {
			mtn = append(mtn, w)
		}
	}
	onset := time.Date(2021, 1, 13, 17, 0, 0, 0, time.UTC)
	if len(mtn) != 2 || !mtn[0].From.Equal(onset) || !mtn[0].To.Equal(onset.Add(15*time.Minute)) || mtn[0].Label != "must fire (traffic_drop)" ||
		mtn[1].Label != "must resolve" || !mtn[1].To.Equal(mtn[1].From.Add(6*time.Hour)) {
		t.Fatalf("MTN traffic windows %+v", mtn)
	}

	const w = int64(300e9)
	agg := aggregate.New(aggregate.Config{})
	rec := recorder.New()
	t0 := onset.Add(-24 * time.Hour)
	for i := int64(0); i < 2*288; i++ {
		ts := t0.UnixNano() + i*w
		agg.Observe(&obs.Observation{Time: ts, Signal: obs.TrafficBytes, Entity: "asn:20294", Value: 1000})
		agg.Advance(ts+w, rec.Bucket)
	}
	events := []alerting.Event{{ID: "m", Status: alerting.Firing, Detector: "traffic_drop", Signal: "traffic_bytes", Entity: "asn:20294",
		Start: onset, At: onset.Add(10 * time.Minute)}}
	var out bytes.Buffer
	if err := Write(&out, "uganda", events, rec, FixtureWindows(spec)...); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	for _, want := range []string{`fill="none" stroke="#009e73" stroke-dasharray="4 3"/>`, ">must fire (traffic_drop)</text>", ">labelled window</text>"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %s", want)
		}
	}
}
