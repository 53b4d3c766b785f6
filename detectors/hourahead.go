package detectors

import (
	"math"

	"github.com/outagewatch/outagewatch/series"
)

// aheadBuckets is how many buckets an hourAhead holds: an hour of
// 5-minute buckets, the time between two rankings of similar days.
const aheadBuckets = 12

// hourAhead holds traffic_drop's similar-days baselines for the buckets
// up to the next ranking, computed when the ranking is. Every one of them
// reads past days only, which the ring already holds, in the columns next
// to those the ranking has just read: an hour of baselines costs one pass
// over a few cache lines instead of a pass per bucket over every series'
// history. A baseline is used only while the ring is what the computation
// assumed: the same stored codes (Rev), advanced by one bucket per bucket
// (Last, which trails the bucket judged by one when the aggregator stores
// a bucket after judging it), so that the same buckets are held and the same days count; then
// it is the baseline recomputing would give, to the bit. Otherwise the
// bucket reads its baseline through dayColumns.
type hourAhead struct {
	at   int64 // the ranking's bucket: base[j] is for at + j·w; 0 = none
	off  int64 // at − the ring's last bucket then (w: judged before stored)
	rev  uint16
	n    uint8                 // baselines held
	base [aheadBuckets]float64 // NaN where no similar day had data
}

// fill computes the baselines of the buckets at t, t+w, … before the next
// ranking, from the ranking similar made at t. cols is scratch.
func (h *hourAhead) fill(r *series.Ring, similar []int16, t, w int64, maxDays int, cols *[][]uint16) {
	h.at = 0
	nb := int(min(aheadBuckets, (3600e9+w-1)/w))
	off := t - r.Last()
	if r.Last() == 0 || off < 0 || r.Width() != w || int64(nb+1)*w+off >= dayNs || len(similar) == 0 {
		return
	}
	oldest, n := r.Oldest(), int64(r.Len())
	top := 0
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
	for j := range nb {
		at := t + int64(j)*w
		// The ring at the bucket at, one bucket further per bucket: its
		// last bucket, what it still holds and how many days that makes.
		last := at - off
		gone := last - n*w
		days := int(min(int64(maxDays), (at-max(oldest, last-(n-1)*w))/dayNs))
		k := min(max(3, days*6/28), 6)
		var buf [maxColumns]float64
		vs := buf[:0]
		for _, d := range similar {
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
	h.at, h.off, h.rev, h.n = t, off, r.Rev(), uint8(nb)
}

// get returns the baseline held for the bucket at t (ok false where no
// similar day had data); hit is false when none is held for t, or the ring
// is not what fill assumed.
func (h *hourAhead) get(r *series.Ring, t, w int64) (base float64, ok, hit bool) {
	if h.at == 0 || t < h.at || (t-h.at)%w != 0 || (t-h.at)/w >= int64(h.n) || r.Rev() != h.rev || t-r.Last() != h.off {
		return 0, false, false
	}
	b := h.base[(t-h.at)/w]
	return b, !math.IsNaN(b), true
}
