package detectors

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/series"
	"github.com/outagewatch/outagewatch/words"
)

// Names under which rules use the quality-shift detectors.
const (
	LatencyName   = "latency"
	BandwidthName = "bandwidth"
)

func init() {
	Register(LatencyName, func() Params { return DefaultLatency() })
	Register(BandwidthName, func() Params { return DefaultBandwidth() })
}

// Latency configures the latency-rise detector: a median or p95 RTT
// (latency_p50, latency_p95) above its usual level for the time of day.
//
// The baseline of a bucket is the median of the same bucket (smoothed over
// its neighbours) on the previous MaxDays days: evening congestion is in
// every evening's baseline, so it never reads as a rise. With fewer than
// MinDays such days the detector stays silent rather than guess.
//
// A rise must pass both a relative threshold and an absolute floor: 1 ms
// becoming 2 ms is +100 % but nobody's problem, while 22 ms becoming 40 ms
// (Spain in the Iberian blackout) is both. Recovery has hysteresis: the
// rise must fall under ResolveBelow (or under half the floor) for
// ResolveFor before the alert resolves. As with traffic_drop, anomalous
// buckets are kept out of the history (the baseline stands in for them)
// until a new level has lasted AdaptAfter; then the history is rescaled to
// it and a firing alert resolves as baseline_adapted.
type Latency struct {
	// Threshold is the rise over baseline that counts, as a fraction (0.3
	// = 30 % above baseline).
	Threshold float64 `yaml:"threshold"`
	// MinDeltaMs is the smallest rise in milliseconds that counts.
	MinDeltaMs float64 `yaml:"min_delta_ms"`
	// For is how long the shift must hold before the alert fires.
	For Duration `yaml:"for"`
	// ResolveBelow is the relative shift under which a bucket counts as
	// recovered, and ResolveFor how long recovery must last.
	ResolveBelow float64  `yaml:"resolve_below"`
	ResolveFor   Duration `yaml:"resolve_for"`
	// MinSamples is the fewest samples (Point.Count) a bucket needs to be
	// judged: the median of three pings is noise. Thinner buckets are
	// treated as no data.
	MinSamples int64 `yaml:"min_samples"`
	// MinDays and MaxDays bound the past days the baseline is taken from.
	MinDays int `yaml:"min_days"`
	MaxDays int `yaml:"max_days"`
	// AdaptAfter is how long a new level must last to become the baseline.
	AdaptAfter Duration `yaml:"adapt_after"`
}

// Bandwidth configures the bandwidth-fall detector (bandwidth_p50): as
// Latency, with the fall below baseline judged against a relative
// threshold and an absolute floor in Mbit/s.
type Bandwidth struct {
	// Threshold is the fall below baseline that counts (0.3 = 30 % below).
	Threshold float64 `yaml:"threshold"`
	// MinDeltaMbps is the smallest fall in Mbit/s that counts.
	MinDeltaMbps float64 `yaml:"min_delta_mbps"`
	// For is how long the shift must hold before the alert fires.
	For Duration `yaml:"for"`
	// ResolveBelow is the relative shift under which a bucket counts as
	// recovered, and ResolveFor how long recovery must last.
	ResolveBelow float64  `yaml:"resolve_below"`
	ResolveFor   Duration `yaml:"resolve_for"`
	// MinSamples is the fewest samples (Point.Count) a bucket needs to be
	// judged: the median of three pings is noise. Thinner buckets are
	// treated as no data.
	MinSamples int64 `yaml:"min_samples"`
	// MinDays and MaxDays bound the past days the baseline is taken from.
	MinDays int `yaml:"min_days"`
	MaxDays int `yaml:"max_days"`
	// AdaptAfter is how long a new level must last to become the baseline.
	AdaptAfter Duration `yaml:"adapt_after"`
}

// shiftParams are the settings both quality-shift detectors share (the
// rule structs spell them out, so that rules can check their keys).
type shiftParams struct {
	For          Duration
	ResolveBelow float64
	ResolveFor   Duration
	MinSamples   int64
	MinDays      int
	MaxDays      int
	AdaptAfter   Duration
}

func defaultShift() shiftParams {
	return shiftParams{For: Duration(10 * 60e9), ResolveBelow: 0.1, ResolveFor: Duration(30 * 60e9),
		MinSamples: 10, MinDays: 3, MaxDays: 7, AdaptAfter: Duration(3 * 24 * 3600e9)}
}

