package score

import (
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/scenario"
)

var onset = time.Date(2021, 1, 13, 17, 0, 0, 0, time.UTC)

func spec() *scenario.Spec {
	return &scenario.Spec{Name: "t",
		Expect: []scenario.Expectation{{Detector: "traffic_drop", Entity: "country:UG", Onset: onset,
			Within: detectors.Duration(15 * time.Minute), ResolveAfter: onset.Add(time.Hour), ResolveWithin: detectors.Duration(time.Hour)}},
		Allow: []scenario.Allowance{{Detector: "traffic_drop", Entity: "asn:*", From: onset, To: onset.Add(2 * time.Hour)}},
	}
}

func ev(id, status, entity string, at time.Time) alerting.Event {
	return alerting.Event{ID: id, Status: status, Detector: "traffic_drop", Signal: "traffic_bytes", Entity: entity, At: at}
}

func TestScoreDetectionsMissesAndFalseAlerts(t *testing.T) {
	events := []alerting.Event{
		ev("a", alerting.Firing, "country:UG", onset.Add(10*time.Minute)),
		ev("b", alerting.Firing, "asn:20294", onset.Add(10*time.Minute)),  // allowed
		ev("c", alerting.Firing, "country:KE", onset.Add(20*time.Minute)), // false
		ev("a", alerting.Resolved, "country:UG", onset.Add(90*time.Minute)),
		ev("d", alerting.Firing, "asn:1", onset.Add(3*time.Hour)), // outside its allowance: false
	}
	r := Score(spec(), events)
	if r.Pass || len(r.Detected) != 1 || len(r.Missed) != 0 || len(r.False) != 2 || r.Allowed != 1 {
		t.Fatalf("result %+v", r)
	}
	if d := r.Detected[0]; d.Delay != 10*time.Minute || d.Resolved == nil || d.Signal != "traffic_bytes" {
		t.Fatalf("detection %+v", d)
	}
	if r.False[0].Entity != "country:KE" || r.False[1].Entity != "asn:1" {
		t.Fatalf("false alerts %+v", r.False)
	}
}

func TestScoreLateFiringAndMissingResolveAreMisses(t *testing.T) {
	late := Score(spec(), []alerting.Event{ev("a", alerting.Firing, "country:UG", onset.Add(20*time.Minute))})
	if late.Pass || len(late.Missed) != 1 || len(late.False) != 1 {
		t.Fatalf("late alert: %+v", late)
	}
	unresolved := Score(spec(), []alerting.Event{ev("a", alerting.Firing, "country:UG", onset.Add(5*time.Minute))})
	if unresolved.Pass || len(unresolved.Missed) != 1 || unresolved.Missed[0].Reason != "resolve expected between 2021-01-13T18:00:00Z and 2021-01-13T19:00:00Z, got never" {
		t.Fatalf("unresolved: %+v", unresolved)
	}
}
