package pipeline_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
)

// allRecords renders a fixture's every stream, merged by event time.
func allRecords(t *testing.T, file string) (*scenario.Spec, []*ingest.Record) {
	t.Helper()
	spec, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := replay.Collect(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	return spec, recs
}

// midIncident is the index of the first record an hour after the first
// expected onset: a cut in the incident, after its alerts fired.
func midIncident(spec *scenario.Spec, recs []*ingest.Record) int {
	for i, r := range recs {
		if r.Time >= spec.Expect[0].Onset.UnixNano()+3600e9 {
			return i
		}
	}
	return 0
}

func newPipeline(t *testing.T, spec *scenario.Spec, out *bytes.Buffer) *pipeline.Pipeline {
	t.Helper()
	sink := alerting.NewJSONL("test", out)
	send := func(ev *alerting.Event) { _ = sink.Send(context.Background(), ev) }
	// Outage events too: an event open across the checkpoint must grow and
	// resolve exactly as in an uninterrupted run.
	p, err := pipeline.New(pipeline.Config{Map: spec.Map(), LocalASNs: spec.LocalASNs, Events: send}, send)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A pipeline checkpointed mid-incident (with routing updates held, open
// buckets, firing alerts) and restored into a fresh pipeline raises exactly
// the alerts of an uninterrupted run.
func TestCheckpointRestoreMidIncident(t *testing.T) {
	spec, recs := allRecords(t, "../fixtures/virginmedia-2023-04-04.yaml")
	var whole bytes.Buffer
	if err := replay.Run(newPipeline(t, spec, &whole), []replay.Source{replay.NewSliceSource("all", slices.Clone(recs))}, nil); err != nil {
		t.Fatal(err)
	}
	// Cut in the first outage, after its alerts fired.
	cut := midIncident(spec, recs)
	var first, second bytes.Buffer
	p := newPipeline(t, spec, &first)
	if err := replay.Run(p, []replay.Source{replay.NewSliceSource("a", slices.Clone(recs[:cut]))}, nil); err != nil {
		t.Fatal(err)
	}
	if len(p.ActiveAlerts()) == 0 {
		t.Fatal("no alert firing at the cut: the test would prove little")
	}
	cp, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	q := newPipeline(t, spec, &second)
	if err := q.UnmarshalBinary(cp); err != nil {
		t.Fatal(err)
	}
	if len(q.ActiveAlerts()) != len(p.ActiveAlerts()) {
		t.Fatalf("restored %d active alerts, had %d", len(q.ActiveAlerts()), len(p.ActiveAlerts()))
	}
	if a, b := q.ActiveEvents(), p.ActiveEvents(); len(b) != 1 || len(a) != 1 || a[0].ID != b[0].ID || a[0].Revision != b[0].Revision || a[0].Revision == 0 {
		t.Fatalf("restored events %+v, had %+v", a, b)
	}
	if err := replay.Run(q, []replay.Source{replay.NewSliceSource("b", slices.Clone(recs[cut:]))}, nil); err != nil {
		t.Fatal(err)
	}
	if got := first.String() + second.String(); got != whole.String() {
		t.Fatalf("alerts differ after restore:\n%s\nwant:\n%s", got, whole.String())
	}
	if st, wst := q.Stats(), p.Stats(); st.Records["flows/goflow2-pb"] <= wst.Records["flows/goflow2-pb"] {
		t.Fatalf("restored counters did not carry on: %v then %v", wst.Records, st.Records)
	}
}

// Routing updates are held until their bucket closes: a pipeline fed the
// BGP records of a bucket out of order with the flows of later buckets
// (a partition running ahead) gives the alerts of the merged replay.
func TestOrderedStreamsIgnoreArrivalOrder(t *testing.T) {
	spec, recs := allRecords(t, "../fixtures/virginmedia-2023-04-04.yaml")
	var merged, skewed bytes.Buffer
	if err := replay.Run(newPipeline(t, spec, &merged), []replay.Source{replay.NewSliceSource("all", slices.Clone(recs))}, nil); err != nil {
		t.Fatal(err)
	}
	// Deliver every BGP record up to 30 minutes early, as a fast
	// partition would, while the watermark follows the other streams.
	p := newPipeline(t, spec, &skewed)
	const ahead = int64(1800e9)
	var bgp []*ingest.Record
	for _, r := range recs {
		if r.Stream == "bgp" {
			bgp = append(bgp, r)
		}
	}
	lateness := p.Aggregator().Config().Lateness
	var last int64
	for _, r := range recs {
		if r.Stream == "bgp" {
			continue
		}
		for len(bgp) > 0 && bgp[0].Time <= r.Time+ahead {
			_ = p.Process(bgp[0])
			bgp = bgp[1:]
		}
		_ = p.Process(r)
		last = max(last, r.Time)
		p.Advance(last - lateness)
	}
	if merged.Len() == 0 || skewed.String() != merged.String() {
		t.Fatalf("skewed arrival changed the alerts:\n%s\nwant:\n%s", skewed.String(), merged.String())
	}
}
