package aggregate

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"github.com/outagewatch/outagewatch/obs"
)

// A stage-one series is what it needs until its buckets leave: its name,
// its open buckets and the stage-two series it is merged into. Growing it
// costs a million-series process a byte a series per byte.
func TestPartSize(t *testing.T) {
	if n := unsafe.Sizeof(part{}); n != 64 {
		t.Errorf("part is %d bytes, want 64", n)
	}
}

// handOff hands every bucket of one up to wm to a new stage two and
// returns what it closes.
func handOff(t *testing.T, one *Aggregator, wm int64) collected {
	t.Helper()
	two := New(Config{})
	if err := one.Handoff(wm, two, func(err error) { t.Fatal(err) }); err != nil {
		t.Fatal(err)
	}
	var c collected
	two.Advance(wm, c.fn)
	return c
}

// A stage-one checkpoint restores the open buckets of every series,
// custom accumulators included, and what the restored one hands off is
// what the original would have.
func TestStageOneCheckpointRoundTrip(t *testing.T) {
	one := New(Config{History: 1, StageOne: true})
	for _, o := range []*obs.Observation{
		obsAt(t0+10e9, obs.TrafficBytes, "asn:1", 100),
		obsAt(t0+20e9, obs.TrafficBytes, "asn:1", 50),
		obsAt(t0+30e9, rms, "dc:a", 3),
		obsAt(t0+31e9, rms, "dc:a", 4),
		obsAt(t0+min5+1, obs.TrafficBytes, "asn:2", 6),
		obsAt(t0+min5+2, gauge, "asn:1", 8),
	} {
		one.Observe(o)
	}
	back := restored(t, one, Config{History: 1, StageOne: true})
	if n := back.Stats().Series; n != 4 {
		t.Fatalf("restored %d series, want 4", n)
	}
	c := handOff(t, back, t0+2*min5)
	if p := c.values[t0]["traffic_bytes{asn:1}"]; p.Value != 150 || p.Count != 2 {
		t.Errorf("asn:1 first bucket %+v, want 150 of 2", p)
	}
	if p := c.values[t0]["test_rms{dc:a}"]; p.Value != math.Sqrt(25.0/2) || p.Count != 2 {
		t.Errorf("rms %+v, want √(25/2) of 2", p)
	}
	if p := c.values[t0+min5]["traffic_bytes{asn:2}"]; p.Value != 6 || p.Count != 1 {
		t.Errorf("asn:2 second bucket %+v, want 6 of 1", p)
	}
	if p := c.values[t0+min5]["test_gauge{asn:1}"]; p.Value != 8 || p.Count != 1 {
		t.Errorf("gauge second bucket %+v, want 8 of 1", p)
	}
}

// A decoder that numbers series (flows) adds to stage one by number.
func TestStageOneSeriesID(t *testing.T) {
	one := New(Config{History: 1, StageOne: true})
	if _, ok := one.SeriesID(obs.TrafficBytes, "asn:1"); ok {
		t.Fatal("a series that does not exist yet has a number")
	}
	one.Observe(obsAt(t0+1, obs.TrafficBytes, "asn:2", 1))
	one.Observe(obsAt(t0+2, obs.TrafficBytes, "asn:1", 2))
	id, ok := one.SeriesID(obs.TrafficBytes, "asn:1")
	if !ok || id != 1 {
		t.Fatalf("asn:1 is %d, %v; want 1 (the second series)", id, ok)
	}
	one.ObserveSeries(id, t0+3, 40)
	c := handOff(t, one, t0+min5)
	if p := c.values[t0]["traffic_bytes{asn:1}"]; p.Value != 42 || p.Count != 2 {
		t.Errorf("asn:1 %+v, want 42 of 2", p)
	}
	if p := c.values[t0]["traffic_bytes{asn:2}"]; p.Value != 1 || p.Count != 1 {
		t.Errorf("asn:2 %+v, want 1 of 1", p)
	}
}

// Handoff keeps the stage-two series it found for each stage-one series;
// handing off into another aggregator finds them again there.
func TestHandoffIntoAnotherAggregator(t *testing.T) {
	one := New(Config{History: 1, StageOne: true})
	one.Observe(obsAt(t0+1, obs.TrafficBytes, "asn:1", 5))
	first := handOff(t, one, t0+min5)
	one.Observe(obsAt(t0+min5+1, obs.TrafficBytes, "asn:1", 7))
	second := New(Config{})
	if err := second.ObserveFeeds(t0, nil); err != nil {
		t.Fatal(err)
	}
	second.Advance(t0+min5, nil)
	if err := one.Handoff(t0+2*min5, second, func(err error) { t.Fatal(err) }); err != nil {
		t.Fatal(err)
	}
	var c collected
	second.Advance(t0+2*min5, c.fn)
	if p := first.values[t0]["traffic_bytes{asn:1}"]; p.Value != 5 {
		t.Errorf("first aggregator %+v, want 5", p)
	}
	if p := c.values[t0+min5]["traffic_bytes{asn:1}"]; p.Value != 7 || p.Count != 1 {
		t.Errorf("second aggregator %+v, want 7 of 1", p)
	}
}

// Buckets of an aggregator with history close through Advance, and
// partials merge into stage two, not stage one.
func TestStagesRefuseTheOtherStagesWork(t *testing.T) {
	two := New(Config{})
	two.Observe(obsAt(t0+1, obs.TrafficBytes, "asn:1", 5))
	if err := two.Flush(t0+min5, func(*Flushed) { t.Fatal("flushed") }); !errors.Is(err, errNotStageOne) {
		t.Errorf("Flush of stage two: %v, want errNotStageOne", err)
	}
	one := New(Config{History: 1, StageOne: true})
	one.Observe(obsAt(t0+1, obs.TrafficBytes, "asn:1", 5))
	var f *Flushed
	if err := one.Flush(t0+min5, func(x *Flushed) { f = keep(x) }); err != nil {
		t.Fatal(err)
	}
	if len(f.Entries) != 1 || f.Entries[0].Sum != 5 || f.Entries[0].Entity != "asn:1" {
		t.Fatalf("flushed %+v, want asn:1's 5", f.Entries)
	}
	if err := one.ObservePartial(&f.Entries[0]); err == nil {
		t.Error("a partial merged into stage one")
	}
}

