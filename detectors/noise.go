package detectors

import (
	"fmt"
	"math"

	"github.com/outagewatch/outagewatch/series"
)

// noiseModel learns how far a series usually lands from its forecast, per
// hour of the day (UTC), weekdays apart from weekends: traffic at 4 am is
// both smaller and relatively noisier than at 8 pm, and one spread for the
// whole day would be too tight at night and too loose in the evening. The
// early hours of a weekend are where similar days mislead most (the hours
// before them look like any weeknight), so they learn their own error.
//
// Each hour keeps the mean absolute log-residual ln(value/baseline) of the
// ordinary buckets it saw: a plain mean while it has few, then an
// exponentially weighted one with a memory of about four days (alpha 1/48,
// twelve 5-minute buckets an hour). For normal noise the mean absolute
// deviation is σ·√(2/π), so σ is 1.2533 times it (read at its upper
// confidence bound: see sigmaAt). Outliers never reach it:
// the detector only lets ordinary buckets through.
type noiseModel struct {
	Abs [48]float32
	N   [48]uint16
}

const noiseAlpha = 1.0 / 48

// knownAfter is how many residuals make an hour known: one residual is
// no spread.
const knownAfter = 2

// slotOf is the hour of the day of t, plus 24 on Saturdays and Sundays
// (UTC).
func slotOf(t int64) int {
	h := int((t % dayNs) / 3600e9)
	// 1970-01-01 was a Thursday: day 2 is the first Saturday.
	if d := (t / dayNs) % 7; d == 2 || d == 3 {
		h += 24
	}
	return h
}

// learnAt adds the log-residual of one ordinary bucket, of slot h (slotOf
// of its start: the same for every series of a bucket, so computed once).
func (m *noiseModel) learnAt(h int, r float64) {
	a := float32(min(math.Abs(r), 1))
	n := m.N[h]
	if n < 48 {
		m.Abs[h] += (a - m.Abs[h]) / float32(n+1)
	} else {
		m.Abs[h] += (a - m.Abs[h]) * noiseAlpha
	}
	if n < math.MaxUint16 {
		m.N[h] = n + 1
	}
}

// unlearnAt takes back the last residual r learnt in slot h, when it
// turns out to have been an outage's edge, not noise: learnAt inverted.
func (m *noiseModel) unlearnAt(h int, r float64) {
	a := float32(min(math.Abs(r), 1))
	switch n := m.N[h]; {
	case n <= 1:
		m.Abs[h], m.N[h] = 0, 0
	case n <= 48:
		m.Abs[h], m.N[h] = max(0, (m.Abs[h]*float32(n)-a)/float32(n-1)), n-1
	default:
		m.Abs[h], m.N[h] = max(0, (m.Abs[h]-a*noiseAlpha)/(1-noiseAlpha)), n-1
	}
}

// learnDropAt learns r in slot h as learnAt does, but while the hour is
// not yet known (fewer than two residuals: sigmaAt cannot judge it) a
// drop past bar (the rule's threshold, on the log scale) counts as no
// more than bar: it may be the very outage the rule is for, and learnt
// whole, one missed night would make every later night at that hour
// read as noise. Once the hour is known, residuals are learnt whole, so
// a night that is truly noisy learns its full spread.
func (m *noiseModel) learnDropAt(h int, r, bar float64) {
	if m.N[h] < knownAfter {
		r = max(r, -bar)
	}
	m.learnAt(h, r)
}

// unlearnDropAt takes back the last residual r that learnDropAt learnt
// in slot h with the same bar: it was capped if the hour had fewer than
// two residuals before it.
func (m *noiseModel) unlearnDropAt(h int, r, bar float64) {
	if m.N[h] <= knownAfter {
		r = max(r, -bar)
	}
	m.unlearnAt(h, r)
}

// sigmaAt is the forecast error in slot h (slotOf of a bucket's start) as
// a standard deviation of the log-residual, taken at its upper 95 %
// confidence bound (sigmaBounds) so that an hour known from a few
// residuals is judged, but against all the noise it may have; ok is false
// until that hour (of a weekday, or of a weekend day) has two residuals.
func (m *noiseModel) sigmaAt(h int) (float64, bool) {
	if m.N[h] < knownAfter {
		return 0, false
	}
	return 1.2533 * float64(m.Abs[h]) * sigmaBounds[min(int(m.N[h]), len(sigmaBounds)-1)], true
}

