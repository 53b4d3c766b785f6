package aggregate

import (
	"cmp"
	"encoding"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/partial"
)

// part is a series of a stage-one aggregator: what it needs until its
// buckets leave (their open state), and no history, rhythm or ring. 64
// bytes, against the 176 of a Series.
type part struct {
	sig obs.Signal
	// id is the part's number for a decoder (SeriesID).
	id     int32
	entity string
	window
	// dst is the series in stage two (Aggregator.dst) that Handoff merges
	// this one into, once found, so that a bucket handed off needs no
	// lookup by name.
	dst *Series
}

func (a *Aggregator) newPart(sig obs.Signal, entity string) *part {
	p := &part{sig: sig, id: int32(a.parts.len()), entity: entity}
	a.noteWidth(sig)
	a.parts.put(p)
	a.sortedParts = append(a.sortedParts, p)
	a.dirty = true
	return p
}

// sortParts sorts the parts by signal, then entity, as SortedSeries sorts
// series.
func (a *Aggregator) sortParts() []*part {
	if a.dirty {
		slices.SortFunc(a.sortedParts, compareParts)
		a.dirty = false
	}
	return a.sortedParts
}

// takeDue returns the parts with a bucket that the flush of the base
// bucket at start takes, sorted by signal, then entity: those listed, or
// every part where they are a quarter of them or more (isDense).
func (a *Aggregator) takeDue(start int64) []*part {
	due, ok := a.due[start]
	delete(a.due, start)
	if a.allAt == start {
		a.allOK = false
	}
	if ok && due == nil {
		return a.sortParts()
	}
	if cap(due) > 0 && cap(due) <= maxDueFree {
		a.dueFree = append(a.dueFree, due[:0])
	}
	slices.SortFunc(due, compareParts)
	return due
}

// compareParts orders parts by signal, then entity, as a flush sends them.
func compareParts(x, y *part) int {
	return cmp.Or(cmp.Compare(x.sig, y.sig), cmp.Compare(x.entity, y.entity))
}

// baseEnding is the start of the base bucket that ends with the bucket of
// width w starting at start: where a coarse series' bucket leaves stage
// one and is judged late in stage two.
func (a *Aggregator) baseEnding(start, w int64) int64 { return start + w - a.cfg.Width }

// errNotStageOne refuses Flush and Handoff of an aggregator that keeps
// history: its buckets close through Advance.
var errNotStageOne = errors.New("aggregate: flush of an aggregator that is not stage one (Config.StageOne)")

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
// any history. The Flushed and its entries are fn's only during the call.
// Hooks run as for a close, so the gauges that stateful inputs sample (the
// routing table) are part of the bucket.
func (a *Aggregator) Flush(wm int64, fn func(*Flushed)) error {
	for {
		start, ok := a.nextToClose(wm)
		if !ok {
			return nil
		}
		// The entries' array is reused from bucket to bucket: grown one
		// append at a time for every bucket, it was most of a flush's
		// allocation.
		f := &Flushed{Start: start, End: start + a.cfg.Width, Entries: a.flushed[:0]}
		feeds, err := a.flush(start, func(_ *part, e *partial.Entry) {
			f.Entries = append(f.Entries, *e)
		})
		if err != nil {
			return err
		}
		f.Feeds = feeds.counts()
		fn(f)
		clear(f.Entries) // its strings and accumulators are fn's now, or garbage
		a.flushed = f.Entries[:0]
	}
}

// Handoff is Flush and merge in one process: every bucket of this
// stage-one aggregator that ends at or before wm moves into dst, exactly as
// dst.ObservePartial and dst.ObserveFeeds would merge what Flush sends,
// but without building the partial records in between, which cost more
// than the bucketing itself when stages one and two share a process.
// Entries dst refuses (late ones) go to reject; the rest still merge.
func (a *Aggregator) Handoff(wm int64, dst *Aggregator, reject func(error)) error {
	if a.dst != dst || a.dstRestores != dst.restores {
		// The series found are another aggregator's, or were replaced by
		// a restore.
		for _, p := range a.sortedParts {
			p.dst = nil
		}
		a.dst, a.dstRestores = dst, dst.restores
	}
	merge := func(p *part, e *partial.Entry) {
		if err := dst.observePartial(p.sig, e, &p.dst); err != nil {
			reject(err)
		}
	}
	for {
		start, ok := a.nextToClose(wm)
		if !ok {
			return nil
		}
		feeds, err := a.flush(start, merge)
		if err != nil {
			return err
		}
		if err := dst.observeFeeds(start, feeds); err != nil {
			reject(err)
		}
	}
}

