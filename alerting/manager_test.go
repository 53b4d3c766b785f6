package alerting

import (
	"testing"

	"github.com/outagewatch/outagewatch/detectors"
)

// Every resolve says why: a detector's own reason where it gives one,
// "recovered" otherwise.
func TestResolveReasons(t *testing.T) {
	m := NewManager(nil)
	fire := detectors.Finding{Status: detectors.Firing, Detector: "prefix_withdrawal", Signal: "bgp_announced_v4", Entity: "asn:1", Start: 1e9, At: 2e9}
	if ev := m.Handle(nil, fire); ev == nil || ev.Reason != "" {
		t.Fatalf("firing %+v, want no reason", ev)
	}
	res := fire
	res.Status, res.End, res.At = detectors.Resolved, 3e9, 4e9
	if ev := m.Handle(nil, res); ev == nil || ev.Reason != detectors.ReasonRecovered {
		t.Fatalf("resolve %+v, want reason %q", ev, detectors.ReasonRecovered)
	}
	m.Handle(nil, fire)
	res.Reason = detectors.ReasonBaselineAdapted
	if ev := m.Handle(nil, res); ev == nil || ev.Reason != detectors.ReasonBaselineAdapted {
		t.Fatalf("adapted resolve %+v, want reason %q", ev, detectors.ReasonBaselineAdapted)
	}
}
