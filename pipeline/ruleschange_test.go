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

// A service stopped mid-outage comes back with its rules changed, or has
// them reloaded as it runs: the rule of a firing alert removed, bound to
// another detector, or told to exclude the network. Nothing would judge
// that alert again, so the first bucket under the new rules resolves it,
// saying why, and the outage event it held open closes when its other
// alerts do. The state saved under the rule's name is not fed to the other
// detector, which could not read it (dns_failure's state is not
// traffic_drop's: the restore failed, and the service with it). A rule
// changed in its params only goes on judging (the other restore tests).
func TestChangedRulesRetireTheirAlerts(t *testing.T) {
	spec, recs := allRecords(t, "../fixtures/virginmedia-2023-04-04.yaml")
	cut := midIncident(spec, recs)
	const rule, entity = "asn-traffic-drop", "asn:5089"
	// upToCut runs a pipeline of the shipped rules to the cut, its output
	// going to out.
	upToCut := func(t *testing.T, out *bytes.Buffer) *pipeline.Pipeline {
		p := newPipeline(t, spec, out)
		if err := replay.Run(p, []replay.Source{replay.NewSliceSource("a", slices.Clone(recs[:cut]))}, nil); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(p.ActiveAlerts(), func(e alerting.Event) bool { return e.Rule == rule && e.Entity == entity }) {
			t.Fatalf("%s of %s not firing at the cut: the test would prove little", rule, entity)
		}
		return p
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
		for _, how := range []string{"restart", "reload"} {
			t.Run(how+" "+c.name, func(t *testing.T) {
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
				var q *pipeline.Pipeline
				switch how {
				case "restart":
					cp, err := upToCut(t, &bytes.Buffer{}).MarshalBinary()
					if err != nil {
						t.Fatal(err)
					}
					sink := alerting.NewJSONL("test", &out)
					send := func(ev *alerting.Event) { _ = sink.Send(context.Background(), ev) }
					if q, err = pipeline.New(pipeline.Config{Rules: set, Map: spec.Map(), LocalASNs: spec.LocalASNs, Events: send}, send); err != nil {
						t.Fatal(err)
					}
					if err := q.UnmarshalBinary(cp); err != nil {
						t.Fatal(err)
					}
				case "reload":
					q = upToCut(t, &out)
					out.Reset()
					if err := q.SetRules(set); err != nil {
						t.Fatal(err)
					}
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
}

// Rules reloaded mid-outage as they were, freshly loaded, judge on where
// the old ones left off: the run gives exactly the alerts and events of
// the run that never reloaded. A rule whose params changed keeps its
// detector's state too: its alert firing at the reload is not raised
// again, and resolves with the start it had.
func TestReloadedRulesCarryTheirState(t *testing.T) {
	spec, recs := allRecords(t, "../fixtures/virginmedia-2023-04-04.yaml")
	cut := midIncident(spec, recs)
	var whole bytes.Buffer
	if err := replay.Run(newPipeline(t, spec, &whole), []replay.Source{replay.NewSliceSource("all", slices.Clone(recs))}, nil); err != nil {
		t.Fatal(err)
	}
	reload := func(change func(*rules.Set)) string {
		var out bytes.Buffer
		p := newPipeline(t, spec, &out)
		if err := replay.Run(p, []replay.Source{replay.NewSliceSource("a", slices.Clone(recs[:cut]))}, nil); err != nil {
			t.Fatal(err)
		}
		set, err := rules.Default()
		if err != nil {
			t.Fatal(err)
		}
		change(set)
		if err := p.SetRules(set); err != nil {
			t.Fatal(err)
		}
		if err := replay.Run(p, []replay.Source{replay.NewSliceSource("b", slices.Clone(recs[cut:]))}, nil); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := reload(func(*rules.Set) {}); got != whole.String() {
		t.Fatalf("the same rules reloaded changed the run:\n%s\nwant\n%s", got, whole.String())
	}
	got := reload(func(set *rules.Set) {
		for _, r := range set.Rules {
			if r.Name == "asn-traffic-drop" {
				r.Params.(*detectors.TrafficDrop).Threshold = 0.3
			}
		}
	})
	var firing, resolved []alerting.Event
	for line := range strings.Lines(got) {
		var ev alerting.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Rule == "asn-traffic-drop" && ev.Entity == "asn:5089" && ev.Start.Hour() == 0 {
			if ev.Status == alerting.Firing {
				firing = append(firing, ev)
			} else {
				resolved = append(resolved, ev)
			}
		}
	}
	if len(firing) != 1 || len(resolved) != 1 || resolved[0].Reason != detectors.ReasonRecovered ||
		!resolved[0].Start.Equal(firing[0].Start) || resolved[0].Threshold != "threshold 30 %, for 10 min, critical at 90 %" {
		t.Fatalf("the first outage's traffic alert: fired %+v, resolved %+v; want once each, the resolve at the new threshold", firing, resolved)
	}
}
