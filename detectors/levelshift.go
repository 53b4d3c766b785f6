package detectors

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/series"
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
// The level of the series is the median of the buckets of the last For: a
// single spike (one bucket of three or four) cannot move it, a new level
// held for most of the window does. The baseline is the median of the
// BaselineWindow before that, and its spread the median absolute
// deviation of the same buckets (scaled to a standard deviation). A shift
// fires when the level is above the baseline by all three of: Threshold
// (relative), MinDeltaMs (absolute) and Noise robust standard deviations
// of the series' own recent noise. The defaults, 20 % and 10 ms over a
// 20-minute window, are what an operator calls a latency shift (and what
// the labelled RIPE Atlas series in testdata are scored against); the
// noise factor of 4 keeps a jittery path from paging at the same
// relative threshold that fits a flat one.
//
// While firing the baseline is frozen at its value when the shift began.
// A shift that lasts AdaptAfter is a new normal (a re-route that stays):
// the alert resolves with reason baseline_adapted and the baseline is
// taken from the new level on. AdaptAfter 0 keeps it firing until the
// level comes back.
type LatencyShift struct {
	// Threshold is the rise over baseline that counts, as a fraction.
	Threshold float64 `yaml:"threshold"`
	// MinDeltaMs is the smallest rise in milliseconds that counts.
	MinDeltaMs float64 `yaml:"min_delta_ms"`
	// Noise is how many robust standard deviations of the baseline window
	// the rise must also exceed; 0 turns the noise gate off.
	Noise float64 `yaml:"noise"`
	// For is the window whose median is the current level: the time a new
	// level must hold (for most of the window) to fire.
	For Duration `yaml:"for"`
	// BaselineWindow is the history before that window the baseline is
	// the median of, and MinHistory how much of it must hold data.
	BaselineWindow Duration `yaml:"baseline_window"`
	MinHistory     Duration `yaml:"min_history"`
	// ResolveBelow is the relative rise under which the level counts as
	// back, and ResolveFor how long it must stay back.
	ResolveBelow float64  `yaml:"resolve_below"`
	ResolveFor   Duration `yaml:"resolve_for"`
	// AdaptAfter is how long a shift must last to become the baseline.
	AdaptAfter Duration `yaml:"adapt_after"`
	// MinSamples is the fewest samples a bucket needs to count.
	MinSamples int64 `yaml:"min_samples"`
}

// DefaultLatencyShift returns the defaults that ship.
func DefaultLatencyShift() *LatencyShift {
	return &LatencyShift{Threshold: 0.2, MinDeltaMs: 10, Noise: 4, For: Duration(20 * 60e9),
		BaselineWindow: Duration(6 * 3600e9), MinHistory: Duration(2 * 3600e9),
		ResolveBelow: 0.1, ResolveFor: Duration(20 * 60e9), AdaptAfter: Duration(2 * 3600e9), MinSamples: 1}
}

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
	case p.ResolveFor < 0 || p.AdaptAfter < 0:
		return errors.New("resolve_for, adapt_after: must not be negative")
	case p.MinSamples < 1:
		return errors.New("min_samples: must be at least 1")
	}
	return validateHistory(p.BaselineWindow, p.MinHistory)
}

// Build returns the detector.
func (p *LatencyShift) Build(rule string) Detector {
	return &levelShift{p: *p, rule: rule, states: map[string]*levelState{}}
}

type levelShift struct {
	p       LatencyShift
	rule    string
	states  map[string]*levelState
	scratch []float64
}

// levelState is one series' state; exported fields are checkpointed.
type levelState struct {
	Firing    bool
	FireStart int64
	// Base and Spread are the baseline and noise frozen when the shift
	// began.
	Base, Spread float64
	Recovered    int
	// Since bounds the baseline window after an adaptation: the old level
	// is no longer the baseline.
	Since  int64
	Recent evidenceLog
}

