package aggregate

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/partial"
)

// Flushed is one bucket of a stage-one aggregator, as it leaves: the raw
// state of every series with data in it, and the feed counts. Stage two
// merges these (ObservePartial, ObserveFeeds) instead of observations.
type Flushed struct {
	Start, End int64
	// Entries are sorted by signal, then entity: a re-flush of the same
	// records gives the same entries.
	Entries []partial.Entry
	Feeds   map[obs.Feed]int64
}

// Flush moves a stage-one aggregator's watermark to wm: every bucket that
// ends at or before wm leaves as a Flushed, oldest first, without touching
// any history. Hooks run as for a close, so the gauges that stateful inputs
// sample (the routing table) are part of the bucket.
func (a *Aggregator) Flush(wm int64, fn func(*Flushed)) error {
	for {
		start, ok := a.nextToClose(wm)
		if !ok {
			return nil
		}
		f, err := a.flush(start)
		if err != nil {
			return err
		}
		fn(f)
	}
}

func (a *Aggregator) flush(start int64) (*Flushed, error) {
	end := start + a.cfg.Width
	a.runHooks(start, end)
	f := &Flushed{Start: start, End: end, Feeds: a.feeds[start].counts()}
	delete(a.feeds, start)
	if a.lastStart == start {
		a.lastFeeds = nil
	}
	if i, ok := slices.BinarySearch(a.starts, start); ok {
		a.starts = slices.Delete(a.starts, i, i+1)
	}
	for _, s := range a.SortedSeries() {
		w := s.Hist.Width()
		if end%w != 0 {
			continue // a coarse bucket still open
		}
		b := s.bucket(end - w)
		if b == nil {
			continue
		}
		e := partial.Entry{Signal: s.Signal.String(), Entity: s.Entity, Start: end - w, Sum: b.sum, Count: b.count, LastT: b.lastT}
		if b.acc != nil {
			m, ok := b.acc.(encoding.BinaryMarshaler)
			if !ok {
				return nil, fmt.Errorf("aggregate: accumulator of %s cannot leave the process", s.Key)
			}
			var err error
			if e.Acc, err = m.MarshalBinary(); err != nil {
				return nil, fmt.Errorf("aggregate: flush %s: %w", s.Key, err)
			}
		}
		s.take(end - w)
		f.Entries = append(f.Entries, e)
	}
	a.closedTo = end
	a.stats.BucketsClosed++
	return f, nil
}

// ErrLatePartial is returned for a partial of a bucket stage two has
// already closed; it is counted as late and dropped.
var ErrLatePartial = errors.New("partial of a closed bucket")

// ObservePartial merges one source's state of a series' bucket into the
// open bucket, as if its observations had arrived here. A custom signal's
// first partial in a bucket is taken as it is; a second needs an
// accumulator that merges (obs.Mergeable).
func (a *Aggregator) ObservePartial(e *partial.Entry) error {
	sig, ok := obs.Lookup(e.Signal)
	if !ok {
		return fmt.Errorf("aggregate: partial of unknown signal %q", e.Signal)
	}
	w := a.WidthOf(sig)
	if e.Start%w != 0 {
		return fmt.Errorf("aggregate: partial %s{%s} starts at %d, off its %dns buckets", e.Signal, e.Entity, e.Start, w)
	}
	// The base bucket its span ends with decides whether it is late.
	base := e.Start + w - a.cfg.Width
	if base < a.closedTo {
		a.stats.Late++
		return ErrLatePartial
	}
	k := Key{sig, e.Entity}
	s := a.series[k]
	if s == nil {
		// The entity may share memory with its sender's buffers.
		k.Entity = strings.Clone(k.Entity)
		s = a.newSeries(k)
	}
	b := s.bucket(e.Start)
	if b == nil {
		b = s.openBucket(e.Start, sig)
	}
	a.openFeeds(base)
	def := sig.Def()
	first := b.count == 0
	switch def.Agg {
	case obs.Sum, obs.Mean:
		b.sum += e.Sum
	case obs.Max:
		if first || e.Sum > b.sum {
			b.sum = e.Sum
		}
	case obs.Last:
		if first || e.LastT >= b.lastT {
			b.sum, b.lastT = e.Sum, e.LastT
		}
	case obs.Custom:
		if err := mergeAcc(b, e, first, def); err != nil {
			return fmt.Errorf("aggregate: partial %s{%s}: %w", e.Signal, e.Entity, err)
		}
	}
	b.count += e.Count
	return nil
}

func mergeAcc(b *openBucket, e *partial.Entry, first bool, def *obs.SignalDef) error {
	if first {
		u, ok := b.acc.(encoding.BinaryUnmarshaler)
		if !ok {
			return errors.New("accumulator cannot be restored")
		}
		return u.UnmarshalBinary(e.Acc)
	}
	m, ok := b.acc.(obs.Mergeable)
	if !ok {
		return errors.New("accumulator does not merge")
	}
	other := def.NewAccumulator()
	u, ok := other.(encoding.BinaryUnmarshaler)
	if !ok {
		return errors.New("accumulator cannot be restored")
	}
	if err := u.UnmarshalBinary(e.Acc); err != nil {
		return err
	}
	return m.Merge(other)
}

// ObserveFeeds adds a source's feed counts of the base bucket starting at
// start; a bucket already closed counts them as late.
func (a *Aggregator) ObserveFeeds(start int64, feeds map[obs.Feed]int64) error {
	if start%a.cfg.Width != 0 {
		return fmt.Errorf("aggregate: feed counts at %d, off the %dns buckets", start, a.cfg.Width)
	}
	if start < a.closedTo {
		a.stats.Late++
		return ErrLatePartial
	}
	f := a.openFeeds(start)
	for _, feed := range slices.Sorted(maps.Keys(feeds)) {
		f.add(feed, feeds[feed])
	}
	return nil
}

// openFeeds returns the feed counts of the base bucket at start, opening it.
func (a *Aggregator) openFeeds(start int64) *feedCounts {
	f := a.feeds[start]
	if f == nil {
		f = &feedCounts{}
		a.feeds[start] = f
		a.addStart(start)
	}
	return f
}
