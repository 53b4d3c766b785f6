package detectors

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/outagewatch/outagewatch/aggregate"
)

// LatencyShiftName is the name rules use for the sparse-probe level-shift
// detector.
const LatencyShiftName = "latency_shift"

func init() { Register(LatencyShiftName, func() Params { return DefaultLatencyShift() }) }

// LatencyShift configures the level-shift detector for sparse, spiky RTT
// series: one probe towards one destination, one or two samples a bucket
// (a RIPE Atlas ping every four minutes). Such a series has no daily cycle
// worth the name but jumps between levels when a route changes, and it
// spikes for a sample or two whenever a queue somewhere fills.
//
// The level of the series is the lowest bucket of the last For (plus the
// bucket the change fell in: samples land anywhere in a bucket, so only a
// run that fills For/width+1 buckets is sure to have lasted For). The
// lowest RTT is the path's delay without queueing, which is why TCP
// (Vegas' BaseRTT, BBR's min_rtt) tracks it: a re-route moves it, a queue
// filling for a sample or two does not, and a path that flaps between two
// routes stays at the shorter one. A shift therefore fires only once the
// new level has held for the whole of For. It is judged against the same
// statistic over the BaselineWindow before (the floor): the median of the
// lowest bucket of every For-long window in it, and the robust spread
// (scaled median absolute deviation) of their log-RTT, all read from the
// detector's own record of the RTT as measured (see recentRTT). Like is
// compared with like: against the buckets' median, a path whose samples
// often queue, or that flaps between two routes, has its median well
// above its lowest RTT, and a shift of the lowest RTT had to outgrow that
// gap as well as the threshold; the bar moved with the path's jitter. A
// shift fires when the level is above the floor by all three of:
// Threshold (relative), MinDeltaMs (absolute) and Noise robust standard
// deviations.
//
// The defaults say what an operator calls a latency shift, in the terms
// the labelled RIPE Atlas series in testdata are scored by: 20 % and 10 ms
// up, held for 30 minutes. The noise factor of 4 keeps a jittery path
// from paging at the relative threshold that fits a flat one.
//
// Waiting for the whole of For means knowing a shift some time after it
// began, so the alert's start is the onset the data date it to (see
// onset), not the firing bucket.
//
// While firing the baseline, the median of the buckets of the window, is
// frozen at its value when the shift began. The alert resolves when most
// of the last ResolveFor (its upper median, again like with like) is back
// within ResolveBelow (and half of MinDeltaMs) of it. A shift that lasts
// AdaptAfter from its onset is a new normal (a re-route that stays): the
// alert resolves with reason baseline_adapted and the baseline is taken
// from the new level on. AdaptAfter 0 keeps it firing until the level
// comes back.
type LatencyShift struct {
	// Threshold is the rise over baseline that counts, as a fraction.
	Threshold float64 `yaml:"threshold"`
	// MinDeltaMs is the smallest rise in milliseconds that counts.
	MinDeltaMs float64 `yaml:"min_delta_ms"`
	// Noise is how many robust standard deviations of the baseline window
	// the rise must also exceed; 0 turns the noise gate off.
	Noise float64 `yaml:"noise"`
	// For is how long a new level must hold, all of it, to fire.
	For Duration `yaml:"for"`
	// BaselineWindow is the history before that window the baseline is
	// the median of, and MinHistory how much of it must hold data.
	BaselineWindow Duration `yaml:"baseline_window"`
	MinHistory     Duration `yaml:"min_history"`
	// ResolveBelow is the relative rise under which the level counts as
	// back, and ResolveFor the window most of which must be back.
	ResolveBelow float64  `yaml:"resolve_below"`
	ResolveFor   Duration `yaml:"resolve_for"`
	// AdaptAfter is how long a shift must last, from its onset, to become
	// the baseline.
	AdaptAfter Duration `yaml:"adapt_after"`
	// MinSamples is the fewest samples a bucket needs to count.
	MinSamples int64 `yaml:"min_samples"`
	// KeepFiringFor is the hold after a shift recovered inside which a
	// new one is the same alert, with the start it had (see flapHold): a
	// path that flaps back for a while and leaves again has one shift,
	// not one a return. 0 has none.
	KeepFiringFor Duration `yaml:"keep_firing_for"`
}

