package detectors

import (
	"cmp"
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
// reuses; ok is false with less than minHistory of them. A series that
// reports every step, not every bucket (an hourly export judged in
// 5-minute buckets), holds one bucket a step, so each value held counts
// as step long: the series' Spacing, the mean time between its readings.
func recentHistory(r *series.Ring, t, w, step int64, window, minHistory Duration, except []int64, scratch *[]float64) (vs []float64, ok bool) {
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
	return vs, int64(len(vs))*max(step, w) >= int64(minHistory)
}

// recentMedian is the median of the values held in [t-window, t); ok is
// false with less than minHistory of them. It is the definition that
// windowMedian keeps up to date bucket by bucket, and what it is tested
// against.
func recentMedian(r *series.Ring, t, w int64, window, minHistory Duration, scratch *[]float64) (float64, bool) {
	vs, ok := recentHistory(r, t, w, w, window, minHistory, nil, scratch)
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

// previousDaysByColumn is previousDays read as three columns of codes
// (series.Ring.DayCodes at t−w, t and t+w), which a ring of whole days
// keeps side by side, instead of locating three codes a day one by one.
// The values are previousDays' to the bit (medianCode).
func previousDaysByColumn(r *series.Ring, t, w int64, n int, vs []float64) []float64 {
	var cols [3][32]uint16
	if n+1 > len(cols[0]) {
		return previousDays(r, t, w, n, vs)
	}
	for m := range cols {
		r.DayCodes(t+int64(m-1)*w, cols[m][:n+1])
	}
	oldest := r.Oldest()
	for k := 1; k <= n && t-int64(k)*dayNs >= oldest; k++ {
		if v, ok := medianCode(r, [3]uint16{cols[0][k], cols[1][k], cols[2][k]}); ok {
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

// windowMedian is the median of a series' recent window (recentMedian's),
// kept up to date bucket by bucket: the codes of the held buckets stay
// sorted, each new bucket is inserted and each bucket leaving the window
// removed, so the median is read off the middle instead of sorting the
// whole window at every bucket close. The result is recentMedian's to the
// bit: codes order as their values do, and the middle two are decoded and
// averaged the same way. The window is rebuilt from the ring when the
// ring's stored codes changed (Rev), when the window jumped, or when the
// bucket leaving it is no longer held (a window as long as the ring).
type windowMedian struct {
	sorted []uint16
	lo, hi int64 // the window covered: buckets in [lo, hi)
	rev    uint16
}

// median returns the median of the values held in [t-window, t); ok is
// false with less than minHistory of them.
func (m *windowMedian) median(r *series.Ring, t, w, step int64, window, minHistory Duration) (float64, bool) {
	lo := max(t-int64(window), r.Oldest())
	switch {
	case m.hi == 0 || m.rev != r.Rev() || t < m.hi || lo < m.lo || m.lo < r.Oldest() || lo >= m.hi ||
		(m.lo-lo)%w != 0 || (t-m.hi)%w != 0:
		m.rebuild(r, lo, t, w, int(min(int64(window)/w, int64(r.Len()))))
	default:
		for x := m.lo; x < lo; x += w {
			m.remove(r.Code(x))
		}
		for x := m.hi; x < t; x += w {
			m.insert(r.Code(x))
		}
		m.lo, m.hi = lo, t
	}
	n := len(m.sorted)
	if n == 0 || int64(n)*max(step, w) < int64(minHistory) {
		return 0, false
	}
	a, _ := r.Decode(m.sorted[(n-1)/2])
	if n%2 == 1 {
		return a, true
	}
	b, _ := r.Decode(m.sorted[n/2])
	return (a + b) / 2, true
}

func (m *windowMedian) rebuild(r *series.Ring, lo, t, w int64, size int) {
	// Room for the whole window at once: growing by appends would leave
	// up to twice the room the window needs, in every series.
	if cap(m.sorted) < size {
		m.sorted = make([]uint16, 0, size)
	}
	m.sorted = m.sorted[:0]
	for x := lo; x < t; x += w {
		if c := r.Code(x); c != 0 {
			m.sorted = append(m.sorted, c)
		}
	}
	slices.Sort(m.sorted)
	m.lo, m.hi, m.rev = lo, t, r.Rev()
}

func (m *windowMedian) insert(c uint16) {
	if c == 0 {
		return
	}
	i, _ := slices.BinarySearch(m.sorted, c)
	m.sorted = slices.Insert(m.sorted, i, c)
}

func (m *windowMedian) remove(c uint16) {
	if c == 0 {
		return
	}
	if i, ok := slices.BinarySearch(m.sorted, c); ok {
		m.sorted = slices.Delete(m.sorted, i, i+1)
	}
}

// dayRanker keeps the distances behind rankDays between rankings, so that
// ranking the similar days does not read six hours of every past day
// again. For each past day k it holds the sum and the count of |level(x) −
// level(x − k days)| over the buckets x of the six hours before the last
// ranking, one sum per sampling class (rankDays reads every stride-th
// bucket counted back from t, so which buckets it reads depends on t's
// position modulo the stride). A ranking an hour later adds the terms of
// the hour's new buckets and takes out those of the buckets that left the
// six hours: an hour of buckets instead of six, read in runs, and the
// sums of t's class are then sorted. The days whose partner buckets could
// leave the ring within the window (the last day of a full ring) are
// computed directly. After a longer pause, or once the stored codes have
// changed (Rev: an outlier replaced, a history rescaled, a rebase), the
// sums are rebuilt from the ring. The ranking is rankDays' to the bit.
type dayRanker struct {
	// terms holds, for class c and day k (1-based), the sum of the
	// distances in its upper bits and their count in the low eight:
	// terms[c*kept+k-1].
	terms []uint32
	hi    int64 // the window covered is [hi − n·w, hi)
	w     int64
	kept  int32 // days held in terms
	rev   uint16
}

const (
	// rankWindow is how far back the similar-days ranking compares.
	rankWindow = int64(6 * 3600e9)
	// rankCatchUp is the longest pause between rankings that the sums
	// catch up on rather than being rebuilt: twice the hourly ranking, so
	// that a bucket without data at the hour does not force a rebuild.
	rankCatchUp = int64(2 * 3600e9)
)

// rankGeometry is the sampling of rankDays: n buckets of the window, one
// read every stride.
func rankGeometry(w int64) (n, stride int) {
	n = int(rankWindow / w)
	return n, max(1, n/36)
}

// rank returns the past days 1..days ordered as rankDays orders them.
func (m *dayRanker) rank(r *series.Ring, t, w int64, days int, out []int16) []int16 {
	n, stride := rankGeometry(w)
	// The days whose partners stay in the ring while a bucket passes
	// through the window and the catch-up.
	kept := min(days, int((int64(r.Len())*w-int64(n)*w-rankCatchUp)/dayNs))
	if kept <= 0 || n < 1 || t%w != 0 {
		return rankDays(r, t, w, days, out)
	}
	switch {
	case m.hi == 0 || m.rev != r.Rev() || m.w != w || kept > int(m.kept) || t < m.hi || t-m.hi > rankCatchUp || (t-m.hi)%w != 0:
		m.rebuild(r, t, w, n, stride, kept)
	default:
		for x := m.hi; x < t; x += w {
			m.add(r, x-int64(n)*w, stride, -1)
		}
		for x := m.hi; x < t; x += w {
			m.add(r, x, stride, 1)
		}
		m.hi = t
	}
	type scored struct {
		day  int
		dist float64
	}
	var buf [32]scored
	sc := buf[:0]
	class := int(((t/w)-1)%int64(stride)) * int(m.kept)
	for k := 1; k <= days; k++ {
		var sum, cnt int32
		if k <= int(m.kept) {
			x := m.terms[class+k-1]
			sum, cnt = int32(x>>8), int32(x&0xff)
		} else {
			sum, cnt = dayDistance(r, t, w, n, stride, k)
		}
		dist := math.Inf(1)
		if cnt > 0 {
			dist = float64(sum) / float64(cnt)
		}
		sc = append(sc, scored{k, dist})
	}
	slices.SortStableFunc(sc, func(a, b scored) int { return cmp.Compare(a.dist, b.dist) })
	if cap(out) < len(sc) {
		// Exactly the room the ranking needs: growing by appends would
		// leave up to twice that in every series.
		out = make([]int16, 0, len(sc))
	}
	for _, s := range sc {
		out = append(out, int16(s.day))
	}
	return out
}

// rebuild sums the window ending at t afresh.
func (m *dayRanker) rebuild(r *series.Ring, t, w int64, n, stride, kept int) {
	if cap(m.terms) < stride*kept {
		m.terms = make([]uint32, stride*kept)
	}
	m.terms = m.terms[:stride*kept]
	clear(m.terms)
	m.kept, m.w, m.hi, m.rev = int32(kept), w, t, r.Rev()
	for x := t - int64(n)*w; x < t; x += w {
		m.add(r, x, stride, 1)
	}
}

// add adds (sign 1) or takes out (−1) the terms of bucket x. It reads
// the bucket and its partners on the kept days as one column of codes
// (series.Ring.DayCodes), and measures the distances between codes, which
// are the distances between levels: a level is its code plus the ring's
// base, and a zero (code 1) sits ten levels under the smallest value.
func (m *dayRanker) add(r *series.Ring, x int64, stride int, sign int32) {
	var buf [64]uint16
	codes := buf[:]
	if int(m.kept)+1 > len(buf) {
		codes = make([]uint16, m.kept+1)
	}
	codes = codes[:m.kept+1]
	r.DayCodes(x, codes)
	if codes[0] == 0 {
		return
	}
	a := codeLevel(codes[0])
	row := m.terms[int((x/m.w)%int64(stride))*int(m.kept):][:m.kept]
	for k, c := range codes[1:] {
		if c != 0 {
			b := codeLevel(c)
			row[k] = uint32(int32(row[k]) + sign*(max(a-b, b-a)<<8|1))
		}
	}
}

// codeLevel is series.Ring.Level less the ring's base, for a held code.
func codeLevel(c uint16) int32 {
	if c == 1 {
		return -10
	}
	return int32(c) - 2
}

// dayDistance is rankDays' sum and count for day k.
func dayDistance(r *series.Ring, t, w int64, n, stride, k int) (sum, cnt int32) {
	for j := 1; j <= n; j += stride {
		a, aok := r.Level(t - int64(j)*w)
		b, bok := r.Level(t - int64(k)*dayNs - int64(j)*w)
		if aok && bok {
			sum += max(a-b, b-a)
			cnt++
		}
	}
	return sum, cnt
}
