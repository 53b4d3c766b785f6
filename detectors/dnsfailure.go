package detectors

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/series"
)

// DNSFailureName is the name rules use for the DNS failure detector.
const DNSFailureName = "dns_failure"

func init() { Register(DNSFailureName, func() Params { return DefaultDNSFailure() }) }

// DNSFailure configures the DNS failure detector: the share of responses
// that failed (SERVFAIL, REFUSED, timeouts) for a zone or a client network
// jumps above what that zone or network normally sees.
//
// Each series is judged against its own recent past, because "normal" varies
// a lot: a zone with a broken DNSSEC chain or a network full of probing
// clients may fail a few percent all day, and neither is news. The baseline
// is the median ratio of the buckets held in the last BaselineWindow,
// leaving out the buckets that were anomalous (or judged while firing), so
// an episode never raises the bar for the next one. While an alert fires
// the baseline it fired against is kept, so recovery is judged against the
// same yardstick.
//
// A bucket is judged only when it holds at least MinQueries responses: three
// failures out of five queries at 4 a.m. are not an outage. Such buckets,
// and buckets without data, neither extend nor break a run.
type DNSFailure struct {
	// Floor is the smallest failure ratio that can fire (0.2 = 20 % of
	// responses failed), whatever the baseline.
	Floor float64 `yaml:"floor"`
	// Multiple and Delta say how far above its baseline the ratio must be:
	// at least baseline × Multiple and at least baseline + Delta.
	Multiple float64 `yaml:"multiple"`
	Delta    float64 `yaml:"delta"`
	// For is how long the ratio must stay high before the alert fires.
	For Duration `yaml:"for"`
	// MinQueries is the fewest responses in a bucket worth judging.
	MinQueries int64 `yaml:"min_queries"`
	// A bucket counts as recovered below max(ResolveBelow, baseline ×
	// ResolveMultiple); ResolveFor is how long recovery must last. Both
	// sit under the firing thresholds, so a ratio hovering at the edge
	// does not flap.
	ResolveBelow    float64  `yaml:"resolve_below"`
	ResolveMultiple float64  `yaml:"resolve_multiple"`
	ResolveFor      Duration `yaml:"resolve_for"`
	// BaselineWindow is how far back the baseline looks, and MinHistory
	// how much usable history it needs before the detector judges at all.
	BaselineWindow Duration `yaml:"baseline_window"`
	MinHistory     Duration `yaml:"min_history"`
	// Noise is how many standard deviations of the ratio's own sampling
	// noise the rise over the baseline must also exceed: of n responses
	// failing at the baseline's rate p, the share that fails varies by
	// √(p(1−p)/n) by chance (binomial). 0 turns it off.
	Noise float64 `yaml:"noise"`
	// KeepFiringFor is the hold after a resolve inside which a new rise
	// is the same alert, with the start it had (see flapHold): a
	// resolver that recovers for a quarter of an hour and fails again is
	// one incident. 0 has none.
	KeepFiringFor Duration `yaml:"keep_firing_for"`
}

// DefaultDNSFailure returns the defaults that ship; Noise is the control
// limit countSigmas.
func DefaultDNSFailure() *DNSFailure {
	return &DNSFailure{
		Floor: 0.2, Multiple: 3, Delta: 0.1, For: Duration(10 * 60e9), MinQueries: 20,
		ResolveBelow: 0.1, ResolveMultiple: 1.5, ResolveFor: Duration(15 * 60e9),
		BaselineWindow: Duration(24 * 3600e9), MinHistory: Duration(3600e9), Noise: countSigmas,
		KeepFiringFor: Duration(3600e9),
	}
}

