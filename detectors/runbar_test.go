package detectors

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/series"
)

// The run bar: one bucket is judged at k; n independent buckets share
// the tail P(Z ≥ k) as its n-th root; correlated ones ask for more, up
// to k as a deviation carries over whole.
func TestRunSigmas(t *testing.T) {
	cases := []struct {
		n    int
		rho  float64
		want float64
	}{
		{1, 0, 3},
		{1, 0.9, 3},
		// (P(Z ≥ 3))^(1/2) = 0.03674 = P(Z ≥ 1.790)
		{2, 0, 1.790},
		// (P(Z ≥ 3))^(1/3) = 0.1106 = P(Z ≥ 1.223)
		{3, 0, 1.223},
		// P(Z1 ≥ b, Z2 ≥ b; ρ = 0.6) = 0.00135 at b = 2.42
		{2, 0.6, 2.420},
	}
	for _, c := range cases {
		if got := runSigmas(3, c.n, c.rho); math.Abs(got-c.want) > 0.005 {
			t.Errorf("runSigmas(3, %d, %g) = %.4f, want %.3f", c.n, c.rho, got, c.want)
		}
	}
	// The joint tail it aims at is the one-bucket tail, and the bar
	// rises with the correlation.
	prev := 0.0
	for _, rho := range []float64{0, 0.2, 0.4, 0.6, 0.8, 0.95} {
		b := runSigmas(3, 2, rho)
		if b <= prev || b > 3 {
			t.Fatalf("runSigmas(3, 2, %g) = %.3f after %.3f: want rising, at most 3", rho, b, prev)
		}
		prev = b
		if p := orthant(b, rho); math.Abs(p-normTail(3))/normTail(3) > 1e-3 {
			t.Fatalf("rho %g: two buckets past %.3f have chance %.3g, want %.3g", rho, b, p, normTail(3))
		}
	}
	// The orthant of independent normals is the square of one tail.
	if p, want := orthant(1, 0), normTail(1)*normTail(1); math.Abs(p-want) > 1e-12 {
		t.Fatalf("orthant(1, 0) = %g, want %g", p, want)
	}
}

// windowNoise reads how much a deviation carries into the next bucket:
// an AR(1) series of coefficient 0.6 gives about 0.6, white noise about 0.
func TestWindowNoiseAutocorrelation(t *testing.T) {
	const w = int64(600e9)
	for _, phi := range []float64{0, 0.6} {
		r := series.New(200, w)
		rng := rand.New(rand.NewPCG(1, 2))
		e := 0.0
		t0 := int64(1700000000e9) / w * w
		n := 144
		for i := range n {
			e = phi*e + rng.NormFloat64()
			r.Put(t0+int64(i)*w, 100+5*e)
		}
		var sc noiseScratch
		_, sigma, rho, _ := windowNoise(r, t0+int64(n)*w, w, w, Duration(int64(n)*w), 100, nil, &sc)
		if math.Abs(rho-phi) > 0.15 {
			t.Errorf("AR(1) of %g: rho %.2f", phi, rho)
		}
		if sigma <= 0 {
			t.Errorf("AR(1) of %g: sigma %g", phi, sigma)
		}
	}
}

// The noise bound: σ read from n residuals' mean absolute deviation is
// under the bound in 95 % of draws (to within a point), for the simulated
// and the Wilson–Hilferty bounds alike, and the bound falls with n to 1.14 for a
// long-learnt hour.
func TestSigmaBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{2, 5, 16, 17, 40, 95} {
		const draws = 100_000
		under := 0
		for range draws {
			s := 0.0
			for range n {
				s += math.Abs(r.NormFloat64())
			}
			// The σ this draw would estimate, at its bound.
			if 1.2533*s/float64(n)*sigmaBounds[n] >= 1 {
				under++
			}
		}
		// Within a point of 95 % (the binomial spread of the share at
		// 100,000 draws is 0.07 %; the gamma form is a little short).
		if got := float64(under) / draws; math.Abs(got-0.95) > 0.01 {
			t.Errorf("%d residuals: σ under the bound in %.2f %% of draws, want 95 %%", n, 100*got)
		}
	}
	for n := 3; n < len(sigmaBounds); n++ {
		if !(sigmaBounds[n] < sigmaBounds[n-1]) {
			t.Fatalf("bound for %d residuals %v, for %d %v: want it falling", n, sigmaBounds[n], n-1, sigmaBounds[n-1])
		}
	}
	if b := sigmaBounds[len(sigmaBounds)-1]; math.Abs(b-1.142) > 0.002 {
		t.Errorf("bound of a learnt hour %v, want 1.142", b)
	}
}

// A run covers `for` from the start of its first reading to the end of
// its last, each reading spanning the signal's cadence: at the series'
// own cadence that is the buckets `for` spans; on a sparser export, never
// one reading for a `for` longer than what one reading measures.
func TestReadings(t *testing.T) {
	const m = int64(60e9)
	for _, c := range []struct {
		d             Duration
		step, cadence int64
		want          int
	}{
		{0, 5 * m, 0, 1},
		{Duration(5 * m), 5 * m, 0, 1},
		{Duration(10 * m), 5 * m, 0, 2},        // two buckets, as buckets() says
		{Duration(20 * m), 10 * m, 10 * m, 2},  // IODA's active probing at its own cadence
		{Duration(10 * m), 60 * m, 5 * m, 2},   // BGP thinned to an hour: one reading shows 5 minutes
		{Duration(5 * m), 60 * m, 5 * m, 1},    // …which is all a 5-minute for asks
		{Duration(20 * m), 60 * m, 10 * m, 2},  // active probing thinned to an hour
		{Duration(120 * m), 60 * m, 10 * m, 3}, // two hours: from 0:00 to the end of the 2:00 reading
		{Duration(30 * m), 60 * m, 0, 1},       // an hourly total spans its hour
		{Duration(30 * m), 15 * m, 15 * m, 2},
	} {
		if got := c.d.readings(c.step, c.cadence); got != c.want {
			t.Errorf("for %v, step %v, cadence %v: %d readings, want %d", time.Duration(c.d), time.Duration(c.step), time.Duration(c.cadence), got, c.want)
		}
	}
}
