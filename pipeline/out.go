package pipeline

import (
	"context"
	"sync"

	"github.com/outagewatch/outagewatch/alerting"
)

// outStage is the chain's last stage: the bucket's alerts go to the alert
// sink, in the order they were found, then its outage-event notifications
// to the event sink. Either sink may be nil (stage one, or a pipeline
// whose events nobody reads). It keeps no state; its counters are what
// it sent.
type outStage struct {
	alerts func(*alerting.Event)
	events func(*alerting.Event)

	mu                 sync.Mutex
	sentAlerts, sentEv int64
}

func (o *outStage) Name() string { return "out" }

func (o *outStage) Exec(ctx context.Context, b *Batch) (context.Context, *Batch, error) {
	var na, ne int64
	if o.alerts != nil {
		for _, ev := range b.Alerts {
			o.alerts(ev)
		}
		na = int64(len(b.Alerts))
	}
	if o.events != nil {
		for _, ev := range b.Events {
			o.events(ev)
		}
		ne = int64(len(b.Events))
	}
	o.mu.Lock()
	o.sentAlerts += na
	o.sentEv += ne
	o.mu.Unlock()
	return ctx, b, nil
}

func (o *outStage) Counters() map[string]int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return map[string]int64{"alerts_sent": o.sentAlerts, "outage_events_sent": o.sentEv}
}
