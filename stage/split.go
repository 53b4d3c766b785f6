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
// in key order, so that a re-flush gives the same records. It runs for
// every bucket of every source, over entries already in signal and entity
// order, so it sorts each key's entries only when they are not, and puts
// them all in one array (a stable counting sort by key) where a map of
// growing slices took an allocation per key and per doubling.
func Split(source string, f *aggregate.Flushed, r *Router) []Routed {
	if len(f.Entries) == 0 {
		return nil
	}
	keys := make([]string, len(f.Entries))
	for i := range f.Entries {
		keys[i] = r.Key(f.Entries[i].Entity)
	}
	uniq := slices.Compact(slices.Sorted(slices.Values(keys)))
	// at[j] is where key uniq[j]'s entries start in the array.
	at := make([]int, len(uniq)+1)
	for _, k := range keys {
		j, _ := slices.BinarySearch(uniq, k)
		at[j+1]++
	}
	for j := range uniq {
		at[j+1] += at[j]
	}
	es := make([]partial.Entry, len(f.Entries))
	next := slices.Clone(at[:len(uniq)])
	for i, k := range keys {
		j, _ := slices.BinarySearch(uniq, k)
		es[next[j]] = f.Entries[i]
		next[j]++
	}
	out := make([]Routed, len(uniq))
	batches := make([]partial.Batch, len(uniq))
	for j, k := range uniq {
		// Full slice expressions: a batch's entries end where the next
		// key's begin.
		part := es[at[j]:at[j+1]:at[j+1]]
		if !slices.IsSortedFunc(part, partial.CompareEntries) {
			partial.SortEntries(part)
		}
		batches[j] = partial.Batch{Source: source, Start: f.Start, End: f.End, Key: k, Entries: part}
		out[j] = Routed{Partition: r.Partition(k), Batch: &batches[j]}
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
