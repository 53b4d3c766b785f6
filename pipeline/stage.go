package pipeline

import (
	"context"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/rules"
)

// The pipeline is a chain of stages, in the shape of Alertmanager's notify
// pipeline: decode → aggregate → feed-health → judge → alert → mute-silences →
// mute-feed-faults → correlate → out. Records
// enter at decode (Process) and wait in aggregate's open buckets; each
// bucket the watermark closes (Advance, Close) goes down the rest of the
// chain as a Batch, each stage reading what the one before it added.
// Each stage is a type of its own with its own state, counters and
// checkpoint section; see docs/pipeline.md.

// Batch is what goes down the chain for one closed bucket: the bucket,
// then what each stage made of it.
type Batch struct {
	// Bucket is the closed bucket (aggregate).
	Bucket *aggregate.Closed
	// Findings are the detectors' findings on it, in the order they were
	// found: feed health first, then the rules in their order (judge).
	Findings []Finding
	// Alerts are the alert events the findings made, in the same order
	// (alert); correlate sets their OutageEvent or Muted.
	Alerts []*alerting.Event
	// Events are the outage-event notifications due at the bucket's end
	// (correlate).
	Events []*alerting.Event
}

// Finding is a detector's finding with the rule that bound the detector
// (nil for the built-in feed-health detector).
type Finding struct {
	Rule *rules.Rule
	detectors.Finding
}

func (b *Batch) reset(c *aggregate.Closed) {
	clear(b.Findings)
	clear(b.Alerts)
	clear(b.Events)
	*b = Batch{Bucket: c, Findings: b.Findings[:0], Alerts: b.Alerts[:0], Events: b.Events[:0]}
}

// Stage is one link of the chain after aggregate: it reads the batch and
// adds to it (or takes from it), as Alertmanager's Stage does with its
// alerts. An error stops the batch there; it is logged and the next
// bucket goes down the whole chain again.
//
// A stage that keeps state across buckets implements
// encoding.BinaryMarshaler and encoding.BinaryUnmarshaler: its state is
// its own section of the pipeline's checkpoint, under its Name. A stage
// with counters implements Counter.
type Stage interface {
	Name() string
	Exec(ctx context.Context, b *Batch) (context.Context, *Batch, error)
}

// Counter is a stage that reports counters; they appear in Stats.Stages
// under the stage's name.
type Counter interface {
	Counters() map[string]int64
}

// section is a built-in stage whose checkpoint section is the fields of
// the checkpoint it has always written, so that checkpoints written before
// the chain restore and those written now restore in older builds.
type section interface {
	save(cp *checkpoint) error
	restore(cp *checkpoint) error
}

// StageFunc makes a stage of a function, for a stage with no state.
type StageFunc struct {
	ID string
	Fn func(ctx context.Context, b *Batch) (context.Context, *Batch, error)
}

func (s StageFunc) Name() string { return s.ID }
func (s StageFunc) Exec(ctx context.Context, b *Batch) (context.Context, *Batch, error) {
	return s.Fn(ctx, b)
}
