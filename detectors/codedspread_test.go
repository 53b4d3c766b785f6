package detectors

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A series' values come back as codes a fixed width apart. Near a noise
// of a few codes the plain median absolute deviation of the codes can
// only take values a code apart, so its reading of the noise jumps;
// spread over their codes, with the codes' own share of the variance
// taken off, the deviations give the noise within a few per cent
// whatever it is. A series that keeps to one code has no noise to read,
// as before.
func TestCodedSpreadMovesWithTheNoise(t *testing.T) {
	if got := codedSpread([]float64{7, 7, 7}, 7, 1); got != 0 {
		t.Fatalf("one code: %v, want 0", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 4000
	var worstPlain, worstCoded float64
	for sigma := 1.5; sigma <= 4.0; sigma += 0.125 {
		raw := make([]float64, n)
		for i := range raw {
			raw[i] = 100 + sigma*rng.NormFloat64()
		}
		exact := robustSpread(append([]float64(nil), raw...), 100)
		coded := make([]float64, n)
		for i, x := range raw {
			coded[i] = math.Round(x)
		}
		plain := robustSpread(append([]float64(nil), coded...), 100)
		spread := codedSpread(append([]float64(nil), coded...), 100, 1)
		worstPlain = max(worstPlain, math.Abs(plain/exact-1))
		worstCoded = max(worstCoded, math.Abs(spread/exact-1))
		t.Logf("σ %.3f: unquantised %.3f, codes %.3f, spread over codes %.3f", sigma, exact, plain, spread)
	}
	if worstCoded > 0.03 {
		t.Errorf("spread over codes is up to %.1f %% off the unquantised spread, want within 3 %%", 100*worstCoded)
	}
	if worstPlain < 0.1 {
		t.Errorf("the plain spread of codes is within %.1f %% of the unquantised: this test no longer shows the steps", 100*worstPlain)
	}
}
