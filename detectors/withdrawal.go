package detectors

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/words"
)

// Names rules use for the routing detectors.
const (
	PrefixWithdrawalName = "prefix_withdrawal"
	WithdrawalBurstName  = "withdrawal_burst"
)

func init() {
	Register(PrefixWithdrawalName, func() Params { return DefaultPrefixWithdrawal() })
	Register(WithdrawalBurstName, func() Params { return DefaultWithdrawalBurst() })
}

// PrefixWithdrawal configures the announced-space detector: the IPv4 or
// IPv6 address space visible for an origin AS or a country (the
// bgp_announced_v4 and bgp_announced_v6 gauges of the routing table) falls
// against its recent baseline, as a country's space does when its
// government orders the routes withdrawn, or an ISP's does when its edge
// stops announcing.
//
// Routing has no daily cycle: an ISP announces the same prefixes at 4 a.m.
// and at 8 p.m. So the baseline is not last week's but the median of the
// buckets held in the last BaselineWindow, and a drop is judged on the very
// next bucket. Anomalous buckets are kept out of the history (the baseline
// is stored in their place, as IODA does) until the new level has lasted
// AdaptAfter, so a week-long shutdown is judged against the space before it.
//
// Space is counted by the table against the full-feed peers that are up
// (a prefix is visible when at least half of them carry it), so a collector
// session that resets moves that bar rather than the space, and cannot look
// like a withdrawal. What can is a feed that loses part of every network at
// once (a truncated dump, a broken collector): when at least FeedFaultShare
// of the judged series drop in the same bucket, one feed-health finding
// replaces the per-network ones.
type PrefixWithdrawal struct {
	// Threshold is the drop against baseline that counts, as a fraction
	// (0.3 = 30 % of the space gone).
	Threshold float64 `yaml:"threshold"`
	// For is how long the drop must hold before the alert fires; the
	// default, one bucket, fires on the first bucket that shows it.
	For Duration `yaml:"for"`
	// ResolveBelow is the drop under which a bucket counts as recovered,
	// and ResolveFor how long recovery must last.
	ResolveBelow float64  `yaml:"resolve_below"`
	ResolveFor   Duration `yaml:"resolve_for"`
	// MinBaseline is the smallest baseline worth judging, in the signal's
	// unit (/24s for IPv4, /48s for IPv6): a network of two /24s losing one
	// is routine traffic engineering.
	MinBaseline float64 `yaml:"min_baseline"`
	// BaselineWindow is how far back the median looks; MinHistory how much
	// held history it needs before judging at all.
	BaselineWindow Duration `yaml:"baseline_window"`
	MinHistory     Duration `yaml:"min_history"`
	// AdaptAfter is how long a new level must last to become the baseline
	// (a network that sold address space is not in an outage forever).
	AdaptAfter Duration `yaml:"adapt_after"`
	// FeedFaultShare and FeedFaultMinEntities: see the type's comment.
	FeedFaultShare       float64 `yaml:"feed_fault_share"`
	FeedFaultMinEntities int     `yaml:"feed_fault_min_entities"`
	// Noise is how many standard deviations of the series' own noise (see
	// windowNoise: the spread of its baseline window and, for a Poisson
	// count, √baseline) a one-bucket drop must exceed; 0 judges the
	// relative drop alone. A rule whose For spans n buckets asks each of
	// them for less (runSigmas), so that n buckets in a row past it are
	// as unlikely by chance as one bucket past Noise: a small, noisy
	// count that halves for a few buckets stands out where no single
	// bucket would, and one odd bucket does not. A bucket still counts as
	// down while firing until it is back within one standard deviation
	// (or under ResolveBelow).
	Noise float64 `yaml:"noise"`
	// Critical is a collapse: a drop this deep fires on its first bucket
	// and is never adopted as the new baseline, however long it lasts (a
	// country that lost its routes is out until they return). 0 turns it
	// off.
	Critical float64 `yaml:"critical"`
	// KeepFiringFor is the hold after a resolve inside which a new drop
	// is the same alert (see flapHold); 0 has none.
	KeepFiringFor Duration `yaml:"keep_firing_for"`
}

// DefaultPrefixWithdrawal returns the defaults that ship. Noise is the
// control limit countSigmas. Critical 0.9 is the drop at which IODA and
// Radar speak of a full outage of an entity rather than a partial one (a
// tenth of the space or fewer left). The hold of an hour is four times
// resolve_for: a recovery that lasts that long is a recovery.
func DefaultPrefixWithdrawal() *PrefixWithdrawal {
	return &PrefixWithdrawal{
		Threshold: 0.3, For: Duration(5 * 60e9), ResolveBelow: 0.1, ResolveFor: Duration(15 * 60e9),
		MinBaseline: 1, BaselineWindow: Duration(6 * 3600e9), MinHistory: Duration(3600e9),
		AdaptAfter: Duration(7 * 24 * 3600e9), FeedFaultShare: 0.8, FeedFaultMinEntities: 10,
		Noise: countSigmas, Critical: 0.9, KeepFiringFor: Duration(3600e9),
	}
}

