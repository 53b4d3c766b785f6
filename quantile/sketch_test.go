package quantile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// atlasDir holds 25 RIPE Atlas RTT series (one probe each, one ping every
// four minutes; MIT licence, see its LICENSE), shipped for the detectors'
// tests and read here in place.
const atlasDir = "../detectors/testdata/atlas-rtt-labelled"

// readAtlas returns the RTTs of every series, in ms, timeouts (-1) left out.
func readAtlas(t testing.TB) map[string][]float64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(atlasDir, "*.csv.gz"))
	if err != nil || len(files) != 25 {
		t.Fatalf("want the 25 Atlas series in %s, found %d (%v)", atlasDir, len(files), err)
	}
	out := map[string][]float64{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sc := bufio.NewScanner(zr)
		sc.Scan() // epoch;rtt;cp
		var rtts []float64
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ";")
			if len(fields) != 3 {
				t.Fatalf("%s: line %q", f, sc.Text())
			}
			v, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if v > 0 {
				rtts = append(rtts, v)
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".csv.gz")] = rtts
	}
	return out
}

// exact is the q-quantile of sorted, interpolated between closest ranks as
// Sketch.Quantile is.
func exact(sorted []float64, q float64) float64 {
	r := q * float64(len(sorted)-1)
	lo := int(r)
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (r-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// synthetic streams cover what Atlas does not: zeros, negatives (a
// producer's clock skew) and a value of every magnitude.
func synthetic() map[string][]float64 {
	r := rand.New(rand.NewPCG(7, 11))
	out := map[string][]float64{}
	var logn, mixed []float64
	for range 20_000 {
		logn = append(logn, math.Exp(math.Log(22)+0.5*r.NormFloat64()))
		switch r.IntN(5) {
		case 0:
			mixed = append(mixed, 0)
		case 1:
			mixed = append(mixed, -r.ExpFloat64())
		case 2:
			mixed = append(mixed, math.Ldexp(r.Float64(), r.IntN(2000)-1000))
		default:
			mixed = append(mixed, 140+15*r.NormFloat64())
		}
	}
	out["lognormal"], out["mixed"] = logn, mixed
	return out
}

var probes = []float64{0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1}

func fill(xs []float64) *Sketch {
	var s Sketch
	for _, x := range xs {
		s.Add(x)
	}
	return &s
}

// Splitting a stream over N sketches (round robin, as partitions
// interleave, or in runs, as time ranges do), sending each as bytes and
// merging them in any order gives the very sketch one fed every sample:
// the same count, extremes and quantiles, to the bit, and the same bytes.
func TestMergeIsLossless(t *testing.T) {
	streams := readAtlas(t)
	for k, v := range synthetic() {
		streams[k] = v
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range streams {
			if !yield(k) {
				return
			}
		}
	}) {
		xs := streams[name]
		whole := fill(xs)
		want, _ := whole.MarshalBinary()
		for _, n := range []int{2, 3, 8} {
			for _, runs := range []bool{false, true} {
				parts := make([]Sketch, n)
				for i, x := range xs {
					p := i % n
					if runs {
						p = i * n / len(xs)
					}
					parts[p].Add(x)
				}
				var merged Sketch
				for i := n - 1; i >= 0; i-- { // not the order they were filled in
					b, err := parts[i].MarshalBinary()
					if err != nil {
						t.Fatal(err)
					}
					var back Sketch
					if err := back.UnmarshalBinary(b); err != nil {
						t.Fatalf("%s: part %d: %v", name, i, err)
					}
					if err := merged.Merge(&back); err != nil {
						t.Fatal(err)
					}
				}
				if merged.Count() != whole.Count() || merged.Min() != whole.Min() || merged.Max() != whole.Max() {
					t.Errorf("%s in %d (runs %v): count %d [%v, %v], want %d [%v, %v]", name, n, runs,
						merged.Count(), merged.Min(), merged.Max(), whole.Count(), whole.Min(), whole.Max())
				}
				for _, q := range probes {
					if got, w := merged.Quantile(q), whole.Quantile(q); got != w {
						t.Errorf("%s in %d (runs %v): q%v = %v, one sketch %v", name, n, runs, q, got, w)
					}
				}
				if got, _ := merged.MarshalBinary(); !bytes.Equal(got, want) {
					t.Errorf("%s in %d (runs %v): merged state differs from one sketch's", name, n, runs)
				}
			}
		}
	}
}

// On the real Atlas series, in windows of an hour (15 pings) and a day
// (360), every quantile is within RelativeAccuracy of the exact one; P²,
// the estimator the sketch replaced, is measured on the same windows for
// docs/performance.md.
func TestAccuracyOnAtlas(t *testing.T) {
	streams := readAtlas(t)
	for _, window := range []int{15, 360} {
		for _, q := range []float64{0.5, 0.95} {
			var worst, sum, p2worst, p2sum float64
			var n int
			for _, name := range slices.Sorted(func(yield func(string) bool) {
				for k := range streams {
					if !yield(k) {
						return
					}
				}
			}) {
				xs := streams[name]
				for i := 0; i+window <= len(xs); i += window {
					w := xs[i : i+window]
					s, p := fill(w), NewP2(q)
					for _, x := range w {
						p.Add(x)
					}
					sorted := slices.Sorted(slices.Values(w))
					ex := exact(sorted, q)
					e := math.Abs(s.Quantile(q)-ex) / ex
					if e > RelativeAccuracy+1e-12 {
						t.Errorf("%s window %d at %d: q%v %v, exact %v: error %.3f %%", name, window, i, q, s.Quantile(q), ex, 100*e)
					}
					pe := math.Abs(p.Quantile()-ex) / ex
					worst, sum = max(worst, e), sum+e
					p2worst, p2sum = max(p2worst, pe), p2sum+pe
					n++
				}
			}
			t.Logf("windows of %d, q%v, %d windows: sketch mean %.3f %% max %.3f %%; P² mean %.3f %% max %.2f %%",
				window, q, n, 100*sum/float64(n), 100*worst, 100*p2sum/float64(n), 100*p2worst)
		}
	}
}

func TestSmallCountsAndEdges(t *testing.T) {
	var s Sketch
	if !math.IsNaN(s.Quantile(0.5)) || !math.IsNaN(s.Min()) || s.Count() != 0 {
		t.Fatal("empty sketch answers")
	}
	s.Add(math.NaN())
	s.Add(math.Inf(1))
	if s.Count() != 0 {
		t.Fatal("non-finite samples counted")
	}
	s.Add(22.3)
	if v := s.Quantile(0.95); v != 22.3 {
		t.Fatalf("one sample: q95 = %v, want 22.3", v)
	}
	s.Add(40.1)
	// The extremes are exact, so the median of two is their midpoint.
	lo, hi := 22.3, 40.1
	if v := s.Quantile(0.5); v != lo+0.5*(hi-lo) {
		t.Fatalf("two samples: median %v", v)
	}
	if !math.IsNaN(s.Quantile(1.5)) {
		t.Fatal("q out of range answered")
	}
	// Zeros and negatives have their own bins.
	var z Sketch
	for _, x := range []float64{-10, -5, 0, 0, 0, 5, 10} {
		z.Add(x)
	}
	if v := z.Quantile(0.5); v != 0 {
		t.Fatalf("median of zeros %v", v)
	}
	if v := z.Quantile(1.0 / 6); math.Abs(v+5) > 0.05 {
		t.Fatalf("second smallest %v, want -5 ± 1 %%", v)
	}
	z.Reset()
	if z.Count() != 0 || !math.IsNaN(z.Quantile(0.5)) {
		t.Fatal("Reset kept samples")
	}
}

// A pooled sketch reused for a bucket of a similar range allocates nothing.
func TestReuseDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's append allocates")
	}
	xs := synthetic()["lognormal"][:2000]
	s := fill(xs)
	if n := testing.AllocsPerRun(20, func() {
		s.Reset()
		for _, x := range xs {
			s.Add(x)
		}
		_ = s.Quantile(0.95)
	}); n != 0 {
		t.Fatalf("reused sketch allocates %v times per bucket", n)
	}
}

