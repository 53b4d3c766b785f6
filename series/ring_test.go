package series

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

const min5 = int64(300e9)

func TestRingQuantisationError(t *testing.T) {
	for _, f := range []*Format{Default, FormatFor(0.005), FormatFor(0.001)} {
		t.Run(fmt.Sprintf("%dbits", f.Bits()), func(t *testing.T) { testQuantisation(t, f) })
	}
}

func testQuantisation(t *testing.T, f *Format) {
	r := NewFormat(f, 4032, min5)
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := int64(1_700_000_000e9)
	vals := make([]float64, 4032)
	for i := range vals {
		vals[i] = 1e6 * math.Exp(rng.NormFloat64()*0.8) // spans about two decades
		r.Put(t0+int64(i)*min5, vals[i])
	}
	top := 0.0
	for _, v := range vals {
		top = math.Max(top, v)
	}
	worst := 0.0
	for i, v := range vals {
		got, ok := r.Get(t0 + int64(i)*min5)
		if !ok {
			t.Fatalf("bucket %d missing", i)
		}
		if e := math.Abs(got-v) / v; e > worst && v > top/math.Pow(f.step, float64(f.max-codeMin)) {
			worst = e
		}
	}
	// Values within the format's range under the maximum keep their
	// half-step error.
	if worst > f.Precision()*1.005 {
		t.Fatalf("worst relative error %.5f, want ≤ %.4f", worst, f.Precision())
	}
}

func TestRingMissingZeroAndGaps(t *testing.T) {
	r := New(10, min5)
	t0 := int64(1000) * min5
	r.Put(t0, 100)
	r.Put(t0+min5, 0)
	r.Put(t0+2*min5, math.NaN())
	r.Put(t0+5*min5, 50) // buckets 3 and 4 never reported
	if v, ok := r.Get(t0 + min5); !ok || v != 0 {
		t.Fatalf("zero bucket = %v %v", v, ok)
	}
	for _, b := range []int64{2, 3, 4} {
		if _, ok := r.Get(t0 + b*min5); ok {
			t.Fatalf("bucket %d should be missing", b)
		}
	}
	if v, ok := r.Get(t0 + 5*min5); !ok || math.Abs(v-50)/50 > 0.02 {
		t.Fatalf("bucket 5 = %v %v", v, ok)
	}
	// Overwrite a held bucket (prediction substitution).
	r.Put(t0, 200)
	if v, _ := r.Get(t0); math.Abs(v-200)/200 > 0.02 {
		t.Fatalf("overwritten bucket = %v", v)
	}
	// Wrap around: after 10 more buckets t0 is gone.
	for i := int64(6); i < 16; i++ {
		r.Put(t0+i*min5, 1)
	}
	if _, ok := r.Get(t0 + 5*min5); ok {
		t.Fatal("bucket beyond capacity still readable")
	}
	if r.Oldest() != t0+6*min5 {
		t.Fatalf("Oldest = %d", r.Oldest())
	}
}

func TestRingRebaseKeepsOldValues(t *testing.T) {
	r := New(100, min5)
	r.Put(min5, 10)
	r.Put(2*min5, 10*math.Pow(Step, 60)) // far above headroom
	if v, _ := r.Get(2 * min5); math.Abs(v/(10*math.Pow(Step, 60))-1) > 0.02 {
		t.Fatalf("top value = %v", v)
	}
	v, _ := r.Get(min5)
	if math.Abs(v-10)/10 > 0.02 {
		t.Fatalf("old value after rebase = %v, want ≈10", v)
	}
}

func TestRingCheckpointRoundTrip(t *testing.T) {
	r := New(50, min5)
	for i := int64(1); i < 80; i++ {
		r.Put(i*min5, float64(i*i))
	}
	b, _ := r.MarshalBinary()
	var q Ring
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i < 80; i++ {
		a, aok := r.Get(i * min5)
		c, cok := q.Get(i * min5)
		if a != c || aok != cok {
			t.Fatalf("bucket %d: %v %v vs %v %v", i, a, aok, c, cok)
		}
	}
	if err := q.UnmarshalBinary(b[:len(b)-1]); err == nil {
		t.Fatal("truncated ring accepted")
	}
}

func FuzzRingUnmarshal(f *testing.F) {
	r := New(8, min5)
	r.Put(min5, 3)
	b, _ := r.MarshalBinary()
	f.Add(b)
	f.Add([]byte{})
	// Two weeks, grouped in memory, with a group that spills.
	g := New(4032, min5)
	for i := range int64(4100) {
		g.Put((i+1)*min5, float64(1000+i%7))
	}
	g.Put(4100*min5, 0.001)
	b, _ = g.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var q Ring
		if q.UnmarshalBinary(b) == nil {
			back, err := q.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var again Ring
			if err := again.UnmarshalBinary(back); err != nil {
				t.Fatalf("a restored ring's checkpoint does not restore: %v", err)
			}
			for x := q.Oldest(); x <= q.Last() && x > 0 && q.Last()-x < int64(q.Len())*q.Width(); x += q.Width() {
				if a, c := q.Code(x), again.Code(x); a != c {
					t.Fatalf("code %d at %d after a second round trip, want %d", c, x, a)
				}
			}
			q.Put(q.Last()+q.Width(), 1)
			q.Get(q.Last())
		}
	})
}

