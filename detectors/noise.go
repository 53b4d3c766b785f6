package detectors

import "math"

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
// deviation is σ·√(2/π), so σ is 1.2533 times it. Outliers never reach it:
// the detector only lets ordinary buckets through.
type noiseModel struct {
	Abs [48]float32
	N   [48]uint16
}

const noiseAlpha = 1.0 / 48

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

// sigmaAt is the forecast error in slot h (slotOf of a bucket's start) as
// a standard deviation of the log-residual; ok is false until that hour
// (of a weekday, or of a weekend day) has been seen for an hour of buckets
// of width w.
func (m *noiseModel) sigmaAt(h int, w int64) (float64, bool) {
	if int64(m.N[h]) < max(2, 3600e9/w) {
		return 0, false
	}
	return 1.2533 * float64(m.Abs[h]), true
}
