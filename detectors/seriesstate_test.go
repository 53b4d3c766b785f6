package detectors

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"reflect"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
)

// seriesOf returns a new aggregator's series of entities, numbered 0, 1…
func seriesOf(entities ...string) []*aggregate.Series {
	a := aggregate.New(aggregate.Config{})
	var out []*aggregate.Series
	for _, e := range entities {
		a.Observe(&obs.Observation{Time: 1e9, Signal: testFailureRatio, Entity: e, Value: 1})
		out = append(out, a.Series(aggregate.Key{Signal: testFailureRatio, Entity: e}))
	}
	return out
}

func name(e string) string { return testFailureRatio.String() + "{" + e + "}" }

// Two aggregators number their series alike; their states must not mix,
// each series must find its own state again by number, and the same
// entity through another aggregator (one restored) keeps its state.
func TestSeriesStatesKeepsAggregatorsApart(t *testing.T) {
	one, two := seriesOf("zone:a", "zone:b"), seriesOf("zone:c")
	if one[0].ID() != 0 || one[1].ID() != 1 || two[0].ID() != 0 {
		t.Fatalf("ids %d %d %d, want 0 1 0", one[0].ID(), one[1].ID(), two[0].ID())
	}
	var b seriesStates[dropSeries]
	a0, c0 := b.get(one[0]), b.get(two[0])
	if a0 == c0 {
		t.Fatal("series 0 of two aggregators share a state")
	}
	a0.Run, c0.Run = 1, 2
	if got := b.get(one[0]); got != a0 || got.Run != 1 {
		t.Fatalf("zone:a found the state of run %d, want its own of 1", got.Run)
	}
	if got := b.get(two[0]); got != c0 || got.Run != 2 {
		t.Fatalf("zone:c found the state of run %d, want its own of 2", got.Run)
	}
	if got := b.get(one[1]); got.Run != 0 || b.len() != 3 {
		t.Fatalf("zone:b: run %d, %d states, want a fresh one of 3", got.Run, b.len())
	}
	m := b.byName()
	if len(m) != 3 || m[name("zone:a")] != a0 || m[name("zone:c")] != c0 || m[name("zone:b")].Run != 0 {
		t.Fatalf("by name: %v", m)
	}
	// zone:a again, through a third aggregator: the same name's state.
	again := seriesOf("zone:a")
	if got := b.get(again[0]); got != a0 || got.Run != 1 || b.len() != 3 {
		t.Fatalf("zone:a of another aggregator: run %d, %d states, want the state of run 1 of 3", got.Run, b.len())
	}
}

// Restored states wait by name for their series, move into its slot when
// it appears, and are checkpointed meanwhile.
func TestSeriesStatesRestoreBeforeSeries(t *testing.T) {
	var b seriesStates[dropSeries]
	b.get(seriesOf("zone:old")[0]).Run = 9
	b.restore(map[string]*dropSeries{name("zone:b"): {Run: 5}, name("zone:x"): {Run: 7}})
	if b.len() != 2 {
		t.Fatalf("%d states after restore, want the 2 restored", b.len())
	}
	ss := seriesOf("zone:a", "zone:b")
	if got := b.get(ss[0]); got.Run != 0 {
		t.Fatalf("zone:a: run %d, want a fresh state", got.Run)
	}
	got := b.get(ss[1])
	if got.Run != 5 {
		t.Fatalf("zone:b: run %d, want the restored 5", got.Run)
	}
	got.Run = 6
	if b.get(ss[1]).Run != 6 || len(b.parked) != 1 {
		t.Fatalf("zone:b not moved into its slot: run %d, %d parked", b.get(ss[1]).Run, len(b.parked))
	}
	m := b.byName()
	if len(m) != 3 || m[name("zone:a")].Run != 0 || m[name("zone:b")].Run != 6 || m[name("zone:x")].Run != 7 {
		t.Fatalf("by name: %d states %v", len(m), m)
	}
}

// Many series over several pages: every one keeps its own state, at a
// stable address.
func TestSeriesStatesPages(t *testing.T) {
	var ents []string
	for i := range 3*statePage + 5 {
		ents = append(ents, fmt.Sprintf("zone:%d", i))
	}
	ss := seriesOf(ents...)
	var b seriesStates[dropSeries]
	ptrs := make([]*dropSeries, len(ss))
	for i, s := range ss {
		ptrs[i] = b.get(s)
		ptrs[i].RunStart = int64(i)
	}
	for i, s := range ss {
		if st := b.get(s); st != ptrs[i] || st.RunStart != int64(i) {
			t.Fatalf("series %d: state of %d", i, st.RunStart)
		}
	}
	if m := b.byName(); len(m) != len(ss) || m[name("zone:700")].RunStart != 700 {
		t.Fatalf("by name: %d states", len(m))
	}
}

// A checkpoint restored and taken again, before and after the series
// come back, holds the same states.
func TestTrafficDropCheckpointRoundTrip(t *testing.T) {
	var many []string
	for i := range statePage + 40 {
		many = append(many, fmt.Sprintf("asn:%d", i))
	}
	a := newRun(DefaultTrafficDrop())
	a.feed(start, 8*288, many[:6], flat)
	a.feed(start+8*dayNs, 30, many, flat)
	decode := func(b []byte) feedCheckpoint[dropState] {
		t.Helper()
		var cp feedCheckpoint[dropState]
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&cp); err != nil {
			t.Fatal(err)
		}
		return cp
	}
	snap, err := a.det.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := decode(snap)
	if len(want.States) != len(many) || want.States["traffic_bytes{asn:3}"].Noise.N == [48]uint16{} {
		t.Fatalf("checkpoint holds %d states, want %d with what they learnt", len(want.States), len(many))
	}
	// b's aggregator holds the same history; its detector is a restored one.
	b := newRun(DefaultTrafficDrop())
	b.feed(start, 8*288, many[:6], flat)
	b.feed(start+8*dayNs, 30, many, flat)
	b.det = DefaultTrafficDrop().Build("test")
	if err := b.det.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	again, err := b.det.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if got := decode(again); !reflect.DeepEqual(got, want) {
		t.Fatal("restored before its series appeared, the checkpoint differs")
	}
	// The series appear: both detectors judge the same next buckets.
	a.feed(start+8*dayNs+30*w5, 3, many, flat)
	b.feed(start+8*dayNs+30*w5, 3, many, flat)
	s1, _ := a.det.MarshalBinary()
	s2, _ := b.det.MarshalBinary()
	if x, y := decode(s1), decode(s2); !reflect.DeepEqual(x, y) || reflect.DeepEqual(x, want) {
		t.Fatal("after three buckets, the restored detector's states differ from the original's")
	}
}
