package stage

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/partial"
)

// The partition of a route key is hash/fnv's FNV-1a of it: a deployment
// that upgrades keeps every key on the partition it had.
func TestPartitionIsFNV1a(t *testing.T) {
	r := &Router{n: 6}
	for _, k := range []string{"", "a", "country:UG", "asn:20294", "place/UG/Kampala", "ünïcode"} {
		h := fnv.New32a()
		h.Write([]byte(k))
		want := int(h.Sum32() % 6)
		if k == FeedKey {
			want = 0
		}
		if got := r.Partition(k); got != want {
			t.Errorf("Partition(%q) = %d, want %d", k, got, want)
		}
	}
}

// Split gives what grouping by route key and sorting each group gives,
// whatever the order of the entries it is handed.
func TestSplitGroupsAndSorts(t *testing.T) {
	r := NewRouter(netmap.New(), nil, 4)
	var es []partial.Entry
	for i := range 60 {
		// Entities of several kinds and places, signals out of order.
		ent := []string{"country:UG", "country:KE", "asn:20294", "asn:36977", "feed:flows", "prefix:41.210.130.0/24"}[i%6]
		sig := []string{"traffic_packets", "traffic_bytes"}[i%7%2]
		es = append(es, partial.Entry{Signal: sig, Entity: ent, Start: int64(i % 3), Sum: float64(i), Count: 1})
	}
	f := &aggregate.Flushed{Start: 0, End: 300, Entries: es}
	want := map[string][]partial.Entry{}
	for _, e := range es {
		k := r.Key(e.Entity)
		want[k] = append(want[k], e)
	}
	if len(want) < 3 {
		t.Fatalf("%d route keys: the test wants several", len(want))
	}
	got := Split("src", f, r)
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for i, rb := range got {
		if i > 0 && got[i-1].Batch.Key >= rb.Batch.Key {
			t.Errorf("batch %d key %q after %q", i, rb.Batch.Key, got[i-1].Batch.Key)
		}
		w := want[rb.Batch.Key]
		partial.SortEntries(w)
		if !reflect.DeepEqual(rb.Batch.Entries, w) {
			t.Errorf("key %q: entries %v, want %v", rb.Batch.Key, rb.Batch.Entries, w)
		}
		if rb.Partition != r.Partition(rb.Batch.Key) || rb.Batch.Source != "src" || rb.Batch.Start != 0 || rb.Batch.End != 300 {
			t.Errorf("batch %d: %+v", i, rb)
		}
	}
}

// BenchmarkSplit cuts flushed buckets of a fixture's size (a few dozen
// entries over 3 places) and of a busy collector's (thousands over 40
// places), entries in signal and entity order as the aggregator flushes
// them.
func BenchmarkSplit(b *testing.B) {
	for _, c := range []struct{ entries, places int }{{32, 3}, {4096, 40}} {
		b.Run(fmt.Sprintf("entries=%d/places=%d", c.entries, c.places), func(b *testing.B) {
			r := NewRouter(netmap.New(), nil, 12)
			es := make([]partial.Entry, c.entries)
			for i := range es {
				p := i % c.places
				es[i] = partial.Entry{Signal: []string{"traffic_bytes", "traffic_packets"}[i%2],
					Entity: fmt.Sprintf("country:%c%c", 'A'+p/26, 'A'+p%26), Start: 0, Sum: 1, Count: 1}
			}
			partial.SortEntries(es)
			f := &aggregate.Flushed{Start: 0, End: 300, Entries: es}
			b.ReportAllocs()
			for b.Loop() {
				Split("src", f, r)
			}
		})
	}
}
