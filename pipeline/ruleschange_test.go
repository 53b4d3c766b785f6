package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/rules"
)

// A service stopped mid-outage comes back with its rules changed: the
// rule of a firing alert removed, bound to another detector, or told to
// exclude the network. Nothing would judge that alert again, so the first
// bucket after the restore resolves it, saying why, and the outage event
// it held open closes when its other alerts do, as in the run that never
// stopped. The state saved under the rule's name is not fed to the other
// detector, which could not read it (dns_failure's state is not
// traffic_drop's: the restore failed, and the service with it). A rule
// changed in its params only goes on judging (the other restore tests).
func TestRestoreUnderChangedRules(t *testing.T) {
	spec, recs := allRecords(t, "../fixtures/virginmedia-2023-04-04.yaml")
	cut := 0
	for i, r := range recs {
		if r.Time >= spec.Expect[0].Onset.UnixNano()+3600e9 {
			cut = i
			break
		}
	}
	var first bytes.Buffer
	p := newPipeline(t, spec, &first)
	if err := replay.Run(p, []replay.Source{replay.NewSliceSource("a", slices.Clone(recs[:cut]))}, nil); err != nil {
		t.Fatal(err)
	}
	const rule, entity = "asn-traffic-drop", "asn:5089"
	if !slices.ContainsFunc(p.ActiveAlerts(), func(e alerting.Event) bool { return e.Rule == rule && e.Entity == entity }) {
		t.Fatalf("%s of %s not firing at the cut: the test would prove little", rule, entity)
	}
	cp, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		change func(r *rules.Rule) *rules.Rule
		reason string
	}{
		{"removed", func(*rules.Rule) *rules.Rule { return nil }, detectors.ReasonRuleRemoved},
		{"another detector", func(r *rules.Rule) *rules.Rule {
			n := *r
			n.Detector, n.Params = detectors.DNSFailureName, detectors.DefaultDNSFailure()
			return &n
		}, detectors.ReasonRuleChanged},
		{"network excluded", func(r *rules.Rule) *rules.Rule {
			n := *r
			n.Exclude = []string{entity}
			return &n
		}, detectors.ReasonRuleChanged},
	} {
		t.Run(c.name, func(t *testing.T) {
			set, err := rules.Default()
			if err != nil {
				t.Fatal(err)
			}
			var changed []*rules.Rule
			for _, r := range set.Rules {
				if r.Name == rule {
					r = c.change(r)
				}
				if r != nil {
					changed = append(changed, r)
				}
			}
			set.Rules = changed
			var out bytes.Buffer
			sink := alerting.NewJSONL("test", &out)
			send := func(ev *alerting.Event) { _ = sink.Send(context.Background(), ev) }
			q, err := pipeline.New(pipeline.Config{Rules: set, Map: spec.Map(), LocalASNs: spec.LocalASNs, Events: send}, send)
			if err != nil {
				t.Fatal(err)
			}
			if err := q.UnmarshalBinary(cp); err != nil {
				t.Fatal(err)
			}
			if err := replay.Run(q, []replay.Source{replay.NewSliceSource("b", slices.Clone(recs[cut:]))}, nil); err != nil {
				t.Fatal(err)
			}
			var retired []alerting.Event
			after, closed := 0, false
			for line := range strings.Lines(out.String()) {
				var ev alerting.Event
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatal(err)
				}
				switch {
				case ev.Reason == detectors.ReasonRuleRemoved || ev.Reason == detectors.ReasonRuleChanged:
					retired = append(retired, ev)
				case ev.Kind == alerting.KindAlert && ev.Rule == rule && ev.Entity == entity:
					after++
				case ev.Kind == alerting.KindEvent && ev.ID == "572ab3495d561011" && ev.Status == alerting.Resolved:
					closed = true
				}
			}
			// Closed as of the bucket open at the cut, [01:25, 01:30), the
			// first the changed rules judge, with the figures it paged.
			what := map[string]string{detectors.ReasonRuleRemoved: "is no longer in the rules", detectors.ReasonRuleChanged: "no longer judges it"}[c.reason]
			if len(retired) != 1 {
				t.Fatalf("%d alerts retired, want 1: %+v", len(retired), retired)
			}
			ev := retired[0]
			at := time.Date(2023, 4, 4, 1, 30, 0, 0, time.UTC)
			if ev.ID != "30a7788f7b5e7de4" || ev.Status != alerting.Resolved || ev.Rule != rule || ev.Entity != entity || ev.Reason != c.reason ||
				!ev.Start.Equal(time.Date(2023, 4, 4, 0, 35, 0, 0, time.UTC)) || ev.End == nil || !ev.End.Equal(at.Add(-5*time.Minute)) || !ev.At.Equal(at) ||
				ev.ChangePct != -97 || ev.OutageEvent != "572ab3495d561011" ||
				ev.Summary != "traffic of Virgin Media (AS5089): alert closed, rule asn-traffic-drop "+what+"; recovery not judged" {
				t.Errorf("retired %+v", ev)
			}
			if after != 0 || !closed {
				t.Errorf("%d alert lines of %s %s after it, outage event closed: %v; want none, and closed", after, rule, entity, closed)
			}
			if len(q.ActiveAlerts()) != 0 || len(q.ActiveEvents()) != 0 {
				t.Errorf("%d alerts and %d events still open at the end", len(q.ActiveAlerts()), len(q.ActiveEvents()))
			}
		})
	}
}