func (d *levelShift) Bucket(c *aggregate.Closed, pts []aggregate.Point, emit func(Finding)) {
	for _, pt := range pts {
		st := stateOf(d.states, pt.Series.Key.String())
		// A probe that reports every step, not every bucket, is read on
		// its own grid.
		w := pt.Series.Step()
		n, resolveN := d.p.For.buckets(w), d.p.ResolveFor.buckets(w)
		if pt.Missing || pt.Count < d.p.MinSamples || math.IsNaN(pt.Value) {
			st.Recent.add(Evidence{Time: c.Start, Value: math.NaN()})
			continue
		}
		winStart := c.Start - int64(n-1)*w
		level, ok := d.level(&pt.Series.Hist, winStart, c.Start, w, pt.Value, n)
		if !ok {
			st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: math.NaN()})
			continue
		}
		if !st.Firing {
			base, spread, ok := d.baseline(&pt.Series.Hist, max(winStart-int64(d.p.BaselineWindow), st.Since), winStart, w)
			if !ok {
				st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: math.NaN()})
				continue
			}
			st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: base})
			if gate := d.gate(base, spread); level-base >= gate {
				st.Firing, st.FireStart, st.Base, st.Spread, st.Recovered = true, winStart, base, spread, 0
				emit(d.finding(Firing, c, pt, st, level, ""))
			}
			continue
		}
		st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: st.Base})
		delta := level - st.Base
		if delta < d.p.ResolveBelow*st.Base || delta < d.p.MinDeltaMs/2 {
			st.Recovered++
		} else {
			st.Recovered = 0
		}
		switch {
		case st.Recovered >= resolveN:
			st.Firing = false
			f := d.finding(Resolved, c, pt, st, level, ReasonRecovered)
			f.End = c.Start - int64(resolveN-1)*w
			emit(f)
		case st.Recovered == 0 && d.p.AdaptAfter > 0 && c.End-st.FireStart >= int64(d.p.AdaptAfter):
			st.Firing, st.Since = false, st.FireStart
			f := d.finding(Resolved, c, pt, st, level, ReasonBaselineAdapted)
			f.End = c.End
			emit(f)
		}
	}
}

// level is the lower median of the buckets of the window [from, t] that
// hold data, v being the value of the bucket at t (not yet in the
// history): the value that a majority of them reach, so that two spiky
// buckets of four cannot lift it. ok is false when fewer than half of the
// window's buckets hold data.
func (d *levelShift) level(r *series.Ring, from, t, w int64, v float64, n int) (float64, bool) {
	vs := d.scratch[:0]
	for x := from; x < t; x += w {
		if y, ok := r.Get(x); ok {
			vs = append(vs, y)
		}
	}
	vs = append(vs, v)
	d.scratch = vs
	if 2*len(vs) < n+1 {
		return 0, false
	}
	slices.Sort(vs)
	return vs[(len(vs)-1)/2], true
}

// baseline returns the median and robust spread of the buckets in
// [from, to); ok is false with less than MinHistory of them.
func (d *levelShift) baseline(r *series.Ring, from, to, w int64) (base, spread float64, ok bool) {
	vs := d.scratch[:0]
	for x := max(from, r.Oldest()); x < to; x += w {
		if y, ok := r.Get(x); ok {
			vs = append(vs, y)
		}
	}
	d.scratch = vs
	if int64(len(vs))*w < int64(d.p.MinHistory) {
		return 0, 0, false
	}
	base = median(vs)
	return base, robustSpread(vs, base), true
}

// gate is the smallest rise over base that fires.
func (d *levelShift) gate(base, spread float64) float64 {
	return max(d.p.Threshold*base, d.p.MinDeltaMs, d.p.Noise*spread)
}

func (d *levelShift) finding(status string, c *aggregate.Closed, pt aggregate.Point, st *levelState, level float64, reason string) Finding {
	f := Finding{Status: status, Detector: LatencyShiftName, Signal: pt.Series.Signal.String(), Entity: pt.Series.Entity,
		Start: st.FireStart, At: c.End, Observed: round(level, 3), Baseline: round(st.Base, 3),
		BaselineMethod: "recent_median", ChangePct: changePct(level, st.Base),
		Evidence: slices.Clone(st.Recent)}
	delta := level - st.Base
	if status == Firing {
		f.Confidence = confidence(delta, d.gate(st.Base, st.Spread))
		f.Details = map[string]any{"delta_ms": round(delta, 2), "noise_ms": round(st.Spread, 2),
			"gate_ms": round(d.gate(st.Base, st.Spread), 2)}
		f.Summary = fmt.Sprintf("%s of %s up %.1f ms to %.1f ms (%+.1f%%) against %.1f ms over the previous %s",
			f.Signal, f.Entity, delta, level, f.ChangePct, st.Base, fmtDuration(d.p.BaselineWindow))
		return f
	}
	f.Reason = reason
	if reason == ReasonBaselineAdapted {
		f.Summary = fmt.Sprintf("%s of %s has stayed at %.1f ms (baseline was %.1f ms) for %s: the new level is the baseline now",
			f.Signal, f.Entity, level, st.Base, fmtDuration(d.p.AdaptAfter))
	} else {
		f.Summary = fmt.Sprintf("%s of %s back to %.1f ms (baseline %.1f ms)", f.Signal, f.Entity, level, st.Base)
	}
	return f
}

func (d *levelShift) MarshalBinary() ([]byte, error) { return saveState(d.states) }

func (d *levelShift) UnmarshalBinary(b []byte) error {
	states := map[string]*levelState{}
	if err := loadState(b, &states, LatencyShiftName+" "+d.rule); err != nil {
		return err
	}
	d.states = states
	return nil
}
