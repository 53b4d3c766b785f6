package aggregate

import (
	"errors"
	"slices"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

// Two stage-one aggregators, each fed half the observations, flushed and
// merged into one stage-two aggregator, close the buckets one aggregator
// fed everything closes: sums, means, maxima, the latest gauge, counts and
// the feed counts that tell zero from no data.
func TestFlushMergeEqualsOneAggregator(t *testing.T) {
	all := []*obs.Observation{
		obsAt(t0+10e9, obs.TrafficBytes, "asn:1", 100),
		obsAt(t0+20e9, obs.TrafficBytes, "asn:1", 50),
		obsAt(t0+30e9, mean, "zone:a", 1),
		obsAt(t0+40e9, mean, "zone:a", 0),
		obsAt(t0+41e9, mean, "zone:a", 0),
		obsAt(t0+50e9, mx, "zone:a", 3),
		obsAt(t0+51e9, mx, "zone:a", 9),
		obsAt(t0+60e9, gauge, "asn:1", 7),
		obsAt(t0+70e9, gauge, "asn:1", 8), // the latest wins
		obsAt(t0+min5+5, obs.TrafficBytes, "asn:2", 4),
	}
	one := New(Config{})
	for _, o := range all {
		one.Observe(o)
	}
	var want collected
	one.Advance(t0+2*min5, want.fn)

	pre := []*Aggregator{New(Config{History: 1, StageOne: true}), New(Config{History: 1, StageOne: true})}
	for i, o := range all {
		pre[i%2].Observe(o)
	}
	two := New(Config{})
	for _, p := range pre {
		if err := p.Flush(t0+2*min5, func(f *Flushed) {
			for i := range f.Entries {
				if err := two.ObservePartial(&f.Entries[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := two.ObserveFeeds(f.Start, f.Feeds); err != nil {
				t.Fatal(err)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	var got collected
	two.Advance(t0+2*min5, got.fn)
	if len(got.starts) != 2 || got.starts[0] != t0 || got.starts[1] != t0+min5 {
		t.Fatalf("closed %v, want %v", got.starts, want.starts)
	}
	for _, start := range want.starts {
		for k, w := range want.values[start] {
			g, ok := got.values[start][k]
			if !ok || g.Value != w.Value && !(g.Missing && w.Missing) || g.Count != w.Count || g.Missing != w.Missing {
				t.Errorf("bucket %d %s: got %+v, want %+v", start, k, g, w)
			}
		}
		if len(got.values[start]) != len(want.values[start]) {
			t.Errorf("bucket %d: %d points, want %d", start, len(got.values[start]), len(want.values[start]))
		}
	}
	// asn:1 sent nothing in the second bucket while flows did: a real zero.
	if p := got.values[t0+min5]["traffic_bytes{asn:1}"]; p.Missing || p.Value != 0 {
		t.Errorf("asn:1 in the second bucket: %+v, want 0", p)
	}
	if v := got.values[t0]["test_mean{zone:a}"].Value; v != 1.0/3 {
		t.Errorf("mean %v, want 1/3", v)
	}
}

// A partial of a bucket stage two has closed is late: counted and refused.
func TestLatePartial(t *testing.T) {
	a := New(Config{})
	a.Observe(obsAt(t0+1, obs.TrafficBytes, "asn:1", 1))
	a.Advance(t0+min5, nil)
	f := New(Config{History: 1, StageOne: true})
	f.Observe(obsAt(t0+2, obs.TrafficBytes, "asn:1", 1))
	var flushed *Flushed
	if err := f.Flush(t0+min5, func(x *Flushed) { flushed = keep(x) }); err != nil {
		t.Fatal(err)
	}
	if err := a.ObservePartial(&flushed.Entries[0]); !errors.Is(err, ErrLatePartial) {
		t.Fatalf("got %v, want ErrLatePartial", err)
	}
	if a.Stats().Late != 1 {
		t.Fatalf("late %d, want 1", a.Stats().Late)
	}
	bad := flushed.Entries[0]
	bad.Signal = "no_such_signal"
	if err := a.ObservePartial(&bad); err == nil {
		t.Fatal("unknown signal merged")
	}
}

// keep copies a Flushed out of Flush's callback, after which its entries
// are reused.
func keep(f *Flushed) *Flushed {
	c := *f
	c.Entries = slices.Clone(f.Entries)
	return &c
}