// estimateAt is the forecast error in slot h as learnt so far, without
// its confidence bound: 0 until the hour is known (two residuals, as
// sigmaAt), since one residual is no spread.
func (m *noiseModel) estimateAt(h int) float64 {
	if m.N[h] < knownAfter {
		return 0
	}
	return 1.2533 * float64(m.Abs[h])
}

// sigmaBounds[n] is how far above the estimate σ may be, at 95 %
// confidence, when it is read from the mean absolute deviation of n
// residuals: the inverse of the 5th percentile of that mean over its
// expectation, for normal residuals. The exponentially weighted mean of a
// long-learnt hour counts as 2/α − 1 = 95 residuals, its effective sample
// size, where σ may be 14 % over the estimate. Two residuals know σ only
// to within a factor of four, and a night whose traffic swings by a third
// would page at its troughs were it judged against the estimate alone:
// the bound lets an hour be judged from its first residuals (a
// half-hourly export on its third day, not after a week) without that
// (TestTrafficDropLearnsNoiseOnFewResiduals).
//
// For 2 to 16 residuals the bounds are from four million simulated means
// of n absolute standard normal draws each; past that the mean is near
// enough a gamma variable (shape k = n·(2/π)/(1−2/π), matched in mean and
// variance), whose 5th percentile Wilson and Hilferty's cube-root form
// gives within 1 % (σ under the bound in 94.5 % of draws at 17, nearer
// 95 % on from there).
var sigmaBounds = func() (b [2 / noiseAlpha]float64) {
	copy(b[2:], []float64{3.979, 2.752, 2.283, 2.036, 1.884, 1.776, 1.699, 1.637, 1.589, 1.549, 1.515, 1.486, 1.463, 1.441, 1.422})
	b[0], b[1] = math.Inf(1), math.Inf(1)
	for n := 17; n < len(b); n++ {
		k := float64(n) * 2 / math.Pi / (1 - 2/math.Pi)
		lo := 1 - 1/(9*k) - 1.645/(3*math.Sqrt(k))
		b[n] = 1 / (lo * lo * lo)
	}
	return b
}()

// countSigmas is the default noise factor of the detectors that judge a
// level against the median of a window (prefix_withdrawal on gauges and
// counts, dns_failure, packet_loss): three standard deviations, Shewhart's
// control limit, past which an ordinary series strays in about one bucket
// of 740 (one-sided), and a change held for two buckets in one of half a
// million.
const countSigmas = 3

