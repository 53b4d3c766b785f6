package pipeline

import (
	"context"
	"sync"

	"github.com/outagewatch/outagewatch/detectors"
)

// StageFeedHealth is the name of the feed-health stage. A deployment
// judges feed health once: a scaled-out stage two keeps it in the chain
// of its first partition's task only (Remove).
const StageFeedHealth = "feed-health"

// feedHealthStage judges each closed bucket's feed counts: a feed that
// goes quiet is a feed fault, never an outage. Its findings go into the
// batch ahead of the rules' (judge runs after it), so mute-feed-faults
// finds them there. Its state is the feed-silence detector; its counter
// is the findings.
type feedHealthStage struct {
	silence *detectors.FeedSilence

	mu       sync.Mutex
	findings int64
}

func newFeedHealthStage(cfg Config) *feedHealthStage {
	return &feedHealthStage{silence: detectors.NewFeedSilence(cfg.SilentAfter)}
}

func (f *feedHealthStage) Name() string { return StageFeedHealth }

func (f *feedHealthStage) Exec(ctx context.Context, b *Batch) (context.Context, *Batch, error) {
	n := len(b.Findings)
	f.silence.Bucket(b.Bucket, func(x detectors.Finding) { b.Findings = append(b.Findings, Finding{Finding: x}) })
	f.mu.Lock()
	f.findings += int64(len(b.Findings) - n)
	f.mu.Unlock()
	return ctx, b, nil
}

func (f *feedHealthStage) Counters() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return map[string]int64{"findings": f.findings}
}

// save writes the detector where the judge stage wrote it before feed
// health was a stage of its own, so checkpoints restore across the
// change. A chain without the stage still writes it.
func (f *feedHealthStage) save(cp *checkpoint) error {
	cp.Silence = f.silence
	return nil
}

func (f *feedHealthStage) restore(cp *checkpoint) error {
	if cp.Silence != nil {
		f.silence = cp.Silence
	}
	return nil
}
