package quantile

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/influxdata/tdigest"
)

const streamLen = 1_000_000

// streams are the shapes quality measurements take: flat, heavy right tail
// like RTTs, and two populations (probes near and far from a destination).
var streams = []struct {
	name string
	gen  func(r *rand.Rand) float64
}{
	{"uniform", func(r *rand.Rand) float64 { return 100 * r.Float64() }},
	{"lognormal", func(r *rand.Rand) float64 { return math.Exp(math.Log(22) + 0.5*r.NormFloat64()) }},
	{"bimodal", func(r *rand.Rand) float64 {
		if r.IntN(10) < 7 {
			return 20 + 2*r.NormFloat64()
		}
		return 140 + 15*r.NormFloat64()
	}},
}

// rankOf returns the fraction of sorted samples <= x.
func rankOf(sorted []float64, x float64) float64 {
	return float64(sort.SearchFloat64s(sorted, math.Nextafter(x, math.Inf(1)))) / float64(len(sorted))
}

func TestRankErrorMillionSamples(t *testing.T) {
	for si, s := range streams {
		r := rand.New(rand.NewPCG(uint64(si), 42))
		data := make([]float64, streamLen)
		for i := range data {
			data[i] = s.gen(r)
		}
		sorted := slices.Clone(data)
		slices.Sort(sorted)
		for _, q := range []float64{0.5, 0.95} {
			e := New(q)
			for _, x := range data {
				e.Add(x)
			}
			if e.Count() != streamLen {
				t.Fatalf("%s q=%v: count %d", s.name, q, e.Count())
			}
			got := e.Quantile()
			rank := rankOf(sorted, got)
			exact := sorted[int(q*float64(streamLen))]
			t.Logf("%s q=%v: estimate %.4f exact %.4f rank %.5f", s.name, q, got, exact, rank)
			if math.Abs(rank-q) > 0.01 {
				t.Errorf("%s q=%v: estimate %v has rank %v, want within 0.01", s.name, q, got, rank)
			}
			if e.Min() != sorted[0] || e.Max() != sorted[len(sorted)-1] {
				t.Errorf("%s: min/max %v %v, want %v %v", s.name, e.Min(), e.Max(), sorted[0], sorted[len(sorted)-1])
			}
		}
	}
}

