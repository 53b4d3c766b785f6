package aggregate

import (
	"bytes"
	"encoding"
	"encoding/gob"
	"fmt"
	"maps"
	"slices"

	"github.com/outagewatch/outagewatch/obs"
)

// snapshot is the serialised form of an aggregator. Signals are stored by
// name so that a checkpoint survives a release that registers new signals.
type snapshot struct {
	Width, Lateness int64
	History         int
	ClosedTo        int64
	Series          []seriesSnap
	Feeds           map[int64]map[string]int64
	// Recent is the feed counts of the closed base buckets that coarse
	// buckets still open span.
	Recent map[int64]map[string]int64
}

type seriesSnap struct {
	Signal string
	Entity string
	Ring   []byte
	Open   []openSnap
	// LastData, Step and Gaps are the series' detected rhythm, and
	// SpacingSum and SpacingN what Spacing averages (0 in a checkpoint
	// from before them: Spacing is Step until gaps are seen again).
	LastData, Step       int64
	Gaps                 int32
	SpacingSum, SpacingN int32
	// ChangeAge, ValueHash, ChangeStep and Changes are the rhythm of its
	// values (0 in a checkpoint from before them: learnt again).
	ChangeAge           int32
	ValueHash           uint32
	ChangeStep, Changes int16
	// BootGap is the longest of the first gaps between readings, in
	// buckets (0 in a checkpoint from before it: the step stands in).
	BootGap int16
}

type openSnap struct {
	Start, Count, LastT int64
	Sum                 float64
	Acc                 []byte
}

// MarshalBinary writes the aggregator's whole state: history and open
// buckets. Custom accumulators must implement encoding.BinaryMarshaler.
func (a *Aggregator) MarshalBinary() ([]byte, error) {
	sn := snapshot{Width: a.cfg.Width, Lateness: a.cfg.Lateness, History: a.cfg.History, ClosedTo: a.closedTo,
		Feeds: map[int64]map[string]int64{}}
	for start, f := range a.feeds {
		m := map[string]int64{}
		for k, v := range f.counts() {
			m[string(k)] = v
		}
		sn.Feeds[start] = m
	}
	if len(a.recent) > 0 {
		sn.Recent = map[int64]map[string]int64{}
		for _, r := range a.recent {
			m := map[string]int64{}
			for k, v := range r.feeds {
				m[string(k)] = v
			}
			sn.Recent[r.start] = m
		}
	}
	for _, s := range a.SortedSeries() {
		ring, err := s.Hist.MarshalBinary()
		if err != nil {
			return nil, err
		}
		ss := seriesSnap{Signal: s.Signal.String(), Entity: s.Entity, Ring: ring, LastData: s.lastData, Step: s.step, Gaps: int32(s.gaps),
			SpacingSum: s.spacingSum, SpacingN: int32(s.spacingN), ChangeAge: s.changeAge, ValueHash: s.valueHash,
			ChangeStep: s.changeStep, Changes: int16(s.changes), BootGap: s.bootGap}
		if ss.Open, err = s.window.snap(s.Key, s.Hist.Width()); err != nil {
			return nil, err
		}
		sn.Series = append(sn.Series, ss)
	}
	// A stage-one aggregator's series: open buckets only.
	for _, p := range a.sortParts() {
		open, err := p.window.snap(Key{p.sig, p.entity}, a.WidthOf(p.sig))
		if err != nil {
			return nil, err
		}
		sn.Series = append(sn.Series, seriesSnap{Signal: p.sig.String(), Entity: p.entity, Open: open})
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&sn); err != nil {
		return nil, fmt.Errorf("aggregate: checkpoint: %w", err)
	}
	return buf.Bytes(), nil
}