// windowNoise is what a value at t may be by chance, read from the
// window [t−window, t) of r whose median is base: the value expected at
// t's hour of the day, and the spread around it. A series with a daily
// cycle (a telescope's sources follow the day of the machines behind
// them) is lower at night than its median without anything being wrong,
// so where the window covers two days and more and the cycle is most of
// the series' spread, each hour of the day has its own level (the median
// of the window's buckets at that hour) and the spread is that of every
// bucket's residual against its hour's level; otherwise the level is base
// and the spread the window's own. A cycle must be seen twice to be one:
// in a window of one day each hour's "level" is that hour's few buckets,
// which leaves no residual to speak of and calls noise a cycle. The
// spread is robust (the scaled median absolute deviation); a count's
// sampling noise is the caller's to add. The window's outliers were
// kept out of the history (the baseline stands in their place), so a past
// outage does not widen it; but those stand-ins are no readings, and
// their spread is nil: the spread and rho are read from the readings
// alone, leaving out the buckets held records (nil: none). n is how many
// readings that is.
//
// rho is the lag-1 autocorrelation of the same residuals, over pairs of
// adjacent readings (buckets step apart, the series' own cadence),
// clipped to [0, 0.95]: how much a bucket's chance deviation carries into
// the next, which decides how rare a run of deviations is (runSigmas).
func windowNoise(r *series.Ring, t, w, step int64, window Duration, base float64, held *heldMask, sc *noiseScratch) (level, sigma, rho float64, n int) {
	sc.v, sc.h, sc.x = sc.v[:0], sc.h[:0], sc.x[:0]
	from := max(t-int64(window), r.Oldest())
	for x := from; x < t; x += w {
		if held.has(x, w) {
			continue
		}
		if v, ok := r.Get(x); ok {
			sc.v, sc.h, sc.x = append(sc.v, v), append(sc.h, int8(x%dayNs/3600e9)), append(sc.x, x)
		}
	}
	level = base
	var hourly [24]float64
	byHour := t-from >= 2*dayNs
	if byHour {
		for h := range hourly {
			sc.tmp = sc.tmp[:0]
			for i, v := range sc.v {
				if int(sc.h[i]) == h {
					sc.tmp = append(sc.tmp, v)
				}
			}
			if len(sc.tmp) < 2 {
				// An hour the window barely holds: judge the day as one.
				byHour = false
				break
			}
			hourly[h] = median(sc.tmp)
		}
	}
	// Values come back from the ring as its codes, within half a code of
	// the truth: a code's width at the series' level.
	q := base * (r.Format().Step() - 1)
	sc.tmp = append(sc.tmp[:0], sc.v...)
	sigma = codedSpread(sc.tmp, base, q)
	if byHour {
		sc.tmp = sc.tmp[:0]
		for i, v := range sc.v {
			sc.tmp = append(sc.tmp, v-hourly[sc.h[i]])
		}
		// The hours' own levels stand only where the day's cycle is most
		// of what moves the series (three quarters of its variance): in a
		// series without one they are the noise of a few buckets each.
		if s := codedSpread(sc.tmp, 0, q); s < sigma/2 {
			level, sigma = hourly[t%dayNs/3600e9], s
		} else {
			byHour = false
		}
	}
	sc.tmp = sc.tmp[:0]
	for i, v := range sc.v {
		if byHour {
			v -= hourly[sc.h[i]]
		} else {
			v -= base
		}
		sc.tmp = append(sc.tmp, v)
	}
	rho = lag1(sc.x, sc.tmp, max(step, w))
	return level, sigma, rho, len(sc.v)
}

// heldMask remembers which buckets of a series' recent history hold a
// stand-in (the baseline put in place of an outage's bucket) rather than
// a reading, so that the series' noise is read from readings alone. A
// window whose stand-ins are counted as readings has its spread shrunk
// by their share (a fifth of stand-ins takes a quarter off the median
// absolute deviation; half or more takes it to zero), and a smaller
// spread lets more buckets pass the noise bar, whose stand-ins shrink it
// further: one false alert breeds the next.
//
// One bit a bucket of the baseline window, by bucket number modulo the
// mask's length, allocated at a series' first stand-in (a series that
// never had one carries none): 36 bytes for a day of 5-minute buckets.
// Exported fields are checkpointed.
type heldMask struct {
	Bits []uint64
}

// mark records whether the bucket at t, of width w, holds a stand-in,
// for a window of the given length.
func (h *heldMask) mark(t, w int64, window Duration, held bool) {
	if h.Bits == nil && !held {
		// Most series never hold a stand-in: nothing to clear.
		return
	}
	if need := int((int64(window)/w + 63) / 64); len(h.Bits) != need {
		// None yet, or a mask of another window's length (restored
		// from a checkpoint of another configuration), whose bits would
		// alias: start afresh.
		h.Bits = make([]uint64, need)
	}
	i := uint64(t/w) % uint64(64*len(h.Bits))
	if held {
		h.Bits[i/64] |= 1 << (i % 64)
	} else {
		h.Bits[i/64] &^= 1 << (i % 64)
	}
}

// has reports whether the bucket at t, of width w, holds a stand-in.
func (h *heldMask) has(t, w int64) bool {
	if h == nil || h.Bits == nil {
		return false
	}
	i := uint64(t/w) % uint64(64*len(h.Bits))
	return h.Bits[i/64]&(1<<(i%64)) != 0
}

// lag1 is the lag-1 autocorrelation of the residuals res of the buckets
// at xs, over the pairs that are w apart, clipped to [0, 0.95]: 0 with
// fewer than ten such pairs. A negative one would make runs rarer than
// independent noise does; it is taken as 0, which errs towards the
// stricter bar.
func lag1(xs []int64, res []float64, w int64) float64 {
	if len(res) == 0 {
		return 0
	}
	var sum, sq float64
	for _, e := range res {
		sum, sq = sum+e, sq+e*e
	}
	n := float64(len(res))
	mean := sum / n
	vr := sq/n - mean*mean
	var cov float64
	pairs := 0
	for i := 1; i < len(res); i++ {
		if xs[i]-xs[i-1] == w {
			cov += (res[i] - mean) * (res[i-1] - mean)
			pairs++
		}
	}
	if pairs < 10 || vr <= 0 {
		return 0
	}
	return min(max(cov/float64(pairs)/vr, 0), 0.95)
}