// Validate checks the settings.
func (p *PrefixWithdrawal) Validate() error {
	switch {
	case p.Threshold <= 0 || p.Threshold >= 1:
		return errors.New("threshold: must be a fraction between 0 and 1 (0.3 = 30 % of the space withdrawn)")
	case p.ResolveBelow < 0 || p.ResolveBelow >= p.Threshold:
		return errors.New("resolve_below: must be at least 0 and below threshold")
	case p.For < 0 || p.ResolveFor < 0 || p.AdaptAfter < 0:
		return errors.New("for, resolve_for, adapt_after: must not be negative")
	case p.MinBaseline < 0:
		return errors.New("min_baseline: must not be negative")
	case !(p.Noise >= 0) || math.IsInf(p.Noise, 0):
		return errors.New("noise: must be a finite number of standard deviations, at least 0")
	case p.Critical != 0 && (p.Critical < p.Threshold || p.Critical > 1):
		return errors.New("critical: must be between threshold and 1, or 0 to disable")
	case p.KeepFiringFor < 0:
		return errors.New("keep_firing_for: must not be negative")
	}
	if err := validateHistory(p.BaselineWindow, p.MinHistory); err != nil {
		return err
	}
	return validateFeedFault(p.FeedFaultShare, p.FeedFaultMinEntities)
}

// Build returns the detector.
func (p *PrefixWithdrawal) Build(rule string) Detector {
	return &prefixWithdrawal{p: *p, rule: rule}
}

type prefixWithdrawal struct {
	p    PrefixWithdrawal
	rule string
	// states are found by series, so that judging a full table does not
	// build a key string per origin and bucket.
	states  seriesStates[spaceState]
	feed    feedFaultState
	scratch []float64
	noise   noiseScratch
	judged  []spaceJudged
	// bars are runBar's, by run length.
	bars map[int]*[21]float64
	// unjudgeable holds the series too small or too noisy for any drop to
	// pass both bars (see Unjudgeable), as of their last judged bucket.
	unjudgeable unjudged[*aggregate.Series]
}

// Unjudgeable lists, as "signal entity", the series that this rule
// cannot judge at its threshold: a series whose own noise puts a drop to
// zero inside the noise bar of the rule's run (runSigmas), as a Poisson
// count under bar² does (one bucket at 3σ: under 9; two independent
// rounds at 1.79σ: under 3.2).
// Such a series is watched by nobody, which the replay summary says
// instead of paging at random.
func (d *prefixWithdrawal) Unjudgeable() []string { return seriesNames(d.unjudgeable) }

// spaceState is one series' state; exported fields are checkpointed.
type spaceState struct {
	Run, Recovered int
	RunStart       int64
	Firing         bool
	FireStart      int64
	// FireBase is the baseline the alert fired against, Low the least
	// space seen while firing.
	FireBase, Low float64
	// Adapt follows the current run of buckets short of space.
	Adapt  levelRun
	Hold   flapHold
	Recent evidenceLog
	// Held is where the history holds stand-ins, and Sigma the noise of
	// the last baseline window that was mostly readings (see
	// seriesNoise).
	Held  heldMask
	Sigma float32
	// win keeps the baseline window sorted between buckets.
	win windowMedian
}

type spaceJudged struct {
	p    aggregate.Point
	st   *spaceState
	base float64
	drop float64
	// level and sigma are what the series is expected to be at this hour
	// and its noise (windowNoise), worked out only where they decide: for
	// a drop past the threshold, or while firing.
	level, sigma float64
	// bar is the run's noise bar in sigmas (runSigmas).
	bar float64
	// over is past the relative threshold, anomalous past the noise bar
	// too (runSigmas); down is still short of the baseline by more than
	// resolve_below and one sigma; critical is a collapse past Critical
	// that is past the one-bucket noise bar on its own.
	over, anomalous, down, critical bool
}

