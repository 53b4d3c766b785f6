package stage

import (
	"maps"
	"slices"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/partial"
)

// Routed is a batch with the partition it goes to.
type Routed struct {
	Partition int
	Batch     *partial.Batch
}

// Split cuts one flushed bucket of a source into one batch per route key,
// in key order, so that a re-flush gives the same records.
func Split(source string, f *aggregate.Flushed, r *Router) []Routed {
	by := map[string][]partial.Entry{}
	for _, e := range f.Entries {
		k := r.Key(e.Entity)
		by[k] = append(by[k], e)
	}
	out := make([]Routed, 0, len(by))
	for _, k := range slices.Sorted(maps.Keys(by)) {
		es := by[k]
		partial.SortEntries(es)
		out = append(out, Routed{Partition: r.Partition(k),
			Batch: &partial.Batch{Source: source, Start: f.Start, End: f.End, Key: k, Entries: es}})
	}
	return out
}

// FeedCounts lists a flushed bucket's feed counts in feed order.
func FeedCounts(f *aggregate.Flushed) []partial.FeedCount {
	var out []partial.FeedCount
	for _, feed := range slices.Sorted(maps.Keys(f.Feeds)) {
		out = append(out, partial.FeedCount{Start: f.Start, Feed: string(feed), N: f.Feeds[feed]})
	}
	return out
}