// DefaultLatencyShift returns the defaults that ship.
func DefaultLatencyShift() *LatencyShift {
	return &LatencyShift{Threshold: 0.2, MinDeltaMs: 10, Noise: 4, For: Duration(30 * 60e9),
		BaselineWindow: Duration(6 * 3600e9), MinHistory: Duration(2 * 3600e9),
		ResolveBelow: 0.1, ResolveFor: Duration(20 * 60e9), AdaptAfter: Duration(2 * 3600e9), MinSamples: 1,
		KeepFiringFor: Duration(3600e9)}
}

// onsetSigmas is the noise band around the baseline that a segment's
// level must leave to count as new: three robust standard deviations, the
// usual control limit.
const onsetSigmas = 3

// maxShiftBaseline bounds baseline_window: a day of 5-minute buckets is
// about 1.2 KB of recent RTT a probe, and the onset search, cubic in the
// buckets, stays within tens of milliseconds a firing.
const maxShiftBaseline = Duration(24 * 3600e9)

// onsetMinBuckets is the shortest segment, in buckets, that dating an
// onset accepts as a level.
const onsetMinBuckets = 2

// Validate checks the settings.
func (p *LatencyShift) Validate() error {
	switch {
	case !(p.Threshold > 0) || math.IsInf(p.Threshold, 0):
		return errors.New("threshold: must be a positive fraction (0.2 = 20 % above baseline)")
	case !(p.MinDeltaMs >= 0) || math.IsInf(p.MinDeltaMs, 0):
		return errors.New("min_delta_ms: must be a finite number of milliseconds, at least 0")
	case !(p.Noise >= 0) || math.IsInf(p.Noise, 0):
		return errors.New("noise: must be a finite number of standard deviations, at least 0")
	case p.For <= 0:
		return errors.New("for: must be positive")
	case p.ResolveBelow < 0 || p.ResolveBelow >= p.Threshold:
		return errors.New("resolve_below: must be at least 0 and below threshold")
	case p.ResolveFor < 0 || p.AdaptAfter < 0 || p.KeepFiringFor < 0:
		return errors.New("resolve_for, adapt_after, keep_firing_for: must not be negative")
	case p.AdaptAfter > 0 && p.AdaptAfter <= p.For:
		return errors.New("adapt_after: must be 0 (never) or longer than for: a shift cannot become the baseline before it is one")
	case p.MinSamples < 1:
		return errors.New("min_samples: must be at least 1")
	case p.BaselineWindow > maxShiftBaseline:
		return fmt.Errorf("baseline_window: at most %s: the detector keeps that much RTT as measured for every probe, and dates onsets across it", fmtDuration(maxShiftBaseline))
	}
	return validateHistory(p.BaselineWindow, p.MinHistory)
}

// Build returns the detector.
func (p *LatencyShift) Build(rule string) Detector {
	return &levelShift{p: *p, rule: rule}
}

type levelShift struct {
	p       LatencyShift
	rule    string
	states  seriesStates[levelState]
	scratch []float64
	// spacing is the series being judged's mean gap between readings,
	// at least its grid's step (aggregate.Series.Spacing).
	spacing int64
	// unjudgeable holds the probes whose noise bars lie above the
	// rule's threshold (see judgeable).
	unjudgeable unjudged[*aggregate.Series]
}

// Unjudgeable returns the probes too jittery to be judged at the rule's
// threshold, as of the last hour each was looked at.
func (d *levelShift) Unjudgeable() []string { return seriesNames(d.unjudgeable) }

