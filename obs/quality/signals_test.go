package quality

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/outagewatch/outagewatch/obs"
)

func TestSignalsRegistered(t *testing.T) {
	for name, want := range map[string]obs.Signal{
		"latency_p50": LatencyP50, "latency_p95": LatencyP95, "latency_min": LatencyMin, "bandwidth_p50": BandwidthP50, "packet_loss": PacketLoss,
	} {
		s, ok := obs.Lookup(name)
		if !ok || s != want || s.Def().Feed != obs.FeedQuality || s.Def().Agg != obs.Custom {
			t.Errorf("signal %s: %v %v %+v", name, s, ok, s.Def())
		}
	}
	if q := LatencyP95.Def().NewAccumulator().(*QuantileAccumulator).q; q != 0.95 {
		t.Errorf("latency_p95 accumulator q = %v", q)
	}
}

func TestAccumulators(t *testing.T) {
	loss := PacketLoss.Def().NewAccumulator()
	if v, n := loss.Result(); !math.IsNaN(v) || n != 0 {
		t.Fatalf("empty loss = %v, %d", v, n)
	}
	// 1/49 × 49 is not 1 in floating point; whole packets must come back.
	for _, m := range []struct{ lost, sent uint64 }{{1, 49}, {0, 10}, {3, 7}} {
		loss.Add(&obs.Observation{Value: float64(m.lost) / float64(m.sent), Hash: m.sent})
	}
	loss.Add(&obs.Observation{Value: 0.5})        // a bare ratio counts as one packet
	loss.Add(&obs.Observation{Value: math.NaN()}) // ignored
	loss.Add(&obs.Observation{Value: 2, Hash: 3}) // ignored
	if v, n := loss.Result(); v != 4.5/67 || n != 67 {
		t.Fatalf("loss = %v (n=%d), want %v (n=67)", v, n, 4.5/67)
	}
	b, _ := loss.(*LossAccumulator).MarshalBinary()
	var back LossAccumulator
	if err := back.UnmarshalBinary(b); err != nil || back != *loss.(*LossAccumulator) {
		t.Fatalf("loss round trip %+v %v", back, err)
	}
	b[13] = 4 // sent 67 → 4 with 4.5 lost
	if err := back.UnmarshalBinary(b); err == nil {
		t.Fatal("accepted more lost than sent")
	}
	// The float form older checkpoints hold still restores, exactly.
	v1 := []byte{1, 0, 0, 0, 0, 0, 0, 0x12, 0x40, 67, 0, 0, 0, 0, 0, 0, 0} // 4.5 lost of 67
	if err := back.UnmarshalBinary(v1); err != nil || back != *loss.(*LossAccumulator) {
		t.Fatalf("version 1 state: %+v %v", back, err)
	}
	loss.Reset()
	if _, n := loss.Result(); n != 0 {
		t.Fatal("Reset kept packets")
	}

	p95 := LatencyP95.Def().NewAccumulator().(*QuantileAccumulator)
	for i := range 100 {
		p95.Add(&obs.Observation{Value: float64(i)})
	}
	// Rank 94.05 lies between samples 94 and 95, each known to 1 %.
	if v, n := p95.Result(); n != 100 || math.Abs(v-94.05) > 0.01*95 {
		t.Fatalf("p95 of 0..99 = %v (n=%d), want 94.05 ± 1 %%", v, n)
	}
	b, _ = p95.MarshalBinary()
	restored := LatencyP95.Def().NewAccumulator().(*QuantileAccumulator)
	if err := restored.UnmarshalBinary(b); err != nil {
		t.Fatalf("quantile round trip: %v", err)
	}
	if v, n := restored.Result(); n != 100 || v != valueOf(p95.Result()) {
		t.Fatalf("restored p95 = %v (n=%d), want %v", v, n, valueOf(p95.Result()))
	}
	if err := restored.UnmarshalBinary(b[:len(b)-1]); err == nil {
		t.Fatal("accepted a truncated quantile state")
	}
	o := &obs.Observation{Value: 3}
	if n := testing.AllocsPerRun(1000, func() { p95.Add(o); loss.Add(o) }); n != 0 {
		t.Fatalf("accumulators allocate %v times per sample", n)
	}
}

func valueOf(v float64, _ int64) float64 { return v }

// A bucket's lowest RTT, merged from partial buckets in any order, is the
// lowest of one accumulator fed every sample; lost pings are not samples.
func TestMinAccumulator(t *testing.T) {
	var one, a, b MinAccumulator
	if v, n := one.Result(); !math.IsNaN(v) || n != 0 {
		t.Fatalf("empty minimum = %v, %d", v, n)
	}
	for i, x := range []float64{101.9, 74.9, -1, math.NaN(), 76.5, math.Inf(1)} {
		o := &obs.Observation{Value: x}
		one.Add(o)
		[]*MinAccumulator{&a, &b}[i%2].Add(o)
	}
	if v, n := one.Result(); v != 74.9 || n != 3 {
		t.Fatalf("minimum = %v of %d, want 74.9 of 3", v, n)
	}
	if err := b.Merge(&a); err != nil || b != one {
		t.Fatalf("merged %+v (%v), one %+v", b, err, one)
	}
	if err := a.Merge(&MinAccumulator{}); err != nil || a.min != 76.5 || a.n != 2 {
		t.Fatalf("merging an empty one changed %+v (%v)", a, err)
	}
	if err := a.Merge(&LossAccumulator{}); err == nil {
		t.Fatal("merged a loss accumulator into a minimum")
	}
	buf, _ := one.MarshalBinary()
	var back MinAccumulator
	if err := back.UnmarshalBinary(buf); err != nil || back != one {
		t.Fatalf("round trip %+v %v", back, err)
	}
	binary.LittleEndian.PutUint64(buf[1:], math.Float64bits(-3))
	if err := back.UnmarshalBinary(buf); err == nil {
		t.Fatal("accepted a negative RTT")
	}
	if err := back.UnmarshalBinary(buf[:9]); err == nil {
		t.Fatal("accepted a truncated state")
	}
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
	var lo MinAccumulator
	lo.Add(&obs.Observation{Value: 74.9})
	for _, m := range []obs.Mergeable{p, &l, NewQuantileAccumulator(0.5), &LossAccumulator{}, &lo, &MinAccumulator{}} {
		b, _ := m.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0x12, 0x40, 67, 0, 0, 0, 0, 0, 0, 0})
	f.Add(p2State(0.5, 101, [5]float64{1, 10, 20, 30, 100}, [5]uint64{1, 26, 51, 76, 101}))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []obs.Mergeable{NewQuantileAccumulator(0.5), &LossAccumulator{}, &MinAccumulator{}} {
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
