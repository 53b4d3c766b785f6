package stage

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/partial"
	"github.com/outagewatch/outagewatch/pipeline"
)

// Task is the stage-two task of one partition of the internal topic: its
// own pipeline (history, detectors, alerts, correlation) fed by merged
// partials. A bucket closes when every source has flushed past it, so a
// source that lags or that no instance holds holds the bucket open instead
// of letting it close with part of the data.
//
// Every source flushes a bucket once and a re-flush is identical, so the
// task drops a batch it has seen (same source, bucket and key) and
// everything of a source's buckets its marker has passed.
type Task struct {
	p *pipeline.Pipeline
	// sources are the sources that must pass a bucket before it closes.
	sources []string
	st      taskState
	// feeds is marker's scratch: one bucket's feed counts at a time.
	feeds map[obs.Feed]int64
}

type taskState struct {
	// Through is, per source, the end of the last bucket it flushed.
	Through map[string]int64
	// Seen lists the batches merged of buckets not yet passed by their
	// source's marker: source → bucket start → keys.
	Seen map[string]map[int64][]string
	// Offset is the next offset of the internal partition to read.
	Offset int64
	// Duplicates counts batches and markers dropped as already merged.
	Duplicates int64
}

// NewTask returns the task of one internal partition over p.
func NewTask(p *pipeline.Pipeline, sources []string) *Task {
	return &Task{p: p, sources: slices.Clone(sources), st: taskState{Through: map[string]int64{}, Seen: map[string]map[int64][]string{}}}
}

// NewPartitionTask returns the task of internal partition part, over a
// pipeline of cfg whose events go to out: feed-level series route to
// partition 0 (FeedKey), so its task alone judges feed health and the
// others take the stage out of their chains.
func NewPartitionTask(cfg pipeline.Config, out func(*alerting.Event), sources []string, part int) (*Task, error) {
	p, err := pipeline.New(cfg, out)
	if err != nil {
		return nil, err
	}
	if part != 0 {
		if err := p.Remove(pipeline.StageFeedHealth); err != nil {
			return nil, err
		}
	}
	return NewTask(p, sources), nil
}

// Pipeline returns the task's pipeline.
func (t *Task) Pipeline() *pipeline.Pipeline { return t.p }

// SetSources replaces the sources a bucket waits for (the input topics
// gained partitions).
func (t *Task) SetSources(sources []string) { t.sources = slices.Clone(sources) }

// Offset is the next internal-topic offset the task needs.
func (t *Task) Offset() int64 { return t.st.Offset }

// SetOffset records that everything before off has been applied.
func (t *Task) SetOffset(off int64) { t.st.Offset = off }

// Duplicates counts the records dropped as already merged.
func (t *Task) Duplicates() int64 { return t.st.Duplicates }

// Apply merges one record of the internal topic. A malformed entry is
// counted by the pipeline and skipped, and the error returned; the rest of
// the record still applies.
func (t *Task) Apply(r *partial.Record) error {
	if r.Marker != nil {
		return t.marker(r.Marker)
	}
	return t.batch(r.Batch)
}

func (t *Task) batch(b *partial.Batch) error {
	if b.End <= t.st.Through[b.Source] {
		t.st.Duplicates++
		return nil
	}
	seen := t.st.Seen[b.Source]
	if seen == nil {
		seen = map[int64][]string{}
		t.st.Seen[b.Source] = seen
	}
	if slices.Contains(seen[b.Start], b.Key) {
		t.st.Duplicates++
		return nil
	}
	seen[b.Start] = append(seen[b.Start], b.Key)
	var errs []error
	agg := t.p.Aggregator()
	if w := agg.Config().Width; b.End-b.Start != w || b.Start%w != 0 {
		return fmt.Errorf("stage: batch of %s is [%d, %d), not one of the %dns buckets", b.Source, b.Start, b.End, w)
	}
	for i := range b.Entries {
		e := &b.Entries[i]
		// A series' bucket ends with the batch's: its own width (a coarse
		// cadence) back from the batch's end, nothing else.
		if sig, ok := obs.Lookup(e.Signal); ok && e.Start+agg.WidthOf(sig) != b.End {
			errs = append(errs, fmt.Errorf("stage: %s{%s} of %s starts at %d, not where its bucket ending at %d starts",
				e.Signal, e.Entity, b.Source, e.Start, b.End))
			continue
		}
		if err := t.p.MergeEntry(e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t *Task) marker(m *partial.Marker) error {
	prev, known := t.st.Through[m.Source]
	if known && m.Through <= prev {
		t.st.Duplicates++
		return nil
	}
	var errs []error
	// A marker lists its buckets' feed counts bucket by bucket: each run
	// of one bucket's counts merges at once, through one scratch map
	// rather than a map of maps a marker. Counts add up, so a bucket
	// listed twice apart (a marker no stage one writes) merges the same.
	if t.feeds == nil {
		t.feeds = map[obs.Feed]int64{}
	}
	var start int64
	merge := func() {
		if len(t.feeds) > 0 {
			if err := t.p.MergeFeeds(start, t.feeds); err != nil {
				errs = append(errs, err)
			}
			clear(t.feeds)
		}
	}
	for _, f := range m.Feeds {
		if known && f.Start < prev {
			continue // in a bucket an earlier marker carried
		}
		if f.Start != start {
			merge()
			start = f.Start
		}
		t.feeds[obs.Feed(f.Feed)] += f.N
	}
	merge()
	t.st.Through[m.Source] = m.Through
	for start := range t.st.Seen[m.Source] {
		if start < m.Through {
			delete(t.st.Seen[m.Source], start)
		}
	}
	return errors.Join(errs...)
}

// Watermark is the end of the last bucket every source has flushed; false
// while a source has flushed nothing.
func (t *Task) Watermark() (int64, bool) {
	wm := int64(math.MaxInt64)
	for _, s := range t.sources {
		th, ok := t.st.Through[s]
		if !ok {
			return 0, false
		}
		wm = min(wm, th)
	}
	return wm, wm != math.MaxInt64
}

// Missing lists the sources that hold the watermark: those at its value,
// or that never flushed.
func (t *Task) Missing() []string {
	wm, _ := t.Watermark()
	var out []string
	for _, s := range t.sources {
		if th, ok := t.st.Through[s]; !ok || th == wm {
			out = append(out, s)
		}
	}
	return out
}

// Close closes and judges every bucket all sources have passed.
func (t *Task) Close() {
	if wm, ok := t.Watermark(); ok {
		t.p.Close(wm)
	}
}

type snapshot struct {
	Pipeline []byte
	State    taskState
}

// MarshalBinary is the task's whole state: its pipeline and what it has
// merged, with the offset to resume from.
func (t *Task) MarshalBinary() ([]byte, error) {
	pb, err := t.p.MarshalBinary()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&snapshot{Pipeline: pb, State: t.st}); err != nil {
		return nil, fmt.Errorf("stage: task snapshot: %w", err)
	}
	return buf.Bytes(), nil
}

// UnmarshalBinary restores a snapshot into a task with a fresh pipeline.
func (t *Task) UnmarshalBinary(b []byte) error {
	var sn snapshot
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&sn); err != nil {
		return fmt.Errorf("stage: restore task: %w", err)
	}
	if err := t.p.UnmarshalBinary(sn.Pipeline); err != nil {
		return err
	}
	t.st = sn.State
	if t.st.Through == nil {
		t.st.Through = map[string]int64{}
	}
	if t.st.Seen == nil {
		t.st.Seen = map[string]map[int64][]string{}
	}
	return nil
}