// snap returns the open buckets of series k, of width w.
func (s *window) snap(k Key, w int64) ([]openSnap, error) {
	var out []openSnap
	for i, b := range s.open {
		if !b.used {
			continue
		}
		os := openSnap{Start: s.openBase + int64(i)*w, Count: b.count, LastT: b.lastT, Sum: b.sum}
		if b.acc != nil {
			m, ok := b.acc.(encoding.BinaryMarshaler)
			if !ok {
				return nil, fmt.Errorf("aggregate: accumulator of %s cannot be checkpointed", k)
			}
			var err error
			if os.Acc, err = m.MarshalBinary(); err != nil {
				return nil, fmt.Errorf("aggregate: checkpoint %s: %w", k, err)
			}
		}
		out = append(out, os)
	}
	return out, nil
}

// restore reopens the buckets snap took of series k, of width w.
func (s *window) restore(open []openSnap, k Key, w int64) error {
	for _, os := range open {
		ob := s.openAt(os.Start, w, k.Signal)
		ob.count, ob.lastT, ob.sum = os.Count, os.LastT, os.Sum
		if ob.acc != nil {
			u, ok := ob.acc.(encoding.BinaryUnmarshaler)
			if !ok {
				return fmt.Errorf("aggregate: accumulator of %s cannot be restored", k)
			}
			if err := u.UnmarshalBinary(os.Acc); err != nil {
				return fmt.Errorf("aggregate: restore %s: %w", k, err)
			}
		}
	}
	return nil
}

// UnmarshalBinary restores state written by MarshalBinary into an empty
// aggregator. Series of signals this build does not know are dropped with
// an error listing them, after everything else is restored.
func (a *Aggregator) UnmarshalBinary(b []byte) error {
	var sn snapshot
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&sn); err != nil {
		return fmt.Errorf("aggregate: restore: %w", err)
	}
	if sn.Width != a.cfg.Width || sn.History != a.cfg.History {
		return fmt.Errorf("aggregate: checkpoint has %dns buckets × %d, configured %dns × %d",
			sn.Width, sn.History, a.cfg.Width, a.cfg.History)
	}
	a.restores++
	a.closedTo = sn.ClosedTo
	a.feeds = map[int64]*feedCounts{}
	for start, f := range sn.Feeds {
		m := &feedCounts{}
		for _, k := range slices.Sorted(maps.Keys(f)) {
			m.add(obs.Feed(k), f[k])
		}
		a.feeds[start] = m
		a.addStart(start)
	}
	a.recent = nil
	for _, start := range slices.Sorted(maps.Keys(sn.Recent)) {
		m := map[obs.Feed]int64{}
		for k, v := range sn.Recent[start] {
			m[obs.Feed(k)] = v
		}
		a.recent = append(a.recent, closedFeeds{start, m})
	}
	var unknown []string
	for _, ss := range sn.Series {
		sig, ok := obs.Lookup(ss.Signal)
		if !ok {
			unknown = append(unknown, ss.Signal)
			continue
		}
		if a.cfg.StageOne {
			// A checkpoint of stage one before it kept parts carries a
			// one-bucket ring as well, with nothing in it to keep.
			p := a.newPart(sig, ss.Entity)
			w := a.WidthOf(sig)
			if err := p.restore(ss.Open, Key{sig, ss.Entity}, w); err != nil {
				return err
			}
			for _, o := range ss.Open {
				a.markDue(p, a.baseEnding(o.Start, w))
			}
			continue
		}
		s := a.newSeries(Key{sig, ss.Entity})
		s.lastData, s.step, s.gaps = ss.LastData, ss.Step, int8(max(min(ss.Gaps, minGaps), 0))
		s.spacingSum, s.spacingN = ss.SpacingSum, int16(min(ss.SpacingN, 1<<14))
		s.changeAge, s.valueHash, s.changeStep = ss.ChangeAge, ss.ValueHash, ss.ChangeStep
		s.changes, s.bootGap = int8(max(min(ss.Changes, heldChanges), 0)), max(ss.BootGap, 0)
		if err := s.Hist.UnmarshalBinary(ss.Ring); err != nil {
			return fmt.Errorf("aggregate: restore %s: %w", s.Key, err)
		}
		if err := s.restore(ss.Open, s.Key, s.Hist.Width()); err != nil {
			return err
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("aggregate: checkpoint has series of unknown signals %v", unknown)
	}
	return nil
}
