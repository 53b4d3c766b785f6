package detectors

import (
	"math"

	"github.com/outagewatch/outagewatch/series"
)

// maxColumns is the most days a baseline takes: six similar days, or
// the six previous days before it has a week.
const maxColumns = 6

// aheadBuckets is how many buckets an hourAhead holds: an hour of
// 5-minute buckets, the time between two rankings of similar days.
const aheadBuckets = 12

// hourAhead holds traffic_drop's baselines for the hour ahead (up to the
// next ranking of similar days), computed at once. Every one of them reads
// past days only, which the ring already holds, side by side in its
// day-major layout: an hour of baselines costs one pass over a few cache
// lines of a series' history instead of a pass per bucket, which at many
// series is a cache miss per bucket. A baseline is used only while the
// ring is what the computation assumed: the same stored codes (Rev),
// advanced by one bucket per bucket (Last, which trails the bucket judged
// by one when the aggregator stores a bucket after judging it), so that
// the same buckets are held and the same days count; then it is
// baselineFromRing's to the bit: codes order as their values do, and the
// middle two of an even count are decoded and averaged in the same order.
// Otherwise (a skipped bucket, a rebase, a new ranking) the hour is
// computed again from that bucket.
type hourAhead struct {
	at   int64 // base[j] is for the bucket at + j·w; 0 = none
	off  int64 // at − the ring's last bucket then
	rev  uint16
	n    uint8                 // baselines held
	sim  bool                  // similar days (else previous days)
	base [aheadBuckets]float64 // NaN where no day had data
}

// fill computes the baselines of the buckets at t, t+w, … before until,
// from the similar days in ranked order, or from the previous days when
// similar is nil (for as long as the ring holds less than a week). cols is
// scratch.
func (h *hourAhead) fill(r *series.Ring, similar []int16, t, w, until int64, maxDays int, cols *[][]uint16) {
	h.at = 0
	nb := int(min(aheadBuckets, (until-t+w-1)/w))
	off := t - r.Last()
	if nb <= 0 || r.Last() == 0 || off < 0 || r.Width() != w || int64(nb+1)*w+off >= dayNs {
		return
	}
	oldest, n := r.Oldest(), int64(r.Len())
	top := min(maxDays, 6)
	for _, d := range similar {
		top = max(top, int(d))
	}
	// The columns of codes at t−w … t+nb·w on days 0..top.
	for len(*cols) < nb+2 {
		*cols = append(*cols, nil)
	}
	for c := range nb + 2 {
		col := (*cols)[c]
		if cap(col) < top+1 {
			col = make([]uint16, top+1)
		}
		col = col[:top+1]
		r.DayCodes(t+int64(c-1)*w, col)
		(*cols)[c] = col
	}
	var prev [6]int16
	for j := range nb {
		at := t + int64(j)*w
		// The ring at the bucket at, one bucket further per bucket: its
		// last bucket, what it still holds and how many days that makes.
		last := at - off
		gone := last - n*w
		days := int(min(int64(maxDays), (at-max(oldest, last-(n-1)*w))/dayNs))
		list, k := similar, min(max(3, days*6/28), 6)
		if similar == nil {
			if days >= 7 || days == 0 {
				nb = j // the similar days take over, or no day yet
				break
			}
			for i := range days {
				prev[i] = int16(i + 1)
			}
			list, k = prev[:days], days
		}
		var buf [maxColumns]float64
		vs := buf[:0]
		for _, d := range list {
			if len(vs) == k {
				break
			}
			var codes [3]uint16
			for m := range 3 {
				if at+int64(m-1)*w-int64(d)*dayNs > gone {
					codes[m] = (*cols)[j+m][d]
				}
			}
			if v, ok := medianCode(r, codes); ok {
				vs = append(vs, v)
			}
		}
		h.base[j] = math.NaN()
		if len(vs) > 0 {
			h.base[j] = medianSmall(vs)
		}
	}
	if nb > 0 {
		h.at, h.off, h.rev, h.n, h.sim = t, off, r.Rev(), uint8(nb), similar != nil
	}
}

// get returns the baseline held for the bucket at t and its method (ok
// false where no day had data); hit is false when none is held for t, or
// the ring is not what fill assumed.
func (h *hourAhead) get(r *series.Ring, t, w int64, sim bool) (base float64, method string, ok, hit bool) {
	if h.at == 0 || h.sim != sim || t < h.at || (t-h.at)%w != 0 || (t-h.at)/w >= int64(h.n) || r.Rev() != h.rev || t-r.Last() != h.off {
		return 0, "", false, false
	}
	b := h.base[(t-h.at)/w]
	if math.IsNaN(b) {
		return 0, "", false, true
	}
	if sim {
		return b, "similar_days", true, true
	}
	return b, "previous_days", true, true
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
