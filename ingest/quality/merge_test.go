package quality

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

// mergeStreams are the observations of every quality series that decoded
// measurements feed: synthetic ones from benchMeasurements (varied RTTs,
// loss with packet counts), the real Atlas results in testdata, and bare
// loss ratios with no packet counts, which only the fixed-point sum keeps
// exact.
func mergeStreams(t *testing.T) map[accKey][]obs.Observation {
	t.Helper()
	var all obs.Slice
	d := NewDecoder(nil)
	r := rand.New(rand.NewPCG(3, 5))
	for _, rec := range benchMeasurements(3000) {
		var m Measurement
		if err := d.Parse(rec, &m); err != nil {
			t.Fatal(err)
		}
		m.BandwidthMbps, m.HasBandwidth = math.Round(100*r.ExpFloat64()*1000)/1000, true
		if err := d.Decode(AppendJSON(nil, &m), &all); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile("testdata/ping-results.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ad := NewAtlasDecoder(nil)
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		if err := ad.Decode(line, &all); err != nil {
			t.Fatal(err)
		}
	}
	for range 1000 {
		all = append(all, obs.Observation{Signal: PacketLoss, Entity: "asn:64999", Value: r.Float64()})
	}
	out := map[accKey][]obs.Observation{}
	for _, o := range all {
		if o.Signal.Def().Agg != obs.Custom {
			continue
		}
		k := accKey{o.Signal, o.Entity}
		out[k] = append(out[k], o)
	}
	return out
}

// A bucket's observations split over N accumulators (as N input partitions
// of the first stage would see them), each sent as bytes and merged,
// give exactly the value and count of one accumulator fed them all: the
// quantile sketch and the fixed-point loss sum merge without loss.
func TestSplitAndMergeIsExact(t *testing.T) {
	streams := mergeStreams(t)
	seen := map[obs.Signal]int{}
	for k, os := range streams {
		def := k.sig.Def()
		one := def.NewAccumulator()
		for i := range os {
			one.Add(&os[i])
		}
		want, wantN := one.Result()
		for _, n := range []int{2, 3, 7} {
			parts := make([]obs.Accumulator, n)
			for i := range parts {
				parts[i] = def.NewAccumulator()
			}
			for i := range os {
				parts[(i*7919)%n].Add(&os[i])
			}
			merged := def.NewAccumulator().(obs.Mergeable)
			for i := n - 1; i >= 0; i-- {
				b, err := parts[i].(obs.Mergeable).MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				back := def.NewAccumulator().(obs.Mergeable)
				if err := back.UnmarshalBinary(b); err != nil {
					t.Fatalf("%v %s: %v", def.Name, k.ent, err)
				}
				if err := merged.Merge(back); err != nil {
					t.Fatalf("%v %s: %v", def.Name, k.ent, err)
				}
			}
			got, gotN := merged.Result()
			if got != want || gotN != wantN {
				t.Errorf("%s %s in %d parts: %v (n=%d), one accumulator %v (n=%d)", def.Name, k.ent, n, got, gotN, want, wantN)
			}
		}
		seen[k.sig]++
	}
	for _, s := range []obs.Signal{LatencyP50, LatencyP95, BandwidthP50, PacketLoss} {
		if seen[s] == 0 {
			t.Errorf("no series of %s to split", s.Def().Name)
		}
	}
	t.Logf("series split and merged: %v", seen)
}

// The bare ratios alone, whose float64 sums would depend on the order of
// addition: the fixed-point state of the merge is the very state of one
// accumulator, and its ratio is the mean to within 2⁻³² per ratio.
func TestLossOfBareRatiosMergesExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var one LossAccumulator
	parts := make([]LossAccumulator, 3)
	var floatSum float64
	for i := range 1000 {
		o := obs.Observation{Value: r.Float64()}
		one.Add(&o)
		parts[i%3].Add(&o)
		floatSum += o.Value
	}
	var merged LossAccumulator
	for i := range parts {
		if err := merged.Merge(&parts[i]); err != nil {
			t.Fatal(err)
		}
	}
	if merged != one {
		t.Fatalf("merged %+v, one %+v", merged, one)
	}
	v, n := one.Result()
	if n != 1000 || math.Abs(v-floatSum/1000) > 1e-9 {
		t.Fatalf("loss %v over %d, float mean %v", v, n, floatSum/1000)
	}
	if err := merged.Merge(NewQuantileAccumulator(0.5)); err == nil {
		t.Fatal("merged a quantile accumulator into a loss one")
	}
	if err := NewQuantileAccumulator(0.5).Merge(NewQuantileAccumulator(0.95)); err == nil {
		t.Fatal("merged p95 into p50")
	}
}

