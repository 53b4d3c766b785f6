package series

import (
	"math"
	"math/rand/v2"
	"testing"
)

// DayCodes must read what Code reads, day by day, in either layout (day-major
// packed, or grouped by time of day when the days stay close), for times
// held, partly held and ahead of the ring.
func TestDayCodesMatchCode(t *testing.T) {
	const w = int64(300e9)
	const day = int64(24 * 3600e9)
	for _, noise := range []float64{0.3, 0.01} {
		for _, n := range []int{3 * 288, 3*288 + 5, 14 * 288} {
			rng := rand.New(rand.NewPCG(5, uint64(n)))
			r := New(n, w)
			t0 := int64(1700006400e9)
			got := make([]uint16, 17)
			for b := range 16 * 288 {
				ts := t0 + int64(b)*w
				v := 1000 * (1 + noise*rng.NormFloat64())
				if rng.IntN(30) == 0 {
					v = math.NaN()
				}
				r.Put(ts, v)
				for _, at := range []int64{ts, ts - w*int64(rng.IntN(600)), ts + w, ts + day + w} {
					r.DayCodes(at, got)
					for k, c := range got {
						if want := r.Code(at - int64(k)*day); c != want {
							t.Fatalf("noise %g, ring of %d (grouped %v), bucket %d: day %d of %d: code %d, Code %d", noise, n, r.grouped, b, k, at, c, want)
						}
					}
				}
			}
			if n == 14*288 && noise < 0.1 && !r.grouped {
				t.Fatalf("a ring of two weeks with 1 %% noise is not grouped: the grouped layout went untested")
			}
		}
	}
}