// noiseScratch is windowNoise's room, kept by a detector between buckets.
type noiseScratch struct {
	v, tmp []float64
	h      []int8
	x      []int64
}

// flapHold is Prometheus' keep_firing_for for one series: after an alert
// resolves, a new drop within the hold is the same alert (it keeps the
// start it had, which its state still holds) and the same page, and the
// run of changed buckets that would make a lasting level the new baseline
// is not restarted by the resolve. Exported fields are checkpointed with
// their state.
type flapHold struct {
	// Until is the end of the hold in Unix seconds (until 2106), 0 for
	// none: four bytes, as a million series each carry one.
	Until uint32
	// Reopened counts the alerts that came back within a hold since the
	// series was last quiet for a whole hold.
	Reopened uint16
}

// unstableAfter is how many returns within the hold make a series
// unstable rather than out: one or two can be an outage with a brief
// recovery (power back, then lost again), a third within hours of the
// last is a series oscillating around its bar. Its alert goes out at
// severity info, saying so (Finding.Unstable).
const unstableAfter = 3

// holding reports whether t is inside the hold.
func (h *flapHold) holding(t int64) bool { return t < int64(h.Until)*1e9 }

// resolved starts the hold of an alert that resolved at t.
func (h *flapHold) resolved(t int64, hold Duration) {
	if hold > 0 {
		h.Until = uint32(min((t+int64(hold)+1e9-1)/1e9, math.MaxUint32))
	}
}

// fire returns the start of an alert firing at t whose own run began at
// runStart: prevStart, that of the alert it continues, when t is inside
// the hold.
func (h *flapHold) fire(runStart, prevStart, t int64) (start int64, reopened bool) {
	if h.holding(t) {
		h.Reopened = min(h.Reopened+1, math.MaxUint16-1)
		h.Until = 0
		return prevStart, true
	}
	h.Reopened = 0
	return runStart, false
}

// mark says on f that the alert came back within the hold, and how often.
func (h *flapHold) mark(f *Finding) {
	if f.Details == nil {
		f.Details = map[string]any{}
	}
	f.Details["reopened"] = int(h.Reopened)
	if h.Reopened >= unstableAfter {
		f.Unstable = true
		f.Summary += fmt.Sprintf("; unstable: back %d times within its hold of a resolve", h.Reopened)
	}
}

// codedSpread is robustSpread of values held as codes q wide (each within
// q/2 of the truth): the median absolute deviation of the values each
// spread evenly over its code, as the median of grouped data is
// interpolated within its class. A series whose noise is a few codes
// wide has a plain median absolute deviation that can only take a few
// values, a code apart (near a spread of five codes, steps of a fifth of
// it, so the noise bar jumps between readings of the same noise); spread
// over their codes the deviations give a spread that moves with the
// noise. It overwrites xs.
func codedSpread(xs []float64, m, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	if !(q > 0) {
		return robustSpread(xs, m)
	}
	h := q / 2
	hi := 0.0
	for i, x := range xs {
		xs[i] = math.Abs(x - m)
		hi = max(hi, xs[i]+h)
	}
	// share is the fraction of the spread deviations within d: each an
	// even spread over [a-h, a+h], its part below zero folded over.
	share := func(d float64) float64 {
		var s float64
		for _, a := range xs {
			s += min(max((min(d, a+h)-max(-d, a-h))/q, 0), 1)
		}
		return s / float64(len(xs))
	}
	// share rises with d, piecewise linearly: bisect for its half.
	lo := 0.0
	for range 64 {
		mid := (lo + hi) / 2
		if share(mid) < 0.5 {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= q*1e-4 { // a ten-thousandth of a code: well under any noise read
			break
		}
	}
	// Rounding to a code and spreading over it each add a code's even
	// spread, q²/12, to the variance of what the median read: taken off
	// (as Sheppard's correction takes the grouping's share off a grouped
	// variance), what is left is the series' own.
	s := 1.4826 * (lo + hi) / 2
	return math.Sqrt(max(s*s-q*q/6, 0))
}