// Validate checks the settings.
func (p *DNSFailure) Validate() error {
	switch {
	case p.Floor <= 0 || p.Floor > 1:
		return errors.New("floor: must be a ratio in (0, 1] (0.2 = 20 % of responses failed)")
	case p.Multiple < 1:
		return errors.New("multiple: must be at least 1 (1 disables the relative test)")
	case p.Delta < 0 || p.Delta >= 1:
		return errors.New("delta: must be a ratio in [0, 1)")
	case p.For < 0:
		return errors.New("for: must not be negative")
	case p.MinQueries < 1:
		return errors.New("min_queries: must be at least 1")
	case p.ResolveBelow < 0 || p.ResolveBelow >= p.Floor:
		return errors.New("resolve_below: must be at least 0 and below floor")
	case p.ResolveMultiple < 1 || p.ResolveMultiple > p.Multiple:
		return errors.New("resolve_multiple: must be between 1 and multiple")
	case p.ResolveFor < 0:
		return errors.New("resolve_for: must not be negative")
	case p.KeepFiringFor < 0:
		return errors.New("keep_firing_for: must not be negative")
	case !(p.Noise >= 0) || math.IsInf(p.Noise, 0):
		return errors.New("noise: must be a finite number of standard deviations, at least 0")
	}
	return validateHistory(p.BaselineWindow, p.MinHistory)
}

// Build returns the detector.
func (p *DNSFailure) Build(rule string) Detector {
	return &dnsFailure{p: *p, rule: rule}
}

type dnsFailure struct {
	p       DNSFailure
	rule    string
	states  seriesStates[failState]
	scratch []float64
	// unjudgeable holds the series no ratio can fire on (see
	// Unjudgeable).
	unjudgeable unjudged[*aggregate.Series]
}

// Unjudgeable lists, as "signal entity", the series this rule cannot
// judge at its threshold: one whose usual failure ratio puts the rule's
// threshold past 100 % (a zone that fails 40 % of its answers all day,
// against three times its baseline), or whose responses are too few for
// even all of them failing to stand Noise binomial deviations above it.
// Series under min_queries are the rule's own choice, and not listed.
func (d *dnsFailure) Unjudgeable() []string { return seriesNames(d.unjudgeable) }

// failState is one series' state; exported fields are checkpointed.
type failState struct {
	Run, Recovered int
	RunStart       int64
	Firing         bool
	FireStart      int64
	// FireBase is the baseline the alert fired against; Peak the highest
	// ratio seen while firing.
	FireBase, Peak float64
	// Hold is the hold after a resolve (KeepFiringFor).
	Hold flapHold
	// Base caches the baseline, recomputed hourly (BaseAt).
	Base   float64
	BaseOK bool
	BaseAt int64
	// Excluded lists, ascending, the starts of buckets within the baseline
	// window that the baseline must not use.
	Excluded []int64
	Recent   evidenceLog
}

func (d *dnsFailure) Bucket(c *aggregate.Closed, pts []aggregate.Point, emit func(Finding)) {
	w := c.End - c.Start
	forN, resolveN := d.p.For.buckets(w), d.p.ResolveFor.buckets(w)
	for _, pt := range pts {
		st := d.states.get(pt.Series)
		st.prune(c.Start - int64(d.p.BaselineWindow))
		if pt.Missing || pt.Count < d.p.MinQueries {
			// Too little to judge: hold the state. A firing alert's
			// buckets stay out of the baseline all the same.
			v := pt.Value
			if pt.Missing {
				v = math.NaN()
			}
			st.Recent.add(Evidence{Time: c.Start, Value: v, Baseline: st.Base})
			if st.Firing {
				st.exclude(c.Start)
			}
			continue
		}
		base, ok := st.FireBase, true
		if !st.Firing {
			base, ok = d.baseline(st, &pt.Series.Hist, c.Start, w, pt.Series.Spacing())
		}
		st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: base})
		if !ok {
			continue
		}
		v := pt.Value
		threshold, rise := d.threshold(base), d.p.Noise*binomialSigma(base, pt.Count)
		if !st.Firing {
			why := judgeableNow
			switch {
			case threshold > 1:
				why = unjudgeableLevel
			case 1-base < rise:
				why = unjudgeableCount
			}
			d.unjudgeable.set(pt.Series, why)
		}
		anomalous := v >= threshold && v-base >= rise
		if anomalous || st.Firing {
			st.exclude(c.Start)
		}
		if anomalous {
			if st.Run == 0 {
				st.RunStart = c.Start
			}
			st.Run++
			st.Recovered = 0
			if st.Firing {
				st.Peak = max(st.Peak, v)
			} else if st.Run >= forN {
				start, reopened := st.Hold.fire(st.RunStart, st.FireStart, c.Start)
				st.Firing, st.FireStart, st.FireBase, st.Peak = true, start, base, v
				f := d.finding(Firing, c, pt, st, base)
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
		st.Peak = max(st.Peak, v)
		if v < max(d.p.ResolveBelow, base*d.p.ResolveMultiple) {
			st.Recovered++
		} else {
			st.Recovered = 0
		}
		if st.Recovered >= resolveN {
			f := d.finding(Resolved, c, pt, st, base)
			f.End = c.Start - int64(resolveN-1)*w
			emit(f)
			st.Hold.resolved(c.End, d.p.KeepFiringFor)
			st.Firing, st.Recovered, st.FireBase, st.Peak = false, 0, 0, 0
			st.BaseOK = false // the episode's buckets are excluded: recompute now
		}
	}
}

