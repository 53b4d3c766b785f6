package pipeline

import (
	"context"
	"sync"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/correlate"
)

// correlateStage groups the bucket's alerts into outage events by place
// and time (package correlate): each alert not muted by the stages before
// learns its event, and the event notifications due at the bucket's end
// go into the batch. Its state is the correlator's (open events and the
// last resolved ones); its counter is the notifications.
type correlateStage struct {
	mu      sync.Mutex // the correlator is read by Event from the HTTP side
	corr    *correlate.Correlator
	outages int64
}

func newCorrelateStage(cfg Config, level func(signal, entity string, t time.Time) (float64, bool)) (*correlateStage, error) {
	sev, err := correlate.FromRules(cfg.Rules.Severity, cfg.Severity)
	if err != nil {
		return nil, err
	}
	return &correlateStage{corr: correlate.New(correlate.Config{Map: cfg.Map, Level: level, Severity: sev,
		ZoneOwners: cfg.ZoneOwners, MutedBefore: true, GroupWait: cfg.GroupWait})}, nil
}

func (c *correlateStage) Name() string { return "correlate" }

func (c *correlateStage) Exec(ctx context.Context, b *Batch) (context.Context, *Batch, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range b.Alerts {
		c.corr.Add(ev)
	}
	evs := c.corr.Flush(time.Unix(0, b.Bucket.End).UTC())
	c.outages += int64(len(evs))
	b.Events = append(b.Events, evs...)
	return ctx, b, nil
}

func (c *correlateStage) event(id string) (alerting.Event, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.corr.Event(id)
}

func (c *correlateStage) active() []alerting.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.corr.Active()
}

func (c *correlateStage) Counters() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return map[string]int64{"outage_events": c.outages}
}

func (c *correlateStage) save(cp *checkpoint) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	cp.Outages, err = c.corr.MarshalBinary()
	return err
}

func (c *correlateStage) restore(cp *checkpoint) error {
	if len(cp.Outages) == 0 {
		return nil // a checkpoint older than the correlator
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.corr.UnmarshalBinary(cp.Outages)
}