func BenchmarkRingPut(b *testing.B) {
	r := New(4032, min5)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.Put(int64(i+1)*min5, float64(i%1000+1))
	}
	b.ReportMetric(float64(r.Bytes()), "bytes/series")
}

func TestRingLevel(t *testing.T) {
	r := New(10, min5)
	r.Put(min5, 100)
	r.Put(2*min5, 100*Step*Step*Step)
	r.Put(3*min5, 0)
	a, _ := r.Level(min5)
	b, _ := r.Level(2 * min5)
	z, _ := r.Level(3 * min5)
	if b-a != 3 || z >= a-9 {
		t.Fatalf("levels %d %d %d", a, b, z)
	}
	if _, ok := r.Level(4 * min5); ok {
		t.Fatal("level of a bucket not stored")
	}
}

func TestRingRebaseClampsTheBottom(t *testing.T) {
	r := New(10, min5)
	r.Put(min5, 10)
	r.Put(2*min5, 10*math.Pow(Step, 300))
	v, ok := r.Get(min5)
	top, _ := r.Get(2 * min5)
	if !ok || math.Abs(v/(top/math.Pow(Step, float64(Default.max-codeMin)))-1) > 0.001 {
		t.Fatalf("old value %v, want the bottom of the range %v", v, top/math.Pow(Step, float64(Default.max-codeMin)))
	}
}

func TestFormats(t *testing.T) {
	cases := []struct {
		precision float64
		bits      int
		bytes     int // for two weeks of 5-minute buckets
	}{
		{0, 7, 3530},
		{0.02, 7, 3530},
		{0.005, 9, 4538},
		{0.001, 12, 6050},
	}
	for _, c := range cases {
		f := FormatFor(c.precision)
		if f.Bits() != c.bits || f.StorageBytes(4032) != c.bytes {
			t.Errorf("FormatFor(%g): %d bits, %d bytes; want %d, %d", c.precision, f.Bits(), f.StorageBytes(4032), c.bits, c.bytes)
		}
		if got := math.Pow(f.step, float64(f.max-codeMin)); got < span {
			t.Errorf("FormatFor(%g) spans %.0f×, want at least %d×", c.precision, got, span)
		}
	}
	if FormatFor(0.001) != FormatFor(0.001) {
		t.Error("FormatFor does not share formats")
	}
}

func TestFineRingRoundTrip(t *testing.T) {
	r := NewFormat(FormatFor(0.001), 100, min5)
	for i := range int64(100) {
		r.Put((i+1)*min5, 1000+float64(i))
	}
	b, _ := r.MarshalBinary()
	var back Ring
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	for i := range int64(100) {
		v, ok := back.Get((i + 1) * min5)
		if want := 1000 + float64(i); !ok || math.Abs(v-want)/want > 0.001 {
			t.Fatalf("bucket %d = %v %v, want %v within 0.1 %%", i, v, ok, want)
		}
	}
	if back.Format() != FormatFor(0.001) {
		t.Fatal("format not restored")
	}
}

// A ring of whole days keeps its codes day-major; what it returns, and
// what it checkpoints, must be what the same ring in plain order gives.
func TestDayMajorLayoutMatchesPlainOrder(t *testing.T) {
	for _, f := range []*Format{Default, FormatFor(0.001)} {
		day := NewFormat(f, 3*288, min5)
		plain := NewFormat(f, 3*288, min5)
		plain.perDay, plain.days = plain.n, 1
		if day.days != 3 || day.perDay != 288 {
			t.Fatalf("%d bits: layout %d days of %d, want 3 of 288", f.Bits(), day.days, day.perDay)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		t0 := int64(1700006400e9)
		for b := range 5 * 288 {
			ts := t0 + int64(b)*min5
			if rng.IntN(40) == 0 {
				continue // a gap
			}
			v := 1000 * (1 + rng.Float64())
			if b == 700 {
				v = 1e6 // a rebase
			}
			day.Put(ts, v)
			plain.Put(ts, v)
			if b%97 == 0 { // an outlier replaced afterwards
				day.Put(ts-3*min5, 5)
				plain.Put(ts-3*min5, 5)
			}
			for back := range int64(3 * 288) {
				x := ts - back*min5
				dv, dok := day.Get(x)
				pv, pok := plain.Get(x)
				if dv != pv || dok != pok {
					t.Fatalf("%d bits, bucket %d, %d back: day-major %v %v, plain %v %v", f.Bits(), b, back, dv, dok, pv, pok)
				}
			}
		}
		db, _ := day.MarshalBinary()
		pb, _ := plain.MarshalBinary()
		if string(db) != string(pb) {
			t.Fatalf("%d bits: checkpoints differ between layouts", f.Bits())
		}
		var back Ring
		if err := back.UnmarshalBinary(pb); err != nil {
			t.Fatal(err)
		}
		if back.days != 3 {
			t.Fatalf("restored ring in %d-day layout, want 3", back.days)
		}
		for x := day.Oldest(); x <= day.Last(); x += min5 {
			if a, b := day.Code(x), back.Code(x); a != b {
				t.Fatalf("%d bits: restored code %d at %d, want %d", f.Bits(), b, x, a)
			}
		}
	}
}
