package detectors

import (
	"errors"
	"math"
	"slices"

	"github.com/outagewatch/outagewatch/series"
)

// The baselines the detectors judge a bucket against are read from the
// series' history ring by the few helpers here, so that detectors that
// mean the same window read the same buckets.

const dayNs = int64(24 * 3600e9)

// median returns the median of xs (which it sorts); NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// quantile returns the q-quantile of xs (which it sorts), the lower of the
// two neighbours rather than an interpolation: withdrawals are counts.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// validateHistory checks the baseline_window and min_history settings of
// the detectors whose baseline is recentHistory.
func validateHistory(window, minHistory Duration) error {
	switch {
	case minHistory <= 0:
		return errors.New("min_history: must be positive")
	case window < minHistory:
		return errors.New("baseline_window: must be at least min_history")
	}
	return nil
}

// recentHistory returns the values held in [t-window, t), leaving out the
// buckets whose starts are in except (ascending), in *scratch, which it
// reuses; ok is false with less than minHistory of them.
func recentHistory(r *series.Ring, t, w int64, window, minHistory Duration, except []int64, scratch *[]float64) (vs []float64, ok bool) {
	vs = (*scratch)[:0]
	for x := max(t-int64(window), r.Oldest()); x < t; x += w {
		for len(except) > 0 && except[0] < x {
			except = except[1:]
		}
		if len(except) > 0 && except[0] == x {
			continue
		}
		if v, ok := r.Get(x); ok {
			vs = append(vs, v)
		}
	}
	*scratch = vs
	return vs, int64(len(vs))*w >= int64(minHistory)
}

// recentMedian is the median of the values held in [t-window, t); ok is
// false with less than minHistory of them.
func recentMedian(r *series.Ring, t, w int64, window, minHistory Duration, scratch *[]float64) (float64, bool) {
	vs, ok := recentHistory(r, t, w, window, minHistory, nil, scratch)
	if !ok {
		return 0, false
	}
	return median(vs), true
}

// smoothedAt is the median of the buckets at t-w, t and t+w that are held.
func smoothedAt(r *series.Ring, t, w int64) (float64, bool) {
	var buf [3]float64
	vs := buf[:0]
	for _, x := range [3]int64{t - w, t, t + w} {
		if v, ok := r.Get(x); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

// previousDays appends to vs the smoothed value at the time of day of t on
// each of the last n days, as far back as the ring holds.
func previousDays(r *series.Ring, t, w int64, n int, vs []float64) []float64 {
	for k := 1; k <= n; k++ {
		at := t - int64(k)*dayNs
		if at < r.Oldest() {
			break
		}
		if v, ok := smoothedAt(r, at, w); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// robustSpread is the median absolute deviation of xs around m, scaled by
// 1.4826 so that it estimates a standard deviation for normal noise while
// a few spikes leave it alone. It overwrites xs with the deviations.
func robustSpread(xs []float64, m float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	for i, x := range xs {
		xs[i] = math.Abs(x - m)
	}
	return 1.4826 * median(xs)
}

// levelRun follows a run of outlier buckets whose values the history did
// not keep, so that a new level which lasts a rule's adapt_after becomes
// the baseline instead of firing (or flapping) forever.
type levelRun struct {
	// Substituted counts the buckets of the run.
	Substituted int
	// Ratios holds the observed/baseline ratios of the run's last day: the
	// new level, should it last.
	Ratios []float32
}

// add records one outlier bucket.
func (l *levelRun) add(ratio float64) {
	const kept = 288
	if len(l.Ratios) == kept {
		copy(l.Ratios, l.Ratios[1:])
		l.Ratios = l.Ratios[:kept-1]
	}
	l.Ratios = append(l.Ratios, float32(ratio))
	l.Substituted++
}

// hold takes an outlier bucket at t of value v against baseline base, in
// a series that reports every step. While the run is younger than after
// the history keeps base in the bucket's place; once it has lasted after
// (never when after is 0), the run's level becomes the baseline (adapt)
// and hold returns its ratio to the old one and true.
func (l *levelRun) hold(r *series.Ring, t int64, v, base float64, step int64, after Duration) (float64, bool) {
	l.add(v / base)
	if after > 0 && int64(l.Substituted)*step >= int64(after) {
		return l.adapt(r, t), true
	}
	r.Put(t, base)
	return 0, false
}

func (l *levelRun) reset() { l.Substituted, l.Ratios = 0, l.Ratios[:0] }

// adapt makes the run's level the baseline: every bucket of the history
// before t is multiplied by the run's median ratio, so the history keeps
// its shape (a daily cycle, a weekly one) at the new level. It returns
// the ratio and ends the run.
func (l *levelRun) adapt(r *series.Ring, t int64) float64 {
	ratios := make([]float64, len(l.Ratios))
	for i, x := range l.Ratios {
		ratios[i] = float64(x)
	}
	ratio := median(ratios)
	for x := r.Oldest(); x < t; x += r.Width() {
		if v, ok := r.Get(x); ok {
			r.Put(x, v*ratio)
		}
	}
	l.reset()
	return ratio
}