// binomialSigma is the sampling spread of a ratio of n trials at rate p;
// a rate of 0 counts as half a trial in n (no failure seen is not a rate
// known to be 0).
func binomialSigma(p float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	p = min(max(p, 0.5/float64(n)), 1)
	return math.Sqrt(p * (1 - p) / float64(n))
}

// threshold is the ratio at or above which a bucket is anomalous.
func (d *dnsFailure) threshold(base float64) float64 {
	return max(d.p.Floor, base*d.p.Multiple, base+d.p.Delta)
}

// baseline returns the median ratio of the usable buckets in the window
// before t, recomputed at most hourly.
func (d *dnsFailure) baseline(st *failState, r *series.Ring, t, w, spacing int64) (float64, bool) {
	if st.BaseOK && t-st.BaseAt < 3600e9 && t >= st.BaseAt {
		return st.Base, true
	}
	vs, ok := recentHistory(r, t, w, spacing, d.p.BaselineWindow, d.p.MinHistory, st.Excluded, &d.scratch)
	if !ok {
		st.BaseOK = false
		return 0, false
	}
	st.Base, st.BaseOK, st.BaseAt = median(vs), true, t
	return st.Base, true
}

func (st *failState) exclude(t int64) {
	if n := len(st.Excluded); n == 0 || st.Excluded[n-1] < t {
		st.Excluded = append(st.Excluded, t)
	}
}

// prune drops exclusions older than the baseline window.
func (st *failState) prune(from int64) {
	i := 0
	for i < len(st.Excluded) && st.Excluded[i] < from {
		i++
	}
	if i > 0 {
		st.Excluded = append(st.Excluded[:0], st.Excluded[i:]...)
	}
}

func (d *dnsFailure) finding(status string, c *aggregate.Closed, pt aggregate.Point, st *failState, base float64) Finding {
	v := pt.Value
	f := Finding{Status: status, Detector: DNSFailureName, Signal: pt.Series.Signal.String(), Entity: pt.Series.Entity,
		Start: st.FireStart, At: c.End, Observed: round(v, 4), Baseline: round(base, 4),
		BaselineMethod: "median_recent", ChangePct: changePct(v, base),
		Evidence: slices.Clone(st.Recent),
		Details: map[string]any{
			"responses":          pt.Count,
			"failures":           int64(math.Round(v * float64(pt.Count))),
			"increase_points":    round((v-base)*100, 1) + 0, // never -0
			"threshold":          round(d.threshold(base), 4),
			"min_queries":        d.p.MinQueries,
			"peak_failure_ratio": round(st.Peak, 4),
		}}
	if status == Firing {
		f.Summary = fmt.Sprintf("DNS failures for %s: %.1f%% of %d responses failed, against %.1f%% normally",
			f.Entity, v*100, pt.Count, base*100)
	} else {
		f.Summary = fmt.Sprintf("DNS failures for %s back to %.1f%% of %d responses (peak %.1f%%, normally %.1f%%)",
			f.Entity, v*100, pt.Count, st.Peak*100, base*100)
	}
	return f
}

func (d *dnsFailure) MarshalBinary() ([]byte, error) {
	return saveState(d.states.byName())
}

func (d *dnsFailure) UnmarshalBinary(b []byte) error {
	states := map[string]*failState{}
	if err := loadState(b, &states, DNSFailureName+" "+d.rule); err != nil {
		return err
	}
	d.states.restore(states)
	return nil
}
