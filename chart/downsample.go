package chart

import "math"

// Keep says which value of a run of buckets a downsampled line shows.
type Keep int

const (
	// KeepMean shows the mean: right for a smooth reference line (a
	// baseline), wrong for a signal, where it hides a one-bucket peak.
	KeepMean Keep = iota
	// KeepMin shows the lowest bucket of each run: a drop (traffic,
	// routed space) is drawn as deep as it went.
	KeepMin
	// KeepMax shows the highest bucket of each run: a burst (withdrawals,
	// latency, loss) is drawn as high as it went.
	KeepMax
)

// Downsample folds runs of f values into one point each, ignoring NaN (a
// run of only NaN stays a gap). It returns the line keep asks for and each
// run's lowest and highest value, so a chart can draw the run's whole
// range as a band: a bucket of 315 withdrawals among three of none is
// still 315 in hi (and in the line under KeepMax), never the mean of 79.
func Downsample(v []float64, f int, keep Keep) (line, lo, hi []float64) {
	if f < 1 {
		f = 1
	}
	n := (len(v) + f - 1) / f
	line, lo, hi = make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	for i := 0; i < len(v); i += f {
		sum, cnt := 0.0, 0
		mn, mx := math.Inf(1), math.Inf(-1)
		for _, x := range v[i:min(i+f, len(v))] {
			if math.IsNaN(x) {
				continue
			}
			sum += x
			cnt++
			mn, mx = math.Min(mn, x), math.Max(mx, x)
		}
		if cnt == 0 {
			line, lo, hi = append(line, math.NaN()), append(lo, math.NaN()), append(hi, math.NaN())
			continue
		}
		lo, hi = append(lo, mn), append(hi, mx)
		switch keep {
		case KeepMin:
			line = append(line, mn)
		case KeepMax:
			line = append(line, mx)
		default:
			line = append(line, sum/float64(cnt))
		}
	}
	return line, lo, hi
}