// runSigmas is the bar each of n buckets in a row must pass so that the
// run is as unlikely by chance as one bucket past k standard deviations
// (one in 740 at k = 3, Shewhart's limit), for Gaussian noise whose
// deviations carry from one bucket to the next with lag-1
// autocorrelation rho (windowNoise). For independent noise the one-sided
// tail is shared out as its n-th root: two buckets in a row past 1.79σ,
// or three past 1.22σ, are as rare as one past 3σ. The more a deviation
// carries over, the less a second bucket adds, and the bar rises towards
// k: at rho 0.6 two buckets must each be past 2.42σ. A run of n is taken
// as a Markov chain, its first bucket's tail times the chance of each
// next one given the last (the bivariate normal orthant). Every bucket of
// the run must still be past the rule's relative threshold.
func runSigmas(k float64, n int, rho float64) float64 {
	if n <= 1 || k <= 0 {
		return k
	}
	target := normTail(k)
	lo, hi := 0.0, k
	for range 50 {
		b := (lo + hi) / 2
		p1 := normTail(b)
		if p1*math.Pow(orthant(b, rho)/p1, float64(n-1)) > target {
			lo = b
		} else {
			hi = b
		}
	}
	return hi
}

// normTail is P(Z ≥ x) for a standard normal Z.
func normTail(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }

// orthant is P(Z1 ≥ b, Z2 ≥ b) for standard normals with correlation
// rho: the integral over x ≥ b of φ(x)·P(Z2 ≥ b | Z1 = x), by Simpson's
// rule over the eight standard deviations past b that hold all of it.
func orthant(b, rho float64) float64 {
	if rho <= 0 {
		t := normTail(b)
		return t * t
	}
	s := math.Sqrt(1 - rho*rho)
	const steps = 256
	h := 8.0 / steps
	f := func(x float64) float64 {
		return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) * normTail((b-rho*x)/s)
	}
	sum := f(b) + f(b+8)
	for i := 1; i < steps; i++ {
		c := 2.0
		if i%2 == 1 {
			c = 4
		}
		sum += c * f(b+float64(i)*h)
	}
	return sum * h / 3
}

func (d *prefixWithdrawal) Bucket(c *aggregate.Closed, pts []aggregate.Point, emit func(Finding)) {
	w := c.End - c.Start
	js := d.judged[:0]
	defer func() { clear(js); d.judged = js[:0] }()
	for _, pt := range pts {
		st := d.states.get(pt.Series)
		// The bucket holds this reading unless judged otherwise below.
		st.Held.mark(c.Start, w, d.p.BaselineWindow, false)
		if pt.Missing {
			// The table emits nothing while no full-feed peer is up (a
			// space that is gone reads 0): not news, hold the state.
			st.Recent.add(Evidence{Time: c.Start, Value: math.NaN()})
			continue
		}
		base, ok := st.win.median(&pt.Series.Hist, c.Start, w, pt.Series.Spacing(), d.p.BaselineWindow, d.p.MinHistory)
		if !ok {
			st.Recent.add(Evidence{Time: c.Start, Value: pt.Value})
			continue
		}
		st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: base})
		if base <= 0 || base < d.p.MinBaseline {
			continue
		}
		j := spaceJudged{p: pt, st: st, base: base, drop: 1 - pt.Value/base}
		j.over, j.down = j.drop >= d.p.Threshold, j.drop >= d.p.ResolveBelow
		j.anomalous = j.over
		j.critical = j.over && d.p.Critical > 0 && j.drop >= d.p.Critical
		if d.p.Noise > 0 && (j.over || (st.Firing && j.down)) {
			var rho float64
			j.level, j.sigma, rho = d.seriesNoise(pt.Series, st, c.Start, w, base)
			short := j.level - pt.Value
			j.bar = d.runBar(pt.Series, rho)
			j.anomalous = j.over && short >= j.bar*j.sigma
			j.critical = j.critical && short >= d.p.Noise*j.sigma
			j.down = j.down && short >= j.sigma
		}
		if d.p.Noise > 0 {
			// What decides is the most a drop can be, all of the level,
			// against the bar of the rule's run. A Poisson count's
			// sampling noise is independent from round to round, and
			// √level of it (√(level/k) for the mean of k counts) puts
			// that bar at level ≥ bar²/k; a count back above it is
			// judgeable again. Otherwise only a new reading of the
			// series' noise changes the verdict.
			switch {
			case tooFewToFall(pt.Series.Signal.Def(), base, d.runBar(pt.Series, 0)):
				d.unjudgeable.set(pt.Series, unjudgeableCount)
			case j.sigma > 0 && j.level > j.bar*j.sigma:
				d.unjudgeable.set(pt.Series, judgeableNow)
			case j.sigma > 0:
				d.unjudgeable.set(pt.Series, unjudgeableNoise)
			case d.unjudgeable[pt.Series] == unjudgeableCount:
				d.unjudgeable.set(pt.Series, judgeableNow)
			}
		}
		js = append(js, j)
	}
	bad := 0
	for _, j := range js {
		if j.anomalous && !j.st.Firing {
			bad++
		}
	}
	if massFault(&d.feed, c, len(js), bad, d.p.FeedFaultShare, d.p.FeedFaultMinEntities, "bgp_announced_space", emit) {
		for _, j := range js {
			if j.anomalous && !j.st.Firing {
				d.standIn(j, c)
			}
		}
		return
	}
	for _, j := range js {
		st, pt := j.st, j.p
		step := pt.Series.Step()
		forN, resolveN := d.p.For.readingsOf(pt.Series), d.p.ResolveFor.buckets(step)
		// Keep the outage out of the baseline until it has lasted
		// AdaptAfter; then the new level is the baseline.
		switch {
		case j.critical:
			// A collapse is an outage, never a new normal: it is kept out
			// of the history and ends any run towards a new level.
			st.Adapt.reset()
			d.standIn(j, c)
		case j.anomalous || (st.Firing && j.down):
			if ratio, adapted := st.Adapt.hold(&pt.Series.Hist, c.Start, pt.Value, j.base, step, d.p.AdaptAfter); adapted {
				st.Run, st.Recovered = 0, 0
				if st.Firing {
					st.Firing = false
					emit(adaptedFinding(d.finding(Resolved, c, j), c, ratio, d.p.AdaptAfter))
				}
				continue
			}
			st.Held.mark(c.Start, c.End-c.Start, d.p.BaselineWindow, true)
		case !st.Firing && !st.Hold.holding(c.Start):
			st.Adapt.reset()
		}
		if j.anomalous {
			if st.Run == 0 {
				st.RunStart = c.Start
			}
			st.Run++
			st.Recovered = 0
			if st.Firing {
				st.Low = min(st.Low, pt.Value)
			} else if st.Run >= forN || j.critical {
				start, reopened := st.Hold.fire(st.RunStart, st.FireStart, c.Start)
				st.Firing, st.FireStart, st.FireBase, st.Low = true, start, j.base, pt.Value
				f := d.finding(Firing, c, j)
				if reopened {
					st.Hold.mark(&f)
				}
				emit(f)
			}
			continue
		}
		st.Run = 0
		if !st.Firing {
			continue
		}
		st.Low = min(st.Low, pt.Value)
		if !j.down {
			st.Recovered++
		} else {
			st.Recovered = 0
		}
		if st.Recovered >= resolveN {
			f := d.finding(Resolved, c, j)
			f.End = c.Start - int64(resolveN-1)*step
			emit(f)
			st.Hold.resolved(c.End, d.p.KeepFiringFor)
			st.Firing, st.Recovered, st.FireBase, st.Low = false, 0, 0, 0
		}
	}
}