// A flush takes exactly the parts with data in its bucket, sorted,
// whether they are listed (a few of many) or all walked (a quarter or more),
// and a coarse part leaves with the base bucket that ends its own, also
// after a restore.
func TestStageOneFlushTakesTheDueParts(t *testing.T) {
	one := New(Config{History: 1, StageOne: true})
	for i := range 100 {
		one.Observe(obsAt(t0+1e9, obs.TrafficBytes, "asn:"+strconv.Itoa(100+i), 1))
	}
	// The second bucket: three of the forty, out of order, and a
	// half-hourly gauge whose bucket ends with the third (t0 is a quarter
	// past a half hour).
	for _, o := range []*obs.Observation{
		obsAt(t0+min5+3, obs.TrafficBytes, "asn:139", 5),
		obsAt(t0+min5+1, obs.TrafficBytes, "asn:101", 6),
		obsAt(t0+min5+2, mean, "zone:b", 2),
		obsAt(t0+min5+4, obs.TrafficBytes, "asn:101", 1),
		obsAt(t0+min5+5, halfHourly, "region:x", 9),
	} {
		one.Observe(o)
	}
	one = restored(t, one, Config{History: 1, StageOne: true})
	one.Observe(obsAt(t0+2*min5+1, obs.TrafficBytes, "asn:120", 7))
	type got struct {
		start int64
		keys  []string
		sums  []float64
	}
	var flushed []got
	if err := one.Flush(t0+6*min5, func(f *Flushed) {
		g := got{start: f.Start}
		for _, e := range f.Entries {
			g.keys = append(g.keys, e.Signal+"{"+e.Entity+"}")
			g.sums = append(g.sums, e.Sum)
		}
		flushed = append(flushed, g)
	}); err != nil {
		t.Fatal(err)
	}
	if len(flushed) != 6 || len(flushed[0].keys) != 100 || !slices.IsSorted(flushed[0].keys) {
		t.Fatalf("flushed %d buckets, the first with %d entries; want 6, 100 sorted", len(flushed), len(flushed[0].keys))
	}
	want := []got{
		// Sorted as every flush sorts: by signal (in the order signals
		// were registered), then entity.
		{t0 + min5, []string{"traffic_bytes{asn:101}", "traffic_bytes{asn:139}", "test_mean{zone:b}"}, []float64{7, 5, 2}},
		{t0 + 2*min5, []string{"traffic_bytes{asn:120}", "test_half_hourly{region:x}"}, []float64{7, 9}},
		{t0 + 3*min5, nil, nil},
		{t0 + 4*min5, nil, nil},
		{t0 + 5*min5, nil, nil},
	}
	for i, w := range want {
		g := flushed[i+1]
		if g.start != w.start || !slices.Equal(g.keys, w.keys) || !slices.Equal(g.sums, w.sums) {
			t.Errorf("bucket %d: %v %v, want %v %v", (g.start-t0)/min5, g.keys, g.sums, w.keys, w.sums)
		}
	}
	// Most of the parts with data in a bucket again: it is walked whole,
	// and takes the same entries a list would.
	for i := range 100 {
		if i%3 != 0 {
			one.Observe(obsAt(t0+6*min5+1e9, obs.TrafficBytes, "asn:"+strconv.Itoa(100+i), float64(i)))
		}
	}
	flushed = nil
	if err := one.Flush(t0+7*min5, func(f *Flushed) {
		g := got{start: f.Start}
		for _, e := range f.Entries {
			g.keys = append(g.keys, e.Entity)
			g.sums = append(g.sums, e.Sum)
		}
		flushed = append(flushed, g)
	}); err != nil {
		t.Fatal(err)
	}
	if len(flushed) != 1 || len(flushed[0].keys) != 66 || !slices.IsSorted(flushed[0].keys) ||
		flushed[0].keys[0] != "asn:101" || flushed[0].sums[65] != 98 {
		t.Fatalf("dense bucket %+v", flushed)
	}
}

// BenchmarkStageOneSparseFlush is one bucket of a sparse input partition:
// 10,000 series known, 20 of them with data, flushed. Its cost should
// follow the 20, not the 10,000.
func BenchmarkStageOneSparseFlush(b *testing.B) {
	const known, active = 10000, 20
	a := New(Config{History: 1, StageOne: true})
	ents := make([]string, known)
	for i := range ents {
		ents[i] = obs.ASN(uint32(i + 1))
		a.Observe(obsAt(t0, obs.TrafficBytes, ents[i], 1))
	}
	if err := a.Flush(t0+min5, func(*Flushed) {}); err != nil {
		b.Fatal(err)
	}
	o := obs.Observation{Signal: obs.TrafficBytes, Value: 1500}
	entries := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := t0 + int64(i+1)*min5
		for j := range active {
			o.Time, o.Entity = start+int64(j), ents[(i*7919+j*104729)%known]
			a.Observe(&o)
		}
		if err := a.Flush(start+min5, func(f *Flushed) { entries += len(f.Entries) }); err != nil {
			b.Fatal(err)
		}
	}
	if entries != active*b.N {
		b.Fatalf("flushed %d entries, want %d", entries, active*b.N)
	}
}