// DefaultLatency returns the defaults that ship.
func DefaultLatency() *Latency {
	p := &Latency{Threshold: 0.3, MinDeltaMs: 5}
	p.setShift(defaultShift())
	return p
}

// DefaultBandwidth returns the defaults that ship.
func DefaultBandwidth() *Bandwidth {
	p := &Bandwidth{Threshold: 0.3, MinDeltaMbps: 5}
	p.setShift(defaultShift())
	return p
}

func (p *Latency) shift() shiftParams {
	return shiftParams{p.For, p.ResolveBelow, p.ResolveFor, p.MinSamples, p.MinDays, p.MaxDays, p.AdaptAfter}
}

func (p *Latency) setShift(s shiftParams) {
	p.For, p.ResolveBelow, p.ResolveFor, p.MinSamples, p.MinDays, p.MaxDays, p.AdaptAfter =
		s.For, s.ResolveBelow, s.ResolveFor, s.MinSamples, s.MinDays, s.MaxDays, s.AdaptAfter
}

func (p *Bandwidth) shift() shiftParams {
	return shiftParams{p.For, p.ResolveBelow, p.ResolveFor, p.MinSamples, p.MinDays, p.MaxDays, p.AdaptAfter}
}

func (p *Bandwidth) setShift(s shiftParams) {
	p.For, p.ResolveBelow, p.ResolveFor, p.MinSamples, p.MinDays, p.MaxDays, p.AdaptAfter =
		s.For, s.ResolveBelow, s.ResolveFor, s.MinSamples, s.MinDays, s.MaxDays, s.AdaptAfter
}

func (p *shiftParams) validate(threshold float64) error {
	switch {
	case p.ResolveBelow < 0 || p.ResolveBelow >= threshold:
		return errors.New("resolve_below: must be at least 0 and below threshold")
	case p.For < 0 || p.ResolveFor < 0 || p.AdaptAfter < 0:
		return errors.New("for, resolve_for, adapt_after: must not be negative")
	case p.MinSamples < 1:
		return errors.New("min_samples: must be at least 1")
	case p.MinDays < 1:
		return errors.New("min_days: must be at least 1")
	case p.MaxDays < p.MinDays || p.MaxDays > 13:
		return errors.New("max_days: must be between min_days and 13 (the history holds two weeks)")
	}
	return nil
}

// Validate checks the settings.
func (p *Latency) Validate() error {
	switch {
	case !(p.Threshold > 0) || math.IsInf(p.Threshold, 0):
		return errors.New("threshold: must be a positive fraction (0.3 = 30 % above baseline)")
	case !(p.MinDeltaMs >= 0) || math.IsInf(p.MinDeltaMs, 0):
		return errors.New("min_delta_ms: must be a finite number of milliseconds, at least 0")
	}
	s := p.shift()
	return s.validate(p.Threshold)
}

// Validate checks the settings.
func (p *Bandwidth) Validate() error {
	switch {
	case !(p.Threshold > 0) || p.Threshold >= 1:
		return errors.New("threshold: must be a fraction between 0 and 1 (0.3 = 30 % below baseline)")
	case !(p.MinDeltaMbps >= 0) || math.IsInf(p.MinDeltaMbps, 0):
		return errors.New("min_delta_mbps: must be a finite number of Mbit/s, at least 0")
	}
	s := p.shift()
	return s.validate(p.Threshold)
}

// Build returns the detector.
func (p *Latency) Build(rule string) Detector {
	return &shiftDetector{name: LatencyName, unit: "ms", up: true, threshold: p.Threshold, minDelta: p.MinDeltaMs,
		p: p.shift(), rule: rule}
}

// Build returns the detector.
func (p *Bandwidth) Build(rule string) Detector {
	return &shiftDetector{name: BandwidthName, unit: "mbps", up: false, threshold: p.Threshold, minDelta: p.MinDeltaMbps,
		p: p.shift(), rule: rule}
}

type shiftDetector struct {
	name      string
	unit      string // of the delta in Details: "ms" or "mbps"
	up        bool   // a rise is bad (latency); else a fall (bandwidth)
	threshold float64
	minDelta  float64
	p         shiftParams
	rule      string
	states    seriesStates[shiftState]
}

// shiftState is one series' state; exported fields are checkpointed.
type shiftState struct {
	Run, Recovered int
	RunStart       int64
	Firing         bool
	FireStart      int64
	// Adapt follows the current run of shifted buckets.
	Adapt  levelRun
	Recent evidenceLog
}