// standIn keeps j's bucket out of the history: the baseline stands in
// its place, and the series' noise will not read it.
func (d *prefixWithdrawal) standIn(j spaceJudged, c *aggregate.Closed) {
	j.p.Series.Hist.Put(c.Start, j.base)
	j.st.Held.mark(c.Start, c.End-c.Start, d.p.BaselineWindow, true)
}

// seriesNoise is windowNoise for the bucket at t of s, read from its
// readings alone, with what a count's sampling noise adds. A window that
// is mostly stand-ins (a day after an outage of a day and more) has too
// few readings to say how the series moves, and those it has are the
// first after a return: there the series' noise is at least what its
// last window of readings showed, which each window of readings
// renews.
func (d *prefixWithdrawal) seriesNoise(s *aggregate.Series, st *spaceState, t, w int64, base float64) (level, sigma, rho float64) {
	step := s.Step()
	level, sigma, rho, n := windowNoise(&s.Hist, t, w, step, d.p.BaselineWindow, base, &st.Held, &d.noise)
	span := min(t-s.Hist.Oldest(), int64(d.p.BaselineWindow))
	if int64(2*n)*max(step, w) >= span {
		st.Sigma = float32(sigma)
	} else {
		sigma = max(sigma, float64(st.Sigma))
	}
	if v := s.Signal.Def().SamplingVar(level); v > sigma*sigma {
		// A Poisson count's sampling noise is √level (the mean of k
		// counts': √(level/k)) whatever the window shows. It is
		// independent from round to round: raised to it, the noise
		// carries over from one bucket to the next only the covariance
		// the window showed (rho·sigma²), a smaller share of the larger
		// variance.
		rho *= sigma * sigma / v
		sigma = math.Sqrt(v)
	}
	return level, sigma, rho
}

