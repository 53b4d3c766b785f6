package correlate

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/words"
)

func parsePrefix(s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	return p, err == nil
}

// summary is the one-line headline of an event, for people: where, how
// much, how many networks, which views agree, and why.
func (c *Correlator) summary(ev *alerting.Event) string {
	o := ev.Outage
	var b strings.Builder
	if o.Title != o.Scope.Name {
		fmt.Fprintf(&b, "Outage of %s", o.Title)
	} else {
		fmt.Fprintf(&b, "Outage in %s", o.Title)
	}
	if ev.Signal != "" {
		fmt.Fprintf(&b, ": %s %s", alerting.SignalWords(ev.Signal), alerting.Measure(ev.Signal, ev.Observed, ev.Baseline, ev.ChangePct, ev.BaselineMethod))
		if o.FiguresAt == "paged" {
			b.WriteString(" when paged")
		}
	}
	var nets []string
	for _, e := range o.Scope.Entities {
		if strings.HasPrefix(e.Entity, "asn:") {
			nets = append(nets, e.Name)
		}
	}
	if len(nets) > 0 {
		fmt.Fprintf(&b, "; %s (%s)", words.Plural(len(nets), "network"), strings.Join(nets, ", "))
		if o.Scope.Share > 0 && o.Scope.Share < 1 {
			fmt.Fprintf(&b, " carrying %.0f %% of its traffic", o.Scope.Share*100)
		}
	}
	if len(o.Scope.Sites) > 0 {
		fmt.Fprintf(&b, "; sites %s", strings.Join(o.Scope.Sites, ", "))
	}
	if len(o.Scope.Destinations) > 0 {
		fmt.Fprintf(&b, "; %s", words.Plural(len(o.Scope.Destinations), "destination"))
	}
	fmt.Fprintf(&b, "; seen in %s (confidence %.2f)", strings.Join(o.Kinds(), ", "), o.Confidence)
	if o.Cause != "" {
		fmt.Fprintf(&b, "; likely cause: %s", o.Cause)
	}
	return b.String()
}
