package scenario_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
)

// teliaRecords renders the Telia fixture into one time-ordered slice.
func teliaRecords(t *testing.T) (*scenario.Spec, []*ingest.Record) {
	t.Helper()
	spec, err := scenario.Load("../fixtures/telia-2019-06-20.yaml")
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

func newPipeline(t *testing.T, spec *scenario.Spec, events *[]alerting.Event) *pipeline.Pipeline {
	t.Helper()
	p, err := pipeline.New(pipeline.Config{Map: spec.Map(), LocalASNs: spec.LocalASNs}, func(ev *alerting.Event) {
		// Through JSON, as a sink would see it.
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var e alerting.Event
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		*events = append(*events, e)
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The Telia packet loss of 2019-06-20 fires one alert for AS1299 at the
// end of the first lossy bucket, naming the three sites and the lossy
// destinations, and resolves after the ports go down; a restart from a
// checkpoint taken while it fires changes nothing.
func TestTeliaAlertsExactly(t *testing.T) {
	spec, recs := teliaRecords(t)
	var whole []alerting.Event
	p := newPipeline(t, spec, &whole)
	if err := replay.Run(p, []replay.Source{replay.NewSliceSource("all", slices.Clone(recs))}, nil); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Records["quality/quality-json"] != int64(len(recs)) || len(st.DecodeErrors) != 0 {
		t.Fatalf("records %v errors %v", st.Records, st.DecodeErrors)
	}
	if len(whole) != 4 {
		t.Fatalf("%d events, want 2 firing and 2 resolved: %+v", len(whole), whole)
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	want := []struct {
		status    string
		at, start string
	}{
		{alerting.Firing, "2019-06-17T08:35:00Z", "2019-06-17T08:30:00Z"},
		{alerting.Resolved, "2019-06-17T09:25:00Z", "2019-06-17T08:30:00Z"},
		{alerting.Firing, "2019-06-20T12:15:00Z", "2019-06-20T12:10:00Z"},
		{alerting.Resolved, "2019-06-20T12:45:00Z", "2019-06-20T12:10:00Z"},
	}
	for i, w := range want {
		ev := whole[i]
		if ev.Status != w.status || !ev.At.Equal(at(w.at)) || !ev.Start.Equal(at(w.start)) || ev.Entity != "transit:1299" ||
			ev.Detector != "packet_loss" || ev.Rule != "transit-packet-loss" || ev.Severity != "critical" {
			t.Errorf("event %d: %s %s at %s start %s %s", i, ev.Status, ev.Entity, ev.At, ev.Start, ev.Rule)
		}
	}
	f := whole[2]
	if sites := f.Details["sites"]; !reflect.DeepEqual(sites, []any{"ams01", "fra01", "lon01"}) {
		t.Errorf("sites %v", sites)
	}
	dests, _ := f.Details["destinations"].([]any)
	loss, _ := f.Details["loss"].(map[string]any)
	// 85 % of Telia's 40 destinations were hit at 35 % loss.
	if len(dests) != 34 || len(loss) != 34 || f.Details["destinations_judged"] != float64(40) {
		t.Fatalf("%d destinations, %d losses, judged %v", len(dests), len(loss), f.Details["destinations_judged"])
	}
	for _, d := range dests {
		if !strings.HasPrefix(d.(string), "198.18.") || loss[d.(string)].(float64) < 0.1 {
			t.Errorf("destination %v loss %v", d, loss[d.(string)])
		}
	}
	if !strings.Contains(f.Summary, "AS1299") || !strings.Contains(f.Summary, "34 of 40 destinations") {
		t.Errorf("summary %q", f.Summary)
	}
	if whole[3].End == nil || !whole[3].End.Equal(at("2019-06-20T12:30:00Z")) {
		t.Errorf("resolved end %v", whole[3].End)
	}

	// Checkpoint at 12:22 (the sources hand their records over, so the
	// whole run above had its own copy of the slice), with the alert and its details active.
	cut := at("2019-06-20T12:22:00Z").UnixNano()
	i := 0
	for i < len(recs) && recs[i].Time < cut {
		i++
	}
	var first, second []alerting.Event
	p1 := newPipeline(t, spec, &first)
	if err := replay.Run(p1, []replay.Source{replay.NewSliceSource("first", recs[:i])}, nil); err != nil {
		t.Fatal(err)
	}
	if len(p1.ActiveAlerts()) != 1 {
		t.Fatalf("active at the cut: %+v", p1.ActiveAlerts())
	}
	b, err := p1.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	p2 := newPipeline(t, spec, &second)
	if err := p2.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if err := replay.Run(p2, []replay.Source{replay.NewSliceSource("second", recs[i:])}, nil); err != nil {
		t.Fatal(err)
	}
	if got := append(first, second...); !reflect.DeepEqual(got, whole) {
		t.Fatalf("restored run differs:\n%+v\n%+v", got, whole)
	}
}