// runBar is the noise bar of each bucket of a run of For (runSigmas) on
// series s, for noise of lag-1 autocorrelation rho, worked out once per
// run length and twentieth of rho (rounded up, towards the stricter
// bar): series of different steps share the table.
func (d *prefixWithdrawal) runBar(s *aggregate.Series, rho float64) float64 {
	n := d.p.For.readingsOf(s)
	bars := d.bars[n]
	if bars == nil {
		if d.bars == nil {
			d.bars = map[int]*[21]float64{}
		}
		bars = new([21]float64)
		d.bars[n] = bars
	}
	i := int(math.Ceil(min(max(rho, 0), 1) * 20))
	if bars[i] == 0 {
		bars[i] = runSigmas(d.p.Noise, n, float64(i)/20)
	}
	return bars[i]
}

func (d *prefixWithdrawal) finding(status string, c *aggregate.Closed, j spaceJudged) Finding {
	st, pt := j.st, j.p
	unit := pt.Series.Signal.Def().Unit
	f := Finding{Status: status, Detector: PrefixWithdrawalName, Signal: pt.Series.Signal.String(), Entity: pt.Series.Entity,
		Start: st.FireStart, At: c.End, Observed: round(pt.Value, 3), Baseline: round(j.base, 3),
		BaselineMethod: "median_recent", ChangePct: changePct(pt.Value, j.base),
		Evidence: slices.Clone(st.Recent),
		Details: map[string]any{
			"unit":             unit,
			"withdrawn":        round(max(j.base-pt.Value, 0), 3),
			"lowest":           round(st.Low, 3),
			"baseline_window":  time.Duration(d.p.BaselineWindow).String(),
			"threshold_pct":    round(d.p.Threshold*100, 1),
			"fired_against":    round(st.FireBase, 3),
			"baseline_buckets": int(int64(d.p.BaselineWindow) / (c.End - c.Start)),
		}}
	if j.sigma > 0 {
		gate := max(d.p.Threshold*j.base, d.p.Noise*j.sigma)
		f.Details["noise"] = round(j.sigma, 3)
		f.Details["expected"] = round(j.level, 3)
		f.Details["sigmas"] = round(min((j.level-pt.Value)/j.sigma, 999), 1)
		if status == Firing {
			f.Confidence = confidence(j.base-pt.Value, gate)
		}
	}
	// Routing's own signals are announced space; a declared gauge (IODA's
	// active probing, a telescope's sources) is named as itself, which
	// notifications put in words.
	routing := pt.Series.Signal.Def().Feed == obs.FeedBGP
	switch {
	case routing && status == Firing:
		f.Summary = fmt.Sprintf("announced space of %s down %.1f%%: %.0f of %.0f %s visible (%s)",
			f.Entity, -f.ChangePct, pt.Value, j.base, words.Unit(unit), f.Signal)
	case routing:
		f.Summary = fmt.Sprintf("announced space of %s back: %.0f of %.0f %s visible (lowest %.0f)",
			f.Entity, pt.Value, j.base, words.Unit(unit), st.Low)
	case status == Firing:
		f.Summary = fmt.Sprintf("%s of %s down %.1f%%: %s of %s %s",
			f.Signal, f.Entity, -f.ChangePct, words.Figure(pt.Value), words.Figure(j.base), words.Unit(unit))
	default:
		f.Summary = fmt.Sprintf("%s of %s back: %s of %s %s (lowest %s)",
			f.Signal, f.Entity, words.Figure(pt.Value), words.Figure(j.base), words.Unit(unit), words.Figure(st.Low))
	}
	return f
}

func (d *prefixWithdrawal) MarshalBinary() ([]byte, error) {
	return saveState(feedCheckpoint[spaceState]{States: d.states.byName(), Feed: d.feed})
}

func (d *prefixWithdrawal) UnmarshalBinary(b []byte) error {
	cp := feedCheckpoint[spaceState]{States: map[string]*spaceState{}}
	if err := loadState(b, &cp, PrefixWithdrawalName+" "+d.rule); err != nil {
		return err
	}
	d.states.restore(cp.States)
	d.feed = cp.Feed
	return nil
}

// massFault handles the feed-fault guard shared by the routing detectors:
// when at least share of n judged series turn anomalous together (and n is
// at least minN), the feed is at fault, not the networks: one feed-health
// finding fires and the caller skips the per-entity judgement. It resolves
// on the first bucket with judged series that is not such a fault.
func massFault(st *feedFaultState, c *aggregate.Closed, n, bad int, share float64, minN int, signal string, emit func(Finding)) bool {
	entity := obs.KindFeed + ":" + string(obs.FeedBGP)
	if n >= minN && float64(bad) >= share*float64(n) {
		st.Run++
		if !st.Firing {
			st.Firing, st.Start = true, c.Start
			emit(Finding{Status: Firing, Detector: "feed_health", Signal: signal, Entity: entity,
				Start: c.Start, At: c.End, Observed: float64(bad), Baseline: float64(n),
				ChangePct: changePct(float64(n-bad), float64(n)),
				Summary: fmt.Sprintf("%d of %d routing series changed at once on %s: the BGP feed is at fault, per-network alerts held",
					bad, n, signal),
				Details: map[string]any{"entities_changed": bad, "entities_judged": n}})
		}
		return true
	}
	if st.Firing && n > 0 {
		st.Firing, st.Run = false, 0
		emit(Finding{Status: Resolved, Detector: "feed_health", Signal: signal, Entity: entity,
			Start: st.Start, End: c.Start, At: c.End, Observed: float64(bad), Baseline: float64(n),
			Summary: fmt.Sprintf("the BGP feed is back: %d of %d routing series changed on %s", bad, n, signal)})
	}
	return false
}

