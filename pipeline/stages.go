package pipeline

import (
	"errors"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/partial"
)

// preConfig is stage one's aggregator: the same buckets and lateness, and
// no history, since stage one judges nothing.
func preConfig(c aggregate.Config) aggregate.Config {
	c.History = 1
	c.StageOne = true
	return c
}

// Flush is stage one's watermark: every bucket of the decoded records that
// ends at or before wm leaves through fn, with the routing gauges of that
// bucket, and is forgotten here.
func (p *Pipeline) Flush(wm int64, fn func(*aggregate.Flushed)) error {
	if p.pre == p.agg {
		return errors.New("pipeline: a one-stage pipeline has no stage one to flush")
	}
	err := p.pre.Flush(wm, fn)
	p.mu.Lock()
	p.aggStats = p.aggregateStats()
	p.mu.Unlock()
	return err
}

// Merge is stage two's input: one source's bucket, merged into the open
// buckets as its observations would have been. A late or malformed entry
// is counted and skipped; the rest of the bucket still merges; the errors
// are returned joined.
func (p *Pipeline) Merge(f *aggregate.Flushed) error {
	var errs []error
	for i := range f.Entries {
		if err := p.MergeEntry(&f.Entries[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := p.MergeFeeds(f.Start, f.Feeds); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// MergeEntry merges one series' partial state of a bucket (stage two).
func (p *Pipeline) MergeEntry(e *partial.Entry) error {
	if err := p.agg.ObservePartial(e); err != nil {
		p.countPartialError(err)
		return err
	}
	return nil
}

// MergeFeeds adds one source's feed counts of the bucket at start.
func (p *Pipeline) MergeFeeds(start int64, feeds map[obs.Feed]int64) error {
	if err := p.agg.ObserveFeeds(start, feeds); err != nil {
		p.countPartialError(err)
		return err
	}
	return nil
}

func (p *Pipeline) countPartialError(err error) {
	reason := "partial/malformed"
	if errors.Is(err, aggregate.ErrLatePartial) {
		reason = "partial/late"
	}
	p.mu.Lock()
	if p.errs[reason] == 0 && reason != "partial/late" {
		p.log.Warn("partial does not merge; skipped, further ones only counted", "err", err)
	}
	p.errs[reason]++
	p.mu.Unlock()
}

// Close is stage two's watermark: every bucket ending at or before wm
// closes and is judged.
func (p *Pipeline) Close(wm int64) {
	p.agg.Advance(wm, p.judge)
	p.mu.Lock()
	p.watermark = max(p.watermark, wm)
	p.aggStats = p.aggregateStats()
	p.mu.Unlock()
}