// levelState is one series' state; exported fields are checkpointed.
type levelState struct {
	Firing bool
	// FireStart is the onset of the shift that fires.
	FireStart int64
	// Base and Sigma are the buckets' median and noise (a standard
	// deviation of log-RTT) frozen when the shift began; Floor and
	// FloorSigma the same of the lowest RTT of a For, which it fired
	// against.
	Base, Sigma       float64
	Floor, FloorSigma float64
	// Since bounds the baseline window after an adaptation: the old level
	// is no longer the baseline.
	Since  int64
	RTT    recentRTT
	Recent evidenceLog
	// Hold is the hold after a shift recovered (KeepFiringFor).
	Hold flapHold
	// looked is when the probe was last looked at for judgeable; not
	// kept, a restored detector looks again at its first reading.
	looked int64
}

// recentRTT holds a series' last buckets as measured. The shared history
// keeps RTT to ±2 % (4 % a code), ten to forty times a single path's own
// noise (a robust spread of 0.05 to 0.5 % over six hours on the labelled
// Atlas series): in it a path's level and its first steps away from it
// are one code apart or none. A float32 a bucket for the baseline window
// and the level window costs some 330 bytes a probe series.
type recentRTT struct {
	// V is indexed by bucket, (t/W) mod len(V); NaN is no data.
	V []float32
	// Newest is the start of the latest bucket put, W the bucket width.
	Newest, W int64
}

// put records the value of the bucket at t (NaN: no data), keeping n
// buckets of width w; a new width starts the record afresh.
func (r *recentRTT) put(t, w int64, v float64, n int) {
	if r.W != w || len(r.V) != n || t-r.Newest >= int64(n)*w {
		if r.W != w || len(r.V) != n {
			r.V, r.W = make([]float32, n), w
		}
		for i := range r.V {
			r.V[i] = float32(math.NaN())
		}
		r.Newest = t - w
	}
	if t <= r.Newest {
		return
	}
	for x := r.Newest + w; x < t; x += w {
		r.V[r.index(x)] = float32(math.NaN())
	}
	r.V[r.index(t)], r.Newest = float32(v), t
}

func (r *recentRTT) index(t int64) int { return int(t / r.W % int64(len(r.V))) }

// Oldest is the start of the oldest bucket held.
func (r *recentRTT) Oldest() int64 { return r.Newest - int64(len(r.V)-1)*r.W }

// Get returns the value of the bucket at t, if held and with data.
func (r *recentRTT) Get(t int64) (float64, bool) {
	if len(r.V) == 0 || t > r.Newest || t < r.Oldest() {
		return 0, false
	}
	v := r.V[r.index(t)]
	return float64(v), !math.IsNaN(float64(v))
}