// WithdrawalBurst configures the withdrawal-burst detector: the number of
// withdrawals of an origin's (or a country's) prefixes in one bucket, as
// the peers of every collector report them (bgp_withdrawals), far above
// what that entity normally sees. Virgin Media's outages of 2023-04-04
// showed as such bursts from AS5089 before and while its space went.
//
// Normal is a high quantile of the entity's recent buckets (most buckets
// of most networks have no withdrawals at all, so a median would be zero):
// a bucket bursts at max(MinWithdrawals, Multiple × that quantile). Bursts
// are kept out of the history so that one episode does not raise the bar
// for the next.
//
// The alert resolves when routes return: when withdrawals have been back
// under the bar for ResolveFor and the entity's announced space (v4 and v6)
// is back to RecoverShare of what it was before the burst. A burst that
// withdrew nothing for good (a flap) resolves as soon as it ends; space
// that never returns resolves after MaxHold, saying so.
type WithdrawalBurst struct {
	MinWithdrawals float64 `yaml:"min_withdrawals"`
	Multiple       float64 `yaml:"multiple"`
	Quantile       float64 `yaml:"quantile"`
	// For is how long the burst must last before the alert fires.
	For        Duration `yaml:"for"`
	ResolveFor Duration `yaml:"resolve_for"`
	// RecoverShare is the share of the pre-burst announced space that must
	// be visible again for the alert to resolve.
	RecoverShare float64  `yaml:"recover_share"`
	MaxHold      Duration `yaml:"max_hold"`
	// BaselineWindow and MinHistory as for prefix_withdrawal.
	BaselineWindow Duration `yaml:"baseline_window"`
	MinHistory     Duration `yaml:"min_history"`
	// FeedFaultShare and FeedFaultMinEntities: a peer that withdraws its
	// whole table (its own upstream failed) makes every origin burst at
	// once; that is one feed-health finding, not an alert per network.
	FeedFaultShare       float64 `yaml:"feed_fault_share"`
	FeedFaultMinEntities int     `yaml:"feed_fault_min_entities"`
}

// DefaultWithdrawalBurst returns the defaults that ship.
func DefaultWithdrawalBurst() *WithdrawalBurst {
	return &WithdrawalBurst{
		MinWithdrawals: 100, Multiple: 10, Quantile: 0.9, For: Duration(5 * 60e9), ResolveFor: Duration(15 * 60e9),
		RecoverShare: 0.9, MaxHold: Duration(7 * 24 * 3600e9),
		BaselineWindow: Duration(24 * 3600e9), MinHistory: Duration(3600e9),
		FeedFaultShare: 0.8, FeedFaultMinEntities: 10,
	}
}

// Validate checks the settings.
func (p *WithdrawalBurst) Validate() error {
	switch {
	case p.MinWithdrawals < 1:
		return errors.New("min_withdrawals: must be at least 1")
	case p.Multiple < 1:
		return errors.New("multiple: must be at least 1")
	case p.Quantile <= 0 || p.Quantile > 1:
		return errors.New("quantile: must be in (0, 1] (0.9 = the 90th percentile of recent buckets)")
	case p.For < 0 || p.ResolveFor < 0:
		return errors.New("for, resolve_for: must not be negative")
	case p.RecoverShare < 0 || p.RecoverShare > 1:
		return errors.New("recover_share: must be a fraction in [0, 1] (0 resolves without waiting for space)")
	case p.MaxHold < p.ResolveFor:
		return errors.New("max_hold: must be at least resolve_for")
	}
	if err := validateHistory(p.BaselineWindow, p.MinHistory); err != nil {
		return err
	}
	return validateFeedFault(p.FeedFaultShare, p.FeedFaultMinEntities)
}

// Build returns the detector.
func (p *WithdrawalBurst) Build(rule string) Detector {
	return &withdrawalBurst{p: *p, rule: rule}
}

type withdrawalBurst struct {
	p       WithdrawalBurst
	rule    string
	states  seriesStates[burstState]
	feed    feedFaultState
	scratch []float64
	// space4 and space6 are the announced-space signals, looked up by name
	// so that this package need not import the BGP input.
	space4, space6 obs.Signal
}