func FuzzAccumulatorUnmarshal(f *testing.F) {
	p := NewQuantileAccumulator(0.95)
	var l LossAccumulator
	for i := range 200 {
		o := obs.Observation{Value: float64(i%37) / 37, Hash: uint64(i % 3)}
		p.Add(&o)
		l.Add(&o)
	}
	for _, m := range []obs.Mergeable{p, &l, NewQuantileAccumulator(0.5), &LossAccumulator{}} {
		b, _ := m.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0x12, 0x40, 67, 0, 0, 0, 0, 0, 0, 0})
	f.Add(p2State(0.5, 101, [5]float64{1, 10, 20, 30, 100}, [5]uint64{1, 26, 51, 76, 101}))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []obs.Mergeable{NewQuantileAccumulator(0.5), &LossAccumulator{}} {
			if m.UnmarshalBinary(b) != nil {
				continue
			}
			v, n := m.Result()
			if n > 0 && math.IsNaN(v) {
				t.Fatalf("%T: NaN from %d accepted", m, n)
			}
			if l, ok := m.(*LossAccumulator); ok && n > 0 && !(v >= 0 && v <= 1) {
				t.Fatalf("loss %v from %+v", v, *l)
			}
			out, _ := m.MarshalBinary()
			if err := m.UnmarshalBinary(out); err != nil {
				t.Fatalf("%T: own state refused: %v", m, err)
			}
			if v2, n2 := m.Result(); n2 != n || fmt.Sprint(v2) != fmt.Sprint(v) {
				t.Fatalf("%T: round trip %v/%d, was %v/%d", m, v2, n2, v, n)
			}
		}
	})
}

// p2State writes a P² state as earlier versions checkpointed it.
func p2State(q float64, n uint64, h [5]float64, pos [5]uint64) []byte {
	b := []byte{1}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(q))
	b = binary.LittleEndian.AppendUint64(b, n)
	for _, x := range h {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	for _, p := range pos {
		b = binary.LittleEndian.AppendUint64(b, p)
	}
	return b
}

// An open bucket checkpointed by P² still restores: its samples below
// five, its markers at their ranks from five on.
func TestRestoreP2State(t *testing.T) {
	a := NewQuantileAccumulator(0.5)
	if err := a.UnmarshalBinary(p2State(0.5, 3, [5]float64{30, 10, 20}, [5]uint64{})); err != nil {
		t.Fatal(err)
	}
	if v, n := a.Result(); math.Abs(v-20) > 0.2 || n != 3 {
		t.Fatalf("three samples: median %v (n=%d), want 20 ± 1 %% (n=3)", v, n)
	}
	markers := [5]float64{1, 10, 20, 30, 100}
	if err := a.UnmarshalBinary(p2State(0.5, 101, markers, [5]uint64{1, 26, 51, 76, 101})); err != nil {
		t.Fatal(err)
	}
	// Rank 50 (0-based) is the median marker's own rank, 51 1-based.
	if v, n := a.Result(); math.Abs(v-20) > 0.2 || n != 101 {
		t.Fatalf("markers: median %v (n=%d), want 20 ± 1 %% (n=101)", v, n)
	}
	for name, b := range map[string][]byte{
		"markers out of order": p2State(0.5, 101, markers, [5]uint64{1, 51, 26, 76, 101}),
		"last marker short":    p2State(0.5, 101, markers, [5]uint64{1, 26, 51, 76, 100}),
		"NaN height":           p2State(0.5, 3, [5]float64{math.NaN()}, [5]uint64{}),
	} {
		if err := a.UnmarshalBinary(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
