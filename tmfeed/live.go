package tmfeed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/ingest/dcload"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

// Live runs the Traffic Manager from a dcload Kafka topic: reports in,
// one plan per closed window out, and the latest input and plan kept for
// capacity queries.
type Live struct {
	Feed *Feed
	// Plan runs one tick and returns the plan in force after it.
	Plan func(ctx context.Context, t *Tick) (trafficmanager.State, error)

	mu      sync.Mutex
	input   trafficmanager.Input
	state   trafficmanager.State
	bad     int
	planned int
}

// NewLive returns a live planner; until the first window closes, capacity
// queries see the topology's starting state.
func NewLive(f *Feed, plan func(ctx context.Context, t *Tick) (trafficmanager.State, error)) *Live {
	return &Live{Feed: f, Plan: plan, input: f.start}
}

// Run reads r until ctx ends. A report that does not decode, or names a
// data center outside the topology, is counted, logged and skipped; a plan
// that fails (a publisher down) is logged and retried with the next tick,
// since the planner keeps the last plan that went out.
func (l *Live) Run(ctx context.Context, r *kafka.Reader) error {
	dec := dcload.NewDecoder()
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return nil
			}
			return fmt.Errorf("tm: read %s: %w", r.Config().Topic, err)
		}
		rep, err := dec.Parse(m.Value)
		var tk *Tick
		if err == nil {
			tk, err = l.Feed.Add(rep)
		}
		if err != nil {
			l.mu.Lock()
			l.bad++
			l.mu.Unlock()
			slog.Warn("tm: skipping report", "partition", m.Partition, "offset", m.Offset, "err", err)
			continue
		}
		if tk == nil {
			continue
		}
		st, err := l.Plan(ctx, tk)
		l.mu.Lock()
		l.input = tk.Input
		if err == nil {
			l.state = st
			l.planned++
		}
		l.mu.Unlock()
		if err != nil {
			slog.Error("tm: plan", "at", tk.At, "err", err)
		}
	}
}

// Capacity returns the latest input and the plan in force, for
// trafficmanager.Capacity.
func (l *Live) Capacity() (trafficmanager.Input, trafficmanager.State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.input, l.state
}

// Counts returns the ticks planned and the reports skipped.
func (l *Live) Counts() (planned, skipped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.planned, l.bad
}