// burstState is one series' state; exported fields are checkpointed.
type burstState struct {
	Run, Calm int
	RunStart  int64
	Firing    bool
	FireStart int64
	// Peak is the most withdrawals in a bucket while firing, Total their
	// sum; Bar the threshold the alert fired at.
	Peak, Total, Bar float64
	// Pre4 and Pre6 are the announced space before the burst, NaN unknown.
	Pre4, Pre6 float64
	Recent     evidenceLog
}

type burstJudged struct {
	p         aggregate.Point
	st        *burstState
	base, bar float64
	anomalous bool
}

func (d *withdrawalBurst) Bucket(c *aggregate.Closed, pts []aggregate.Point, emit func(Finding)) {
	w := c.End - c.Start
	if d.space4 == 0 {
		d.space4, _ = obs.Lookup("bgp_announced_v4")
		d.space6, _ = obs.Lookup("bgp_announced_v6")
	}
	var js []burstJudged
	for _, pt := range pts {
		st := d.states.get(pt.Series)
		if pt.Missing {
			st.Recent.add(Evidence{Time: c.Start, Value: math.NaN()})
			continue
		}
		vs, ok := recentHistory(&pt.Series.Hist, c.Start, w, pt.Series.Spacing(), d.p.BaselineWindow, d.p.MinHistory, nil, &d.scratch)
		if !ok {
			st.Recent.add(Evidence{Time: c.Start, Value: pt.Value})
			continue
		}
		base := quantile(vs, d.p.Quantile)
		bar := max(d.p.MinWithdrawals, d.p.Multiple*base)
		st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: base})
		js = append(js, burstJudged{p: pt, st: st, base: base, bar: bar, anomalous: pt.Value >= bar})
	}
	bad := 0
	for _, j := range js {
		if j.anomalous && !j.st.Firing {
			bad++
		}
	}
	if massFault(&d.feed, c, len(js), bad, d.p.FeedFaultShare, d.p.FeedFaultMinEntities, "bgp_withdrawals", emit) {
		for _, j := range js {
			if j.anomalous {
				j.p.Series.Hist.Put(c.Start, j.base)
			}
		}
		return
	}
	forN, resolveN, holdN := d.p.For.buckets(w), d.p.ResolveFor.buckets(w), d.p.MaxHold.buckets(w)
	for _, j := range js {
		st, pt := j.st, j.p
		if j.anomalous {
			pt.Series.Hist.Put(c.Start, j.base)
			if st.Run == 0 {
				st.RunStart = c.Start
			}
			st.Run++
			st.Calm = 0
			if st.Firing {
				st.Peak = max(st.Peak, pt.Value)
				st.Total += pt.Value
				continue
			}
			if st.Run >= forN {
				pre4 := d.spaceBefore(c, d.space4, pt.Series.Entity, st.RunStart-w)
				pre6 := d.spaceBefore(c, d.space6, pt.Series.Entity, st.RunStart-w)
				if st.Run < burstConfirm && !d.spaceGone(c, pt.Series.Entity, pre4, pre6) {
					continue
				}
				st.Firing, st.FireStart, st.Peak, st.Total, st.Bar = true, st.RunStart, pt.Value, pt.Value, j.bar
				st.Pre4, st.Pre6 = pre4, pre6
				emit(d.finding(Firing, c, j, ""))
			}
			continue
		}
		st.Run = 0
		if !st.Firing {
			continue
		}
		st.Total += pt.Value
		st.Calm++
		back := d.spaceBack(c, pt.Series.Entity, st)
		if (st.Calm >= resolveN && back) || st.Calm >= holdN {
			note := ""
			if !back {
				note = fmt.Sprintf("; the withdrawn space has not returned after %s", time.Duration(d.p.MaxHold).String())
			}
			f := d.finding(Resolved, c, j, note)
			f.End = c.Start - int64(st.Calm-1)*w
			if back {
				f.End = c.Start
			}
			emit(f)
			st.Firing, st.Calm, st.Peak, st.Total = false, 0, 0, 0
		}
	}
}

// spaceBefore is the entity's announced space on sig in the bucket at t,
// NaN when unknown.
func (d *withdrawalBurst) spaceBefore(c *aggregate.Closed, sig obs.Signal, entity string, t int64) float64 {
	if pt := findPoint(c, sig, entity); pt != nil {
		if v, ok := pt.Series.Hist.Get(t); ok {
			return v
		}
	}
	return math.NaN()
}