func TestUnmarshalRejectsCorruptState(t *testing.T) {
	good, _ := fill([]float64{1, 2, 3, 50, 50, 0, -4}).MarshalBinary()
	empty, _ := new(Sketch).MarshalBinary()
	if !bytes.Equal(empty, []byte{2, 0}) {
		t.Fatalf("empty sketch is % x", empty)
	}
	mod := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	for name, b := range map[string][]byte{
		"nothing":           nil,
		"P² state":          append([]byte{1}, make([]byte, 96)...),
		"trailing":          append(slices.Clone(good), 0),
		"truncated":         good[:len(good)-1],
		"empty with bytes":  {2, 0, 0},
		"count off":         mod(func(b []byte) []byte { b[1]++; return b }),
		"min above max":     mod(func(b []byte) []byte { copy(b[2:10], b[10:18]); b[9]++; return b }),
		"min outside bins":  mod(func(b []byte) []byte { b[8]++; return b }),
		"NaN max":           mod(func(b []byte) []byte { copy(b[10:18], []byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f}); return b }),
		"huge bin count":    {2, 1, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"bin out of range":  {2, 1, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 1, 0xfe, 0xff, 0xff, 0xff, 0x0f, 1, 0},
		"bin of no samples": {2, 1, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 2, 0, 0, 2, 1, 0},
	} {
		var s Sketch
		s.Add(7)
		err := s.UnmarshalBinary(b)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v, want ErrCorrupt", name, err)
		}
		if s.Count() != 0 {
			t.Errorf("%s: refused state left %d samples", name, s.Count())
		}
	}
	// One sample of 1.0 lies in bin 0, the form the cases above start from.
	one, _ := fill([]float64{1}).MarshalBinary()
	want := []byte{2, 1, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 1, 0, 1, 0}
	if !bytes.Equal(one, want) {
		t.Fatalf("sketch of 1.0 is % x, want % x", one, want)
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	for _, xs := range [][]float64{nil, {1}, {0, -3, 5e300, 1e-300}, synthetic()["mixed"][:300], readAtlas(f)["11119"][:500]} {
		b, _ := fill(xs).MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(append([]byte{1}, make([]byte, 96)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Sketch
		if err := s.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		// An accepted state answers within its range, writes a form that
		// reads back the same, and merges.
		if s.Count() > 0 {
			for _, q := range probes {
				if v := s.Quantile(q); !(v >= s.Min() && v <= s.Max()) {
					t.Fatalf("q%v = %v outside [%v, %v]", q, v, s.Min(), s.Max())
				}
			}
		}
		out, _ := s.MarshalBinary()
		var again Sketch
		if err := again.UnmarshalBinary(out); err != nil {
			t.Fatalf("re-marshalled state refused: %v", err)
		}
		if again2, _ := again.MarshalBinary(); !bytes.Equal(again2, out) || again.Count() != s.Count() ||
			(s.Count() > 0 && again.Quantile(0.5) != s.Quantile(0.5)) {
			t.Fatalf("state changed on a round trip")
		}
		n := s.Count()
		if err := s.Merge(fill([]float64{1, 2})); err != nil || s.Count() != n+2 {
			t.Fatalf("merge: %v, count %d", err, s.Count())
		}
	})
}

// AddCount is Add repeated, to the byte, for every kind of bin.
func TestAddCountIsAddRepeated(t *testing.T) {
	var one, many Sketch
	for _, x := range []float64{22.5, 0, -3, 1e-320, math.NaN(), 140, 2e12} {
		for range 7 {
			one.Add(x)
		}
		many.AddCount(x, 7)
	}
	many.AddCount(5, 0)
	a, _ := one.MarshalBinary()
	b, _ := many.MarshalBinary()
	if !bytes.Equal(a, b) || one.Count() != 35 {
		t.Fatalf("Add ×7: % x (n=%d), AddCount: % x (n=%d)", a, one.Count(), b, many.Count())
	}
}

// Samples span at most the bins from 1e-9 to 1e12: smaller magnitudes are
// zeros, larger ones are ignored, so a garbage sample cannot make an open
// bucket's store grow past about 20 KB.
func TestRangeIsBounded(t *testing.T) {
	if n := maxBin - minBin + 1; n > 2500 {
		t.Fatalf("%d bins between 1e-9 and 1e12", n)
	}
	var s Sketch
	for _, x := range []float64{1e-10, 5, 9e11, 2e12, -3e12, 1e300} {
		s.Add(x)
	}
	if s.Count() != 3 || s.Min() != 1e-10 || s.Max() != 9e11 {
		t.Fatalf("count %d [%v, %v], want 3 [1e-10, 9e11]", s.Count(), s.Min(), s.Max())
	}
	if v := s.Quantile(0.5); math.Abs(v-5) > 0.05 {
		t.Fatalf("median %v, want 5 ± 1 %%", v)
	}
	if s.zero != 1 || s.pos == nil || s.neg != nil {
		t.Fatalf("1e-10 not counted as zero, or a negative store made for an ignored sample")
	}
	b, _ := s.MarshalBinary()
	var back Sketch
	if err := back.UnmarshalBinary(b); err != nil || back.Quantile(0.5) != s.Quantile(0.5) {
		t.Fatalf("round trip: %v", err)
	}
}