func (d *levelShift) Bucket(c *aggregate.Closed, pts []aggregate.Point, emit func(Finding)) {
	for _, pt := range pts {
		st := d.states.get(pt.Series)
		// A probe that reports every step, not every bucket, is read on
		// its own grid.
		w := pt.Series.Step()
		held := d.p.BaselineWindow.buckets(w) + d.p.For.buckets(w) + d.p.ResolveFor.buckets(w) + 1
		r := &st.RTT
		// A probe measured less often than its grid (an Atlas ping every
		// 16 minutes on 5-minute buckets lands 15 and 20 minutes apart,
		// a grid of 5 minutes) has fewer readings in a window than the
		// grid has buckets: what is enough data is counted in readings.
		d.spacing = max(pt.Series.Spacing(), w)
		if pt.Missing || pt.Count < d.p.MinSamples || math.IsNaN(pt.Value) || pt.Value <= 0 {
			r.put(c.Start, w, math.NaN(), held)
			st.Recent.add(Evidence{Time: c.Start, Value: math.NaN()})
			continue
		}
		r.put(c.Start, w, pt.Value, held)
		if !st.Firing {
			n := d.p.For.buckets(w) + d.readingBuckets(w)
			winStart := c.Start - int64(n-1)*w
			from := max(winStart-int64(d.p.BaselineWindow), st.Since)
			level, ok := d.window(r, winStart, c.Start, w, n, lowest)
			var base float64
			if ok {
				base, ok = d.baseline(r, from, winStart, w)
			}
			if !ok {
				st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: math.NaN()})
				continue
			}
			st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: base})
			if c.Start-st.looked >= judgeableEvery {
				st.looked = c.Start
				d.judgeable(pt.Series, r, from, winStart, c.Start, w, n)
			}
			if floor, fsigma, ok := d.floor(r, from, winStart, w, n, level); ok && level-floor >= d.gate(floor, fsigma) && d.outranks(r, from, winStart, c.Start, w, level) {
				sigma := d.spread(r, from, winStart, w, base)
				st.Firing, st.Base, st.Sigma, st.Floor, st.FloorSigma = true, base, sigma, floor, fsigma
				start, reopened := st.Hold.fire(d.onset(r, from, winStart, c.Start, w, base, sigma), st.FireStart, c.Start)
				st.FireStart = start
				f := d.finding(Firing, c, pt, st, level, "")
				if reopened {
					st.Hold.mark(&f)
				}
				emit(f)
			}
			continue
		}
		st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: st.Base})
		n := d.p.ResolveFor.buckets(w)
		winStart := c.Start - int64(n-1)*w
		level, ok := d.window(r, winStart, c.Start, w, n, upperMedian)
		if !ok {
			continue
		}
		back := st.Base + max(d.p.ResolveBelow*st.Base, d.p.MinDeltaMs/2)
		switch {
		case level < back:
			st.Firing = false
			f := d.finding(Resolved, c, pt, st, level, ReasonRecovered)
			// It ended where the buckets still back now began.
			f.End = c.Start
			for x := c.Start - w; x >= winStart; x -= w {
				if y, ok := r.Get(x); ok {
					if y >= back {
						break
					}
					f.End = x
				}
			}
			emit(f)
			st.Hold.resolved(c.End, d.p.KeepFiringFor)
		case d.p.AdaptAfter > 0 && c.End-st.FireStart >= int64(d.p.AdaptAfter):
			st.Firing, st.Since = false, st.FireStart
			f := d.finding(Resolved, c, pt, st, level, ReasonBaselineAdapted)
			f.End = c.End
			emit(f)
		}
	}
}

// lowest and upperMedian pick a window's level from its sorted values:
// the lowest for a new level that must hold throughout, the upper median
// for an old one most of the window must be back at.
func lowest(vs []float64) float64      { return vs[0] }
func upperMedian(vs []float64) float64 { return vs[len(vs)/2] }

// window returns pick of the buckets of [from, t] that hold data; ok is
// false when they are fewer than half of the readings the window's n
// buckets should hold (expected).
func (d *levelShift) window(r *recentRTT, from, t, w int64, n int, pick func([]float64) float64) (float64, bool) {
	vs := d.scratch[:0]
	for x := from; x <= t; x += w {
		if y, ok := r.Get(x); ok {
			vs = append(vs, y)
		}
	}
	d.scratch = vs
	if len(vs) == 0 || 2*len(vs) < d.expected(n, w)+1 {
		return 0, false
	}
	slices.Sort(vs)
	return pick(vs), true
}

// expected is how many readings n buckets of width w hold at the
// series' spacing: n for a series read every bucket, fewer for a sparser
// one, never under one.
func (d *levelShift) expected(n int, w int64) int {
	sp := max(d.spacing, w)
	return max(1, int((int64(n)*w+sp/2)/sp))
}

// readingBuckets is how many buckets of width w one reading of the
// series stands for: one for a series read every bucket, more for a
// sparser one.
func (d *levelShift) readingBuckets(w int64) int {
	return max(1, int((max(d.spacing, w)+w/2)/w))
}

// sigmaFloor is the least noise a baseline is granted, as a standard
// deviation of log-RTT: a thousandth, under any real path's jitter, so
// that a perfectly flat series still has a band of finite width.
const sigmaFloor = 0.001

// buckets returns the buckets of [from, to) that hold data, in d.scratch;
// ok is false with less than MinHistory of them.
func (d *levelShift) buckets(r *recentRTT, from, to, w int64) ([]float64, bool) {
	vs := d.scratch[:0]
	for x := max(from, r.Oldest()); x < to; x += w {
		if y, ok := r.Get(x); ok {
			vs = append(vs, y)
		}
	}
	d.scratch = vs
	return vs, int64(len(vs))*max(d.spacing, w) >= int64(d.p.MinHistory)
}

