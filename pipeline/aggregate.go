package pipeline

import (
	"errors"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/partial"
)

// aggregateStage buckets observations in event time. pre is stage one:
// decoded observations accumulate there per bucket until the watermark
// passes it, then leave as partials (flush). agg is stage two: partials
// merge there into the buckets detectors judge, and keep their history.
// In one process the partials go straight from one to the other
// (handoff). Its state is both aggregators' buckets
// and history; its counters are the aggregators' (observations, late,
// buckets, series), the watermark and the partials refused.
type aggregateStage struct {
	pre, agg *aggregate.Aggregator
	log      *slog.Logger

	mu sync.Mutex
	// stats is the aggregators' counters as of the last record or bucket,
	// copied under mu so that Stats never reads an aggregator while the
	// processing goroutine writes it.
	stats     aggregate.Stats
	watermark int64
	errs      map[string]int64 // "partial/late", "partial/malformed"
}

func newAggregateStage(cfg Config) *aggregateStage {
	return &aggregateStage{pre: aggregate.New(preConfig(cfg.Aggregate)), agg: aggregate.New(cfg.Aggregate), log: cfg.Logger,
		errs: map[string]int64{}}
}

// preConfig is stage one's aggregator: the same buckets and lateness, and
// no history, since stage one judges nothing.
func preConfig(c aggregate.Config) aggregate.Config {
	c.History = 1
	c.StageOne = true
	return c
}

func (a *aggregateStage) Name() string { return "aggregate" }

// refresh copies the aggregators' counters.
func (a *aggregateStage) refresh() {
	s := a.aggregateStats()
	a.mu.Lock()
	a.stats = s
	a.mu.Unlock()
}

// aggregateStats counts observations where they arrive (stage one),
// buckets and series where they are judged (stage two), and late data in
// both.
func (a *aggregateStage) aggregateStats() aggregate.Stats {
	s, t := a.pre.Stats(), a.agg.Stats()
	// Every series judged was first a series of stage one, which keeps
	// them all; it also has those whose first bucket is still open.
	return aggregate.Stats{Observations: s.Observations, Late: s.Late + t.Late, BucketsClosed: t.BucketsClosed,
		Series: max(s.Series, t.Series)}
}

// flush sends every bucket of stage one ending at or before wm to fn.
func (a *aggregateStage) flush(wm int64, fn func(*aggregate.Flushed)) error {
	err := a.pre.Flush(wm, fn)
	a.refresh()
	return err
}

// handoff moves every bucket of stage one ending at or before wm into
// stage two, in process.
func (a *aggregateStage) handoff(wm int64) {
	if err := a.pre.Handoff(wm, a.agg, a.rejectHandoff); err != nil {
		a.log.Error("bucket not flushed", "err", err)
	}
}

// rejectHandoff counts a partial that stage two refused in process, where
// it is a bug in this build rather than bad input: logged, never silent.
func (a *aggregateStage) rejectHandoff(err error) {
	a.countPartialError(err)
	a.log.Error("partial not merged", "err", err)
}

func (a *aggregateStage) mergeEntry(e *partial.Entry) error {
	if err := a.agg.ObservePartial(e); err != nil {
		a.countPartialError(err)
		return err
	}
	return nil
}

func (a *aggregateStage) mergeFeeds(start int64, feeds map[obs.Feed]int64) error {
	if err := a.agg.ObserveFeeds(start, feeds); err != nil {
		a.countPartialError(err)
		return err
	}
	return nil
}

func (a *aggregateStage) countPartialError(err error) {
	reason := "partial/malformed"
	if errors.Is(err, aggregate.ErrLatePartial) {
		reason = "partial/late"
	}
	a.mu.Lock()
	if a.errs[reason] == 0 && reason != "partial/late" {
		a.log.Warn("partial does not merge; skipped, further ones only counted", "err", err)
	}
	a.errs[reason]++
	a.mu.Unlock()
}

// isPartialError says whether an error counter is aggregate's (a refused
// partial) rather than decode's (stream/reason).
func isPartialError(k string) bool { return strings.HasPrefix(k, "partial/") }

// close closes every bucket of stage two ending at or before wm, in
// order, each going to judge.
func (a *aggregateStage) close(wm int64, judge func(*aggregate.Closed)) {
	a.agg.Advance(wm, judge)
	s := a.aggregateStats()
	a.mu.Lock()
	a.watermark = max(a.watermark, wm)
	a.stats = s
	a.mu.Unlock()
}

// level reads a series' history, for the correlator's traffic shares.
func (a *aggregateStage) level(signal, entity string, t time.Time) (float64, bool) {
	sig, ok := obs.Lookup(signal)
	if !ok {
		return 0, false
	}
	s := a.agg.Series(aggregate.Key{Signal: sig, Entity: entity})
	if s == nil {
		return 0, false
	}
	return s.Hist.Get(t.UnixNano())
}

// Counters are the observations in, the late ones, the buckets closed,
// the series, the watermark and the refused partials.
func (a *aggregateStage) Counters() map[string]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := map[string]int64{"observations": a.stats.Observations, "late": a.stats.Late,
		"buckets_closed": a.stats.BucketsClosed, "series": int64(a.stats.Series), "watermark": a.watermark}
	for k, v := range a.errs {
		c["errors/"+k] = v
	}
	return c
}

func (a *aggregateStage) save(cp *checkpoint) error {
	var err error
	if cp.Aggregator, err = a.agg.MarshalBinary(); err != nil {
		return err
	}
	if cp.Pre, err = a.pre.MarshalBinary(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cp.Watermark = a.watermark
	if cp.Errors == nil {
		cp.Errors = map[string]int64{}
	}
	maps.Copy(cp.Errors, a.errs)
	return nil
}

func (a *aggregateStage) restore(cp *checkpoint) error {
	if err := a.agg.UnmarshalBinary(cp.Aggregator); err != nil {
		return err
	}
	if len(cp.Pre) > 0 {
		if err := a.pre.UnmarshalBinary(cp.Pre); err != nil {
			return err
		}
	}
	s := a.aggregateStats()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.watermark, a.stats, a.errs = cp.Watermark, s, map[string]int64{}
	for k, v := range cp.Errors {
		if isPartialError(k) {
			a.errs[k] = v
		}
	}
	return nil
}
