package pipeline

import (
	"errors"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/partial"
)

// Flush is stage one's watermark: every bucket of the decoded records that
// ends at or before wm leaves through fn, with the routing gauges of that
// bucket, and is forgotten here.
func (p *Pipeline) Flush(wm int64, fn func(*aggregate.Flushed)) error {
	return p.agg.flush(wm, fn)
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
func (p *Pipeline) MergeEntry(e *partial.Entry) error { return p.agg.mergeEntry(e) }

// MergeFeeds adds one source's feed counts of the bucket at start.
func (p *Pipeline) MergeFeeds(start int64, feeds map[obs.Feed]int64) error {
	return p.agg.mergeFeeds(start, feeds)
}

// Close is stage two's watermark: every bucket ending at or before wm
// closes and goes down the chain (judge, alert, correlate, out).
func (p *Pipeline) Close(wm int64) { p.agg.close(wm, p.bucket) }