// baseline returns the median of the buckets in [from, to).
func (d *levelShift) baseline(r *recentRTT, from, to, w int64) (float64, bool) {
	vs, ok := d.buckets(r, from, to, w)
	if !ok {
		return 0, false
	}
	return median(vs), true
}

// spread is the robust spread of the log-RTT of the buckets in [from, to)
// around base.
func (d *levelShift) spread(r *recentRTT, from, to, w int64, base float64) float64 {
	vs, _ := d.buckets(r, from, to, w)
	return logSpread(vs, base)
}

// logSpread is the robust spread of log(v/base) over vs, at least
// sigmaFloor; it overwrites vs.
func logSpread(vs []float64, base float64) float64 {
	for i, v := range vs {
		vs[i] = math.Log(v / base)
	}
	return max(robustSpread(vs, 0), sigmaFloor)
}

// floor returns the level statistic over the history in [from, to): for
// every bucket there, the lowest of the n buckets ending with it (when at
// least half of them hold data, as window asks of the level), then their
// median and the robust spread of their log-RTT. ok is false when it is
// not worked out: with less than MinHistory of them, or for a level that
// cannot pass it (the floor is never under the lowest bucket it is taken
// over, so a level within Threshold or MinDeltaMs of that bucket cannot),
// which spares the n-fold pass on almost every bucket of a steady path.
// The spread can only raise the bar, so for a level that does not pass
// the others it is not worked out either (sigmaFloor stands in).
func (d *levelShift) floor(r *recentRTT, from, to, w int64, n int, level float64) (floor, sigma float64, ok bool) {
	start := max(from, r.Oldest())
	lo := math.Inf(1)
	for y := start - int64(n-1)*w; y < to; y += w {
		if v, ok := r.Get(y); ok {
			lo = min(lo, v)
		}
	}
	if level-lo < max(d.p.Threshold*lo, d.p.MinDeltaMs) {
		return 0, 0, false
	}
	vs, ok := d.minima(r, start, to, w, n)
	if !ok {
		return 0, 0, false
	}
	floor = median(vs)
	if level-floor < max(d.p.Threshold*floor, d.p.MinDeltaMs) {
		return floor, sigmaFloor, true
	}
	return floor, logSpread(vs, floor), true
}

// minima returns, in d.scratch, the lowest of the n buckets ending with
// each bucket of [from, to) that the history holds and that holds at
// least half the readings a window should (as window asks of the level);
// ok is false with less than MinHistory of them.
func (d *levelShift) minima(r *recentRTT, from, to, w int64, n int) ([]float64, bool) {
	vs := d.scratch[:0]
	for x := max(from, r.Oldest()); x < to; x += w {
		lo, k := math.Inf(1), 0
		for y := x - int64(n-1)*w; y <= x; y += w {
			if v, ok := r.Get(y); ok {
				lo, k = min(lo, v), k+1
			}
		}
		if 2*k >= d.expected(n, w)+1 {
			vs = append(vs, lo)
		}
	}
	d.scratch = vs
	return vs, int64(len(vs))*w >= int64(d.p.MinHistory)
}

// judgeableEvery is how often a probe's judgeability is looked at (at
// its first reading an hour or more after the last look): the n-fold
// pass over its history costs a probe one pass an hour, not one a
// bucket, for a report that moves with its jitter.
const judgeableEvery = int64(3600e9)

