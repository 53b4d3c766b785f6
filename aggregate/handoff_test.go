package aggregate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

// rms is a custom signal: the root mean square of its observations, whose
// accumulator leaves the process as two numbers.
var rms = obs.Register(obs.SignalDef{Name: "test_rms", Feed: obs.FeedQuality, Agg: obs.Custom,
	NewAccumulator: func() obs.Accumulator { return &rmsAcc{} }})

type rmsAcc struct {
	sq float64
	n  int64
}

func (a *rmsAcc) Add(o *obs.Observation) { a.sq += o.Value * o.Value; a.n++ }
func (a *rmsAcc) Result() (float64, int64) {
	if a.n == 0 {
		return math.NaN(), 0
	}
	return math.Sqrt(a.sq / float64(a.n)), a.n
}
func (a *rmsAcc) Reset() { *a = rmsAcc{} }
func (a *rmsAcc) Merge(o obs.Accumulator) error {
	b := o.(*rmsAcc)
	a.sq, a.n = a.sq+b.sq, a.n+b.n
	return nil
}
func (a *rmsAcc) MarshalBinary() ([]byte, error) {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, math.Float64bits(a.sq)), uint64(a.n)), nil
}
func (a *rmsAcc) UnmarshalBinary(b []byte) error {
	if len(b) != 16 {
		return errors.New("rms: want 16 bytes")
	}
	a.sq, a.n = math.Float64frombits(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
	return nil
}

// Handoff merges what Flush and ObservePartial/ObserveFeeds merge: two
// stage-one aggregators fed the same halves, one flushed through partial
// records and one handed off, close the same points in stage two, with the
// same counts, for every kind of aggregation and a custom accumulator, with
// the next bucket already open when the first leaves.
func TestHandoffEqualsFlushAndMerge(t *testing.T) {
	all := []*obs.Observation{
		obsAt(t0+10e9, obs.TrafficBytes, "asn:1", 100),
		obsAt(t0+20e9, obs.TrafficBytes, "asn:1", 50),
		obsAt(t0+21e9, obs.TrafficPackets, "asn:1", 3),
		obsAt(t0+30e9, mean, "zone:a", 1),
		obsAt(t0+40e9, mean, "zone:a", 0),
		obsAt(t0+41e9, mean, "zone:a", 0),
		obsAt(t0+50e9, mx, "zone:a", 3),
		obsAt(t0+51e9, mx, "zone:a", 9),
		obsAt(t0+60e9, gauge, "asn:1", 7),
		obsAt(t0+70e9, gauge, "asn:1", 8),
		obsAt(t0+71e9, rms, "dc:a", 3),
		obsAt(t0+72e9, rms, "dc:a", 4),
		obsAt(t0+73e9, rms, "dc:a", 5),
		obsAt(t0+min5+5, obs.TrafficBytes, "asn:2", 4),
		obsAt(t0+min5+6, rms, "dc:a", 1),
		obsAt(t0+2*min5+1, obs.TrafficBytes, "asn:2", 6),
	}
	run := func(handoff bool) collected {
		pre := []*Aggregator{New(Config{History: 1, StageOne: true}), New(Config{History: 1, StageOne: true})}
		for i, o := range all {
			pre[i%2].Observe(o)
		}
		two := New(Config{})
		for _, p := range pre {
			var err error
			if handoff {
				err = p.Handoff(t0+2*min5, two, func(err error) { t.Fatal(err) })
			} else {
				err = p.Flush(t0+2*min5, func(f *Flushed) {
					for i := range f.Entries {
						if err := two.ObservePartial(&f.Entries[i]); err != nil {
							t.Fatal(err)
						}
					}
					if err := two.ObserveFeeds(f.Start, f.Feeds); err != nil {
						t.Fatal(err)
					}
				})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		var c collected
		two.Advance(t0+2*min5, c.fn)
		return c
	}
	want, got := run(false), run(true)
	if fmt.Sprint(got.starts) != fmt.Sprint([]int64{t0, t0 + min5}) {
		t.Fatalf("closed %v, want the buckets at %d and %d", got.starts, t0, t0+min5)
	}
	for _, start := range want.starts {
		if len(got.values[start]) != len(want.values[start]) {
			t.Errorf("bucket %d: %d points, want %d", start, len(got.values[start]), len(want.values[start]))
		}
		for k, w := range want.values[start] {
			g := got.values[start][k]
			if g.Value != w.Value && !(g.Missing && w.Missing) || g.Count != w.Count || g.Missing != w.Missing {
				t.Errorf("bucket %d %s: handed off %+v, flushed %+v", start, k, g, w)
			}
		}
	}
	if p := got.values[t0]["test_rms{dc:a}"]; p.Value != math.Sqrt(50.0/3) || p.Count != 3 {
		t.Errorf("rms %+v, want √(50/3) of 3", p)
	}
	if p := got.values[t0+min5]["traffic_bytes{asn:1}"]; p.Missing || p.Value != 0 {
		t.Errorf("asn:1 in the second bucket: %+v, want 0", p)
	}
}

// A bucket stage two has already closed refuses what is handed off: each
// series and the feed counts go to reject as late, and the rest of the
// stream goes on.
func TestHandoffLate(t *testing.T) {
	one, two := New(Config{History: 1, StageOne: true}), New(Config{})
	two.Observe(obsAt(t0+5, obs.TrafficBytes, "asn:9", 1))
	two.Advance(t0+min5, nil)
	one.Observe(obsAt(t0+10e9, obs.TrafficBytes, "asn:1", 100))
	one.Observe(obsAt(t0+11e9, obs.TrafficPackets, "asn:1", 1))
	one.Observe(obsAt(t0+min5+1, obs.TrafficBytes, "asn:1", 7))
	var late int
	reject := func(err error) {
		if !errors.Is(err, ErrLatePartial) {
			t.Errorf("rejected with %v, want ErrLatePartial", err)
		}
		late++
	}
	if err := one.Handoff(t0+2*min5, two, reject); err != nil {
		t.Fatal(err)
	}
	if late != 3 { // two series and the feed counts of the first bucket
		t.Errorf("%d refused, want 3", late)
	}
	if st := two.Stats(); st.Late != 3 {
		t.Errorf("stage two counted %d late, want 3", st.Late)
	}
	var c collected
	two.Advance(t0+2*min5, c.fn)
	if p := c.values[t0+min5]["traffic_bytes{asn:1}"]; p.Value != 7 || p.Count != 1 {
		t.Errorf("second bucket %+v, want 7 from one observation", p)
	}
}

// A stage-one series whose next bucket opens before the watermark passes
// the last one (the usual case: the watermark lags the records) reuses its
// open-bucket window: what a bucket allocates is the bucket's bookkeeping,
// not one window per series.
func TestStageOneBucketsDoNotAllocatePerSeries(t *testing.T) {
	const series = 200
	one, two := New(Config{History: 1, StageOne: true}), New(Config{History: 16})
	ents := make([]string, series)
	for i := range ents {
		ents[i] = fmt.Sprintf("asn:%d", i+1)
	}
	o := obs.Observation{Signal: obs.TrafficBytes, Value: 1}
	bucket := int64(0)
	step := func() {
		bucket++
		for _, e := range ents { // the next bucket opens...
			o.Time, o.Entity = t0+bucket*min5+1, e
			one.Observe(&o)
		}
		// ...before the watermark passes the previous one.
		if err := one.Handoff(t0+bucket*min5, two, func(err error) { t.Fatal(err) }); err != nil {
			t.Fatal(err)
		}
		two.Advance(t0+bucket*min5, nil)
	}
	for range 20 { // series, slabs and windows reach their size
		step()
	}
	if n := testing.AllocsPerRun(50, step); n > series/10 {
		t.Errorf("%.0f allocations a bucket of %d series, want a handful", n, series)
	}
}