func TestAddDoesNotAllocate(t *testing.T) {
	e := New(0.95)
	r := rand.New(rand.NewPCG(1, 2))
	// Past the five-sample start-up and deep in the stream alike.
	if n := testing.AllocsPerRun(1000, func() { e.Add(r.Float64()) }); n != 0 {
		t.Fatalf("Add allocates %v times per sample", n)
	}
	for range 100_000 {
		e.Add(r.Float64())
	}
	if n := testing.AllocsPerRun(1000, func() { e.Add(r.Float64()) }); n != 0 {
		t.Fatalf("Add allocates %v times per sample", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = e.Quantile() }); n != 0 {
		t.Fatalf("Quantile allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, e.Reset); n != 0 {
		t.Fatalf("Reset allocates %v times", n)
	}
}

func TestSmallCountsAreExact(t *testing.T) {
	e := New(0.5)
	if !math.IsNaN(e.Quantile()) || !math.IsNaN(e.Min()) || !math.IsNaN(e.Max()) {
		t.Fatal("empty estimator does not answer NaN")
	}
	for i, c := range []struct {
		x, median float64
	}{{30, 30}, {10, 20}, {20, 20}, {40, 25}, {50, 30}} {
		e.Add(c.x)
		if got := e.Quantile(); got != c.median {
			t.Fatalf("after %d samples: median %v, want %v", i+1, got, c.median)
		}
	}
	e95 := New(0.95)
	for _, x := range []float64{21.9, 22.4} {
		e95.Add(x)
	}
	// Rank 0.95*(2-1) = 0.95 between 21.9 and 22.4.
	if got, want := e95.Quantile(), 21.9+0.95*(22.4-21.9); math.Abs(got-want) > 1e-12 {
		t.Fatalf("p95 of two samples = %v, want %v", got, want)
	}
}

func TestIgnoresNonFinite(t *testing.T) {
	e := New(0.5)
	e.Add(math.NaN())
	e.Add(math.Inf(1))
	e.Add(math.Inf(-1))
	e.Add(7)
	if e.Count() != 1 || e.Quantile() != 7 {
		t.Fatalf("count %d quantile %v, want 1 and 7", e.Count(), e.Quantile())
	}
}

func TestResetKeepsQuantile(t *testing.T) {
	e := New(0.95)
	for i := range 1000 {
		e.Add(float64(i))
	}
	e.Reset()
	if e.Count() != 0 || e.Q() != 0.95 || !math.IsNaN(e.Quantile()) {
		t.Fatalf("after Reset: count %d q %v quantile %v", e.Count(), e.Q(), e.Quantile())
	}
	fresh := New(0.95)
	for i := range 1000 {
		e.Add(float64(i % 97))
		fresh.Add(float64(i % 97))
	}
	if *e != *fresh {
		t.Fatalf("reset estimator diverges from a fresh one: %+v vs %+v", *e, *fresh)
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 3, 5, 6, 10_000} {
		e := New(0.95)
		for range n {
			e.Add(r.ExpFloat64())
		}
		b, err := e.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != BinarySize {
			t.Fatalf("n=%d: %d bytes, want %d", n, len(b), BinarySize)
		}
		var back P2
		if err := back.UnmarshalBinary(b); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if back != *e {
			t.Fatalf("n=%d: round trip %+v, want %+v", n, back, *e)
		}
		// The restored estimator continues exactly like the original.
		for range 1000 {
			x := r.ExpFloat64()
			e.Add(x)
			back.Add(x)
		}
		if back != *e {
			t.Fatalf("n=%d: restored estimator diverged", n)
		}
	}
	e := New(0.5)
	buf := make([]byte, 0, BinarySize)
	if n := testing.AllocsPerRun(100, func() { buf, _ = e.AppendBinary(buf[:0]) }); n != 0 {
		t.Fatalf("AppendBinary allocates %v times", n)
	}
}

func TestUnmarshalRejectsCorruptState(t *testing.T) {
	e := New(0.5)
	for i := range 100 {
		e.Add(float64(i))
	}
	good, _ := e.MarshalBinary()
	mutate := func(f func(b []byte)) []byte {
		b := slices.Clone(good)
		f(b)
		return b
	}
	cases := map[string][]byte{
		"short":     good[:BinarySize-1],
		"version":   mutate(func(b []byte) { b[0] = 9 }),
		"q":         mutate(func(b []byte) { copy(b[1:9], []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}) }), // 1.0
		"count":     mutate(func(b []byte) { b[9]++ }),
		"order":     mutate(func(b []byte) { copy(b[17:25], b[49:57]) }), // h[0] = h[4]
		"nan":       mutate(func(b []byte) { copy(b[25:33], []byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f}) }),
		"first-pos": mutate(func(b []byte) { b[57] = 2 }),
	}
	// A state with two samples and a stray third.
	small := New(0.5)
	small.Add(1)
	small.Add(2)
	sb, _ := small.MarshalBinary()
	sb[17+8*2] = 1
	cases["small-stray"] = sb
	for name, b := range cases {
		var back P2
		if err := back.UnmarshalBinary(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestNewPanicsOnBadQuantile(t *testing.T) {
	for _, q := range []float64{0, 1, -0.5, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%v) did not panic", q)
				}
			}()
			New(q)
		}()
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	e := New(0.95)
	for i := range 50 {
		e.Add(float64(i * i))
	}
	b, _ := e.MarshalBinary()
	f.Add(b)
	f.Add([]byte{})
	f.Add(make([]byte, BinarySize))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s P2
		if err := s.UnmarshalBinary(b); err != nil {
			return
		}
		// An accepted state must keep working and stay within its range.
		lo, hi := s.Min(), s.Max()
		if s.Count() > 0 {
			if q := s.Quantile(); q < lo || q > hi {
				t.Fatalf("quantile %v outside [%v, %v]", q, lo, hi)
			}
		}
		s.Add(1)
		_ = s.Quantile()
		out, _ := s.MarshalBinary()
		var again P2
		if err := again.UnmarshalBinary(out); err != nil {
			t.Fatalf("re-marshalled state refused: %v", err)
		}
	})
}

func benchData(n int) []float64 {
	r := rand.New(rand.NewPCG(9, 9))
	d := make([]float64, n)
	for i := range d {
		d[i] = math.Exp(math.Log(22) + 0.5*r.NormFloat64())
	}
	return d
}

func BenchmarkP2Add(b *testing.B) {
	data := benchData(1 << 16)
	e := New(0.95)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		e.Add(data[i&(len(data)-1)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(BinarySize), "state_B")
}

// BenchmarkTDigestAdd measures the alternative already in go.mod, to keep the
// choice of P² honest.
func BenchmarkTDigestAdd(b *testing.B) {
	data := benchData(1 << 16)
	td := tdigest.NewWithCompression(100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		td.Add(data[i&(len(data)-1)], 1)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
