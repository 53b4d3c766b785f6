package stage

import (
	"maps"
	"slices"
	"strings"

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
// growing slices took an allocation per key and per doubling. A bucket
// holds many entries and few keys (the places of a deployment), so only
// the distinct keys are sorted, each entry found among them by its last
// one or a map.
func Split(source string, f *aggregate.Flushed, r *Router) []Routed {
	if len(f.Entries) == 0 {
		return nil
	}
	// of[i] is entry i's key, as its index in uniq (keys in the order
	// first seen).
	of := make([]int32, len(f.Entries))
	var uniq []string
	var index map[string]int32
	last := int32(-1)
	for i := range f.Entries {
		k := r.Key(f.Entries[i].Entity)
		if last < 0 || uniq[last] != k {
			j, ok := int32(0), false
			if index != nil {
				j, ok = index[k]
			} else if x := slices.Index(uniq, k); x >= 0 {
				j, ok = int32(x), true
			}
			if !ok {
				j = int32(len(uniq))
				uniq = append(uniq, k)
				if index != nil {
					index[k] = j
				} else if len(uniq) > splitScan {
					index = make(map[string]int32, 2*len(uniq))
					for x, k := range uniq {
						index[k] = int32(x)
					}
				}
			}
			last = j
		}
		of[i] = last
	}
	// order lists the keys sorted; rank[j] is where uniq[j] is in it, and
	// at[x] where the entries of the x-th key in order start.
	order := make([]int32, 3*len(uniq)+1)
	order, rank, at := order[:len(uniq)], order[len(uniq):2*len(uniq)], order[2*len(uniq):]
	for j := range order {
		order[j] = int32(j)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(uniq[a], uniq[b]) })
	for x, j := range order {
		rank[j] = int32(x)
	}
	for _, j := range of {
		at[rank[j]+1]++
	}
	for x := range order {
		at[x+1] += at[x]
	}
	es := make([]partial.Entry, len(f.Entries))
	for i, j := range of {
		// at[x] moves on as the key's entries are placed, and ends
		// where the next key's begin; starts are read back from it.
		es[at[rank[j]]] = f.Entries[i]
		at[rank[j]]++
	}
	out := make([]Routed, len(uniq))
	batches := make([]partial.Batch, len(uniq))
	from := int32(0)
	for x, j := range order {
		// Full slice expressions: a batch's entries end where the next
		// key's begin.
		part := es[from:at[x]:at[x]]
		from = at[x]
		if !slices.IsSortedFunc(part, partial.CompareEntries) {
			partial.SortEntries(part)
		}
		k := uniq[j]
		batches[x] = partial.Batch{Source: source, Start: f.Start, End: f.End, Key: k, Entries: part}
		out[x] = Routed{Partition: r.Partition(k), Batch: &batches[x]}
	}
	return out
}

// splitScan is how many distinct keys Split finds an entry's among by a
// scan before it builds a map of them: a few string compares cost less
// than a hash.
const splitScan = 8

// FeedCounts lists a flushed bucket's feed counts in feed order.
func FeedCounts(f *aggregate.Flushed) []partial.FeedCount {
	var out []partial.FeedCount
	for _, feed := range slices.Sorted(maps.Keys(f.Feeds)) {
		out = append(out, partial.FeedCount{Start: f.Start, Feed: string(feed), N: f.Feeds[feed]})
	}
	return out
}
