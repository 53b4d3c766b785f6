package detectors

import "github.com/outagewatch/outagewatch/series"

// maxColumns is how many past days a dayColumns keeps: the most a
// baseline of traffic_drop takes (six similar days, or the six previous
// days before it has a week).
const maxColumns = 6

// dayColumns keeps, for the past days a baseline reads (the similar days
// in ranked order, or the previous days), the stored codes of the three
// buckets around the same time of day: what smoothedAt reads. The next
// bucket's window on a day shares two of those three buckets, so a
// baseline one bucket later reads one code a day instead of three, and
// compares codes instead of sorting values. A code read stays what the
// ring holds until the ring's stored codes change (Rev) or the bucket
// leaves the ring, which is checked; anything else (a skipped bucket, a
// new ranking) reads the three codes again. The baselines are smoothedAt's
// and median's to the bit: codes order as their values do, and the middle
// two of an even count are decoded and averaged in the same order.
type dayColumns struct {
	at    int64 // bucket start the codes were read for; 0 = none
	rev   uint16
	n     uint8 // columns held, for positions 0..n-1 of the day list
	sim   bool  // the list is the similar days (else the previous days)
	codes [maxColumns][3]uint16
}

// reset forgets the codes: the day list changed.
func (c *dayColumns) reset() { c.at = 0 }

// smoothed returns smoothedAt(r, t − day·24 h, w) for the day at position
// i of the day list, reading through the columns. next must be called
// once the bucket's positions have been read, with how many were.
func (c *dayColumns) smoothed(r *series.Ring, t, w int64, i, day int, slide bool) (float64, bool) {
	at := t - int64(day)*dayNs
	var k [3]uint16
	if slide && i < int(c.n) {
		k = c.codes[i]
		// The buckets kept may have left the ring since: a code of a
		// bucket no longer held reads as missing.
		gone := r.Last() - int64(r.Len())*w
		if at-w <= gone {
			k[1] = 0
		}
		if at <= gone {
			k[2] = 0
		}
		k = [3]uint16{k[1], k[2], r.Code(at + w)}
	} else {
		k = [3]uint16{r.Code(at - w), r.Code(at), r.Code(at + w)}
	}
	if i < maxColumns {
		c.codes[i] = k
	}
	return medianCode(r, k)
}

// slides reports whether the codes held can be slid to the bucket at t:
// one bucket after the last read, of the same kind of day list, with the
// ring's codes unchanged.
func (c *dayColumns) slides(r *series.Ring, t, w int64, sim bool) bool {
	return c.at != 0 && t-c.at == w && c.sim == sim && c.rev == r.Rev() && r.Width() == w && w < dayNs
}

// done records that positions 0..n-1 now hold the codes for the bucket at t.
func (c *dayColumns) done(r *series.Ring, t int64, n int, sim bool) {
	c.at, c.rev, c.n, c.sim = t, r.Rev(), uint8(min(n, maxColumns)), sim
}

// medianCode is smoothedAt's median of the held buckets among k, from
// their codes: one, two or three of them.
func medianCode(r *series.Ring, k [3]uint16) (float64, bool) {
	a, b, c := k[0], k[1], k[2]
	// Order the three, missing (0) first.
	if a > b {
		a, b = b, a
	}
	if b > c {
		b, c = c, b
	}
	if a > b {
		a, b = b, a
	}
	switch {
	case b == 0 && c == 0:
		return 0, false
	case b == 0: // one held
		return r.Decode(c)
	case a == 0: // two held: their mean, lower first, as median adds them
		lo, _ := r.Decode(b)
		hi, _ := r.Decode(c)
		return (lo + hi) / 2, true
	default:
		return r.Decode(b)
	}
}

// medianSmall is median for the few values of a baseline (at most
// maxColumns), sorted in place by insertion.
func medianSmall(xs []float64) float64 {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
