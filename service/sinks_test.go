package service

import (
	"testing"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/detectors"
)

// An actions feed takes its rules' alerts, member of an event or not, and
// the resolve of any alert whose rule no longer judges it, which may have
// left action_rules with its rule: a transit that alert shut must hear it
// ended. Nothing else.
func TestActionFeedWants(t *testing.T) {
	f := feed(Sink{Name: "actions", Type: "jsonl", ActionRules: []string{"transit-packet-loss"}}, nil).(alerting.Selector)
	for _, c := range []struct {
		ev   alerting.Event
		want bool
	}{
		{alerting.Event{Kind: alerting.KindAlert, Status: alerting.Firing, Rule: "transit-packet-loss", OutageEvent: "e1"}, true},
		{alerting.Event{Kind: alerting.KindAlert, Status: alerting.Resolved, Rule: "transit-packet-loss", Reason: detectors.ReasonRecovered}, true},
		{alerting.Event{Kind: alerting.KindAlert, Status: alerting.Firing, Rule: "asn-traffic-drop"}, false},
		{alerting.Event{Kind: alerting.KindAlert, Status: alerting.Resolved, Rule: "asn-traffic-drop", Reason: detectors.ReasonRecovered}, false},
		{alerting.Event{Kind: alerting.KindAlert, Status: alerting.Resolved, Rule: "old-transit-loss", Reason: detectors.ReasonRuleRemoved}, true},
		{alerting.Event{Kind: alerting.KindAlert, Status: alerting.Resolved, Rule: "asn-traffic-drop", Reason: detectors.ReasonRuleChanged}, true},
		{alerting.Event{Kind: alerting.KindEvent, Status: alerting.Resolved, Rule: "outage", Reason: detectors.ReasonRuleRemoved}, false},
	} {
		if got := f.Wants(&c.ev); got != c.want {
			t.Errorf("%s %s of %s (%s): wanted %v", c.ev.Kind, c.ev.Status, c.ev.Rule, c.ev.Reason, got)
		}
	}
}