// flush takes the bucket at start out of a stage-one aggregator: each
// series' state goes to entry, sorted by signal, then entity, and the feed
// counts are returned. The entry passed is only valid during the call.
func (a *Aggregator) flush(start int64, entry func(*part, *partial.Entry)) (*feedCounts, error) {
	if !a.cfg.StageOne {
		return nil, errNotStageOne
	}
	end := start + a.cfg.Width
	a.runHooks(start, end)
	feeds := a.feeds[start]
	delete(a.feeds, start)
	if a.lastStart == start {
		a.lastFeeds = nil
	}
	a.removeStart(start)
	var e partial.Entry // one for the bucket: its address goes to entry, so it lives on the heap
	n := 0
	for _, s := range a.takeDue(start) {
		w := a.WidthOf(s.sig)
		if end%w != 0 {
			continue // a coarse bucket still open
		}
		b := s.at(end-w, w)
		if b == nil {
			continue
		}
		e = partial.Entry{Signal: s.sig.String(), Entity: s.entity, Start: end - w, Sum: b.sum, Count: b.count, LastT: b.lastT}
		if b.acc != nil {
			m, ok := b.acc.(encoding.BinaryMarshaler)
			if !ok {
				return nil, fmt.Errorf("aggregate: accumulator of %s cannot leave the process", Key{s.sig, s.entity})
			}
			var err error
			if e.Acc, err = m.MarshalBinary(); err != nil {
				return nil, fmt.Errorf("aggregate: flush %s: %w", Key{s.sig, s.entity}, err)
			}
		}
		s.drop(b, w)
		entry(s, &e)
		n++
	}
	// The buckets opened from now on are listed or not as this one was.
	a.dueDense = isDense(n, len(a.sortedParts))
	a.closedTo = end
	a.stats.BucketsClosed++
	return feeds, nil
}

// ErrLatePartial is returned for a partial of a bucket stage two has
// already closed; it is counted as late and dropped.
var ErrLatePartial = errors.New("partial of a closed bucket")

// ObservePartial merges one source's state of a series' bucket into the
// open bucket, as if its observations had arrived here. A custom signal's
// first partial in a bucket is taken as it is; a second needs an
// accumulator that merges (obs.Mergeable).
func (a *Aggregator) ObservePartial(e *partial.Entry) error {
	if a.cfg.StageOne {
		return errors.New("aggregate: partial merged into a stage-one aggregator")
	}
	sig, ok := obs.Lookup(e.Signal)
	if !ok {
		return fmt.Errorf("aggregate: partial of unknown signal %q", e.Signal)
	}
	return a.observePartial(sig, e, nil)
}

// observePartial is ObservePartial of an entry whose signal is known.
// found is set when the entity is a string no buffer will reuse (a
// stage-one series' own name, handed off in process): it is where the
// sender keeps the series once found here, and the series is found through
// the cache that observations use, which compares addresses, not bytes.
func (a *Aggregator) observePartial(sig obs.Signal, e *partial.Entry, found **Series) error {
	w := a.WidthOf(sig)
	if e.Start%w != 0 {
		return fmt.Errorf("aggregate: partial %s{%s} starts at %d, off its %dns buckets", e.Signal, e.Entity, e.Start, w)
	}
	// The base bucket its span ends with decides whether it is late.
	base := a.baseEnding(e.Start, w)
	if base < a.closedTo {
		a.stats.Late++
		return ErrLatePartial
	}
	var s *Series
	if found != nil {
		if s = *found; s == nil {
			s = a.lookup(sig, e.Entity)
			*found = s
		}
	} else if s = a.series.get(sig, e.Entity); s == nil {
		// The entity may share memory with its sender's buffers.
		s = a.newSeries(Key{sig, strings.Clone(e.Entity)})
	}
	b := s.bucket(e.Start)
	if b == nil {
		b = s.openAt(e.Start, s.Hist.Width(), sig)
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

// observeFeeds is ObserveFeeds of a stage-one aggregator's own counts.
func (a *Aggregator) observeFeeds(start int64, feeds *feedCounts) error {
	if start < a.closedTo {
		a.stats.Late++
		return ErrLatePartial
	}
	f := a.openFeeds(start)
	if feeds != nil {
		for i, feed := range feeds.feeds {
			if feeds.n[i] > 0 {
				f.add(feed, feeds.n[i])
			}
		}
	}
	return nil
}

// openFeeds returns the feed counts of the base bucket at start, opening it.
func (a *Aggregator) openFeeds(start int64) *feedCounts {
	if a.lastFeeds != nil && a.lastStart == start {
		return a.lastFeeds
	}
	f := a.feeds[start]
	if f == nil {
		f = &feedCounts{}
		a.feeds[start] = f
		a.addStart(start)
	}
	a.lastStart, a.lastFeeds = start, f
	return f
}