// judgeable records whether a shift of the rule's threshold from the
// probe's floor would pass its rank bar, for the level window
// [winStart, t] and the history [from, winStart): a probe whose own
// buckets lie above that shift too often for chance to be ruled out is
// judged only for larger shifts, and is named as too jittery for the
// threshold (the replay's summary, outagewatch_unjudgeable_series)
// instead of being silently watched at a bar its operator did not set.
// The floor's spread is not asked: in the hours after a path moved
// between two levels it reads the move as noise, and a steady path
// would be named for a while after every re-route.
func (d *levelShift) judgeable(s *aggregate.Series, r *recentRTT, from, winStart, t, w int64, n int) {
	vs, ok := d.minima(r, from, winStart, w, n)
	if !ok {
		return
	}
	floor := median(vs)
	why := judgeableNow
	if !d.outranks(r, from, winStart, t, w, floor+max(d.p.Threshold*floor, d.p.MinDeltaMs)) {
		why = unjudgeableNoise
	}
	d.unjudgeable.set(s, why)
}

// onset dates the beginning of the shift that fires at t (the window of
// For starting at winStart), no further back than from. The buckets since
// from are segmented by optimal partitioning (the exact search PELT speeds
// up) with the least-absolute-deviation cost, each segment at its median,
// a segment at least onsetMinBuckets long (one bucket is a spike or a
// dip, not a level), and a penalty per segment of σ·ln(n)/√2 in the
// baseline's noise: BIC for Laplace errors, two parameters (where, and
// what level) a segment. The onset is the start of the unbroken run of
// last segments whose levels lie above the baseline's noise band
// (onsetSigmas): where the series last left its old level. So a bucket
// that brushes the band on the eve of a jump stays with the old level,
// while the first step of a ramp, or the return after a path flapped back
// for ten minutes, is the onset.
func (d *levelShift) onset(r *recentRTT, from, winStart, t, w int64, base, sigma float64) int64 {
	var ts []int64
	var ys []float64
	for x := max(from, r.Oldest()); x <= t; x += w {
		if y, ok := r.Get(x); ok {
			ts, ys = append(ts, x), append(ys, y)
		}
	}
	n := len(ys)
	beta := base * sigma * math.Log(float64(n)) / math.Sqrt2
	band := base * math.Exp(onsetSigmas*sigma)
	seg := make([]float64, 0, n)
	levelOf := func(a, j int) (level, cost float64) {
		seg = append(seg[:0], ys[a:j]...)
		level = median(seg)
		for _, y := range ys[a:j] {
			cost += math.Abs(y - level)
		}
		return level, cost
	}
	// least[j] is the least penalised cost of ys[:j], and last[j] where
	// its last segment starts.
	least, last := make([]float64, n+1), make([]int, n+1)
	least[0] = -beta
	for j := 1; j <= n; j++ {
		least[j] = math.Inf(1)
		for a := range j {
			if a > 0 && j-a < onsetMinBuckets {
				continue
			}
			if _, c := levelOf(a, j); least[a]+c+beta < least[j] {
				least[j], last[j] = least[a]+c+beta, a
			}
		}
	}
	on := t
	for j := n; j > 0; j = last[j] {
		if level, _ := levelOf(last[j], j); level <= band {
			break
		}
		on = ts[last[j]]
	}
	// The window itself held the new level throughout.
	if on > winStart {
		on = ts[slices.IndexFunc(ts, func(x int64) bool { return x >= winStart })]
	}
	return on
}

// outranks tells whether level, the lowest of the k buckets of the level
// window [winStart, t], lies above so many of the m buckets of the
// baseline window [from, winStart) that chance would put it there in
// about one window of For a year (chancePerYear). It is a rank test and
// assumes nothing of the noise's shape: were the k and the m drawn alike,
// every order of the m+k would be equally likely, and the lowest of the k
// would lie above the j lowest of the m with probability
// C(m+k−j, k)/C(m+k, k).
//
// The floor's noise cannot bar chance on its own. It is read from the
// history's windows of For, of which six hours hold about ten that do
// not overlap, and the lowest of a window is a skewed statistic, tight
// below and long above, whose robust spread says little of the upper tail
// a false alarm comes from. On a path that queues (a sample in two 20 %
// late or more), the lowest of a half hour climbs 20 % over the floor in
// one window of a few hundred, and four of that spread did not stop it:
// a page every few days a probe. The rank bar reads the same path from
// each of its buckets, and asks of the window what chance gives once a
// year.
//
// A probe read too sparsely to reach that chance (three readings a
// window) must lie above every bucket of the baseline: the most its
// readings can say.
func (d *levelShift) outranks(r *recentRTT, from, winStart, t, w int64, level float64) bool {
	k := 0
	for x := winStart; x <= t; x += w {
		if _, ok := r.Get(x); ok {
			k++
		}
	}
	vs, _ := d.buckets(r, from, winStart, w)
	if k == 0 || len(vs) == 0 {
		return false
	}
	j := rankNeeded(len(vs), k, float64(d.p.For)/float64(chancePerYear))
	slices.Sort(vs)
	return level > vs[j-1]
}