func (d *shiftDetector) Bucket(c *aggregate.Closed, pts []aggregate.Point, emit func(Finding)) {
	w := c.End - c.Start
	for _, pt := range pts {
		st := d.states.get(pt.Series)
		step := pt.Series.Step()
		forN, resolveN := d.p.For.readingsOf(pt.Series), d.p.ResolveFor.buckets(step)
		if pt.Missing || pt.Count < d.p.MinSamples || math.IsNaN(pt.Value) {
			// No data, or too little to judge: hold the state.
			st.Recent.add(Evidence{Time: c.Start, Value: math.NaN()})
			continue
		}
		base, ok := d.baseline(&pt.Series.Hist, c.Start, w)
		if !ok {
			continue
		}
		st.Recent.add(Evidence{Time: c.Start, Value: pt.Value, Baseline: base})
		delta := pt.Value - base
		if !d.up {
			delta = -delta
		}
		rel := 0.0
		if base > 0 {
			rel = delta / base
		} else if delta > 0 {
			rel = math.Inf(1)
		}
		anomalous := rel >= d.threshold && delta >= d.minDelta
		recovered := rel < d.p.ResolveBelow || delta < d.minDelta/2
		// Keep shifted buckets out of the history until the level has
		// lasted AdaptAfter; then it is the baseline.
		switch {
		case anomalous || (st.Firing && !recovered):
			if ratio, adapted := st.Adapt.hold(&pt.Series.Hist, c.Start, pt.Value, base, step, d.p.AdaptAfter); adapted {
				st.Run, st.Recovered = 0, 0
				if st.Firing {
					st.Firing = false
					emit(adaptedFinding(d.finding(Resolved, c, pt, st, base, delta), c, ratio, d.p.AdaptAfter))
				}
				continue
			}
		case !st.Firing:
			st.Adapt.reset()
		}
		if anomalous {
			if st.Run == 0 {
				st.RunStart = c.Start
			}
			st.Run++
			st.Recovered = 0
			if !st.Firing && st.Run >= forN {
				st.Firing, st.FireStart = true, st.RunStart
				emit(d.finding(Firing, c, pt, st, base, delta))
			}
			continue
		}
		st.Run = 0
		if !st.Firing {
			continue
		}
		if recovered {
			st.Recovered++
		} else {
			st.Recovered = 0
		}
		if st.Recovered >= resolveN {
			st.Firing, st.Recovered = false, 0
			f := d.finding(Resolved, c, pt, st, base, delta)
			f.End, f.Reason = c.Start-int64(resolveN-1)*step, ReasonRecovered
			emit(f)
		}
	}
}

// baseline is the median of the smoothed same-time buckets of the previous
// days; ok is false with fewer than MinDays of them.
func (d *shiftDetector) baseline(r *series.Ring, t, w int64) (float64, bool) {
	var buf [13]float64
	vs := previousDaysByColumn(r, t, w, d.p.MaxDays, buf[:0])
	if len(vs) < d.p.MinDays {
		return 0, false
	}
	return median(vs), true
}

func (d *shiftDetector) finding(status string, c *aggregate.Closed, pt aggregate.Point, st *shiftState, base, delta float64) Finding {
	f := Finding{Status: status, Detector: d.name, Signal: pt.Series.Signal.String(), Entity: pt.Series.Entity,
		Start: st.FireStart, At: c.End, Observed: round(pt.Value, 3), Baseline: round(base, 3),
		BaselineMethod: "same_time_previous_days", ChangePct: changePct(pt.Value, base),
		Evidence: slices.Clone(st.Recent)}
	dir := "up"
	if !d.up {
		dir = "down"
	}
	if status == Firing {
		f.Details = map[string]any{"delta_" + d.unit: round(delta, 2), "samples": pt.Count}
		f.Summary = fmt.Sprintf("%s of %s %s %.1f %s (%+.1f%%) against the same time on previous days",
			f.Signal, f.Entity, dir, delta, words.Unit(d.unit), f.ChangePct)
	} else {
		f.Summary = fmt.Sprintf("%s of %s back to %.1f %s (baseline %.1f %s)", f.Signal, f.Entity, f.Observed, words.Unit(d.unit),
			f.Baseline, words.Unit(d.unit))
	}
	return f
}

func (d *shiftDetector) MarshalBinary() ([]byte, error) {
	return saveState(d.states.byName())
}

func (d *shiftDetector) UnmarshalBinary(b []byte) error {
	states := map[string]*shiftState{}
	if err := loadState(b, &states, d.name+" "+d.rule); err != nil {
		return err
	}
	d.states.restore(states)
	return nil
}