// burstConfirm is how many buckets in a row a burst must last to fire
// when it has taken no space with it. A peer that resets its session, or
// re-sends its table, withdraws and re-announces within minutes and
// leaves every route where it was; an outage takes routes away and keeps
// them away, and instability that matters (a worm's churn, a flapping
// core) goes on. So a burst fires at once only when the entity's
// announced space has fallen (below RecoverShare of what it was before).
// Where the space is not known (a feed of update counts alone), a burst
// must outlast a bucket. A few minutes' burst lands in two buckets
// whenever it crosses a boundary, so two in a row do not show that;
// three do, the middle one whole (latency_shift waits for For/width+1
// buckets for the same reason).
const burstConfirm = 3

// spaceGone reports whether the entity's announced space, on some family
// known before the burst (pre4, pre6; NaN unknown), is now under
// RecoverShare of it or reads no data.
func (d *withdrawalBurst) spaceGone(c *aggregate.Closed, entity string, pre4, pre6 float64) bool {
	for _, x := range [2]struct {
		sig obs.Signal
		pre float64
	}{{d.space4, pre4}, {d.space6, pre6}} {
		if math.IsNaN(x.pre) || x.pre <= 0 {
			continue
		}
		if pt := findPoint(c, x.sig, entity); pt != nil && (pt.Missing || pt.Value < d.p.RecoverShare*x.pre) {
			return true
		}
	}
	return false
}

// spaceBack reports whether the entity's announced space is back to
// RecoverShare of what it was before the burst, on every family known.
// A family whose space reads no data now (all of it withdrawn, or no
// full-feed peer) is not back.
func (d *withdrawalBurst) spaceBack(c *aggregate.Closed, entity string, st *burstState) bool {
	for _, x := range [2]struct {
		sig obs.Signal
		pre float64
	}{{d.space4, st.Pre4}, {d.space6, st.Pre6}} {
		if math.IsNaN(x.pre) || x.pre <= 0 {
			continue
		}
		pt := findPoint(c, x.sig, entity)
		if pt == nil || pt.Missing || pt.Value < d.p.RecoverShare*x.pre {
			return false
		}
	}
	return true
}

func (d *withdrawalBurst) finding(status string, c *aggregate.Closed, j burstJudged, note string) Finding {
	st, pt := j.st, j.p
	f := Finding{Status: status, Detector: WithdrawalBurstName, Signal: pt.Series.Signal.String(), Entity: pt.Series.Entity,
		Start: st.FireStart, At: c.End, Observed: round(pt.Value, 3), Baseline: round(j.base, 3),
		BaselineMethod: fmt.Sprintf("p%g_recent", d.p.Quantile*100), ChangePct: changePct(pt.Value, j.base),
		Evidence: slices.Clone(st.Recent),
		Details: map[string]any{
			"threshold":         round(st.Bar, 1),
			"peak_withdrawals":  st.Peak,
			"total_withdrawals": st.Total,
		}}
	if !math.IsNaN(st.Pre4) {
		f.Details["space_v4_before"] = round(st.Pre4, 3)
	}
	if !math.IsNaN(st.Pre6) {
		f.Details["space_v6_before"] = round(st.Pre6, 3)
	}
	if status == Firing {
		f.Summary = fmt.Sprintf("burst of BGP withdrawals for %s: %.0f in one bucket against %.0f normally (threshold %.0f)",
			f.Entity, pt.Value, j.base, st.Bar)
	} else {
		f.Summary = fmt.Sprintf("BGP withdrawals for %s back to normal (%.0f in the episode, peak %.0f in one bucket)%s",
			f.Entity, st.Total, st.Peak, note)
	}
	return f
}

func (d *withdrawalBurst) MarshalBinary() ([]byte, error) {
	return saveState(feedCheckpoint[burstState]{States: d.states.byName(), Feed: d.feed})
}

func (d *withdrawalBurst) UnmarshalBinary(b []byte) error {
	cp := feedCheckpoint[burstState]{States: map[string]*burstState{}}
	if err := loadState(b, &cp, WithdrawalBurstName+" "+d.rule); err != nil {
		return err
	}
	d.states.restore(cp.States)
	d.feed = cp.Feed
	return nil
}

// findPoint returns the point of (sig, entity) in the closed bucket, whose
// points are sorted by signal then entity, or nil.
func findPoint(c *aggregate.Closed, sig obs.Signal, entity string) *aggregate.Point {
	if sig == 0 {
		return nil
	}
	i := sort.Search(len(c.Points), func(i int) bool {
		k := c.Points[i].Series.Key
		return cmp.Or(cmp.Compare(k.Signal, sig), cmp.Compare(k.Entity, entity)) >= 0
	})
	if i < len(c.Points) && c.Points[i].Series.Signal == sig && c.Points[i].Series.Entity == entity {
		return &c.Points[i]
	}
	return nil
}