// chancePerYear is the time in which a path whose level never moved may
// page once by chance: a year. One window of For in a year is the chance
// outranks allows, 5.7·10⁻⁵ for the shipped 30 minutes: the lowest of
// seven buckets must lie above 58 of the six hours' 72.
const chancePerYear = Duration(365 * 24 * 3600e9)

// rankNeeded is the fewest of m values, j ≥ 1, that the lowest of k more
// drawn alike lies above with probability at most alpha, or m when none
// does.
func rankNeeded(m, k int, alpha float64) int {
	for j := 1; j < m; j++ {
		p := 1.0
		for i := range k {
			p *= float64(m+k-j-i) / float64(m+k-i)
		}
		if p <= alpha {
			return j
		}
	}
	return m
}

// gate is the smallest rise over base that fires.
func (d *levelShift) gate(base, sigma float64) float64 {
	return max(d.p.Threshold*base, d.p.MinDeltaMs, base*math.Expm1(d.p.Noise*sigma))
}

// finding reports a firing shift against the floor it was judged by, a
// resolve against the buckets' median it was judged by.
func (d *levelShift) finding(status string, c *aggregate.Closed, pt aggregate.Point, st *levelState, level float64, reason string) Finding {
	f := Finding{Status: status, Detector: LatencyShiftName, Signal: pt.Series.Signal.String(), Entity: pt.Series.Entity,
		Start: st.FireStart, At: c.End, Observed: round(level, 3), Evidence: slices.Clone(st.Recent)}
	if status == Firing {
		delta, gate := level-st.Floor, d.gate(st.Floor, st.FloorSigma)
		f.Baseline, f.BaselineMethod, f.ChangePct = round(st.Floor, 3), "recent_lowest", changePct(level, st.Floor)
		f.Confidence = confidence(delta, gate)
		f.Details = map[string]any{"delta_ms": round(delta, 2), "noise_pct": round(100*st.FloorSigma, 2),
			"gate_ms": round(gate, 2), "median_ms": round(st.Base, 3)}
		f.Summary = fmt.Sprintf("%s of %s up %.1f ms to %.1f ms (%+.1f%%), the lowest of %s, against %.1f ms, the same over the previous %s",
			f.Signal, f.Entity, delta, level, f.ChangePct, fmtDuration(d.p.For), st.Floor, fmtDuration(d.p.BaselineWindow))
		return f
	}
	f.Baseline, f.BaselineMethod, f.ChangePct = round(st.Base, 3), "recent_median", changePct(level, st.Base)
	f.Reason = reason
	if reason == ReasonBaselineAdapted {
		f.Summary = fmt.Sprintf("%s of %s has stayed at %.1f ms (baseline was %.1f ms) for %s: the new level is the baseline now",
			f.Signal, f.Entity, level, st.Base, fmtDuration(d.p.AdaptAfter))
	} else {
		f.Summary = fmt.Sprintf("%s of %s back to %.1f ms (baseline %.1f ms)", f.Signal, f.Entity, level, st.Base)
	}
	return f
}

func (d *levelShift) MarshalBinary() ([]byte, error) { return saveState(d.states.byName()) }

func (d *levelShift) UnmarshalBinary(b []byte) error {
	states := map[string]*levelState{}
	if err := loadState(b, &states, LatencyShiftName+" "+d.rule); err != nil {
		return err
	}
	d.states.restore(states)
	return nil
}
