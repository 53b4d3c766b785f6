// Package detectors holds the anomaly detectors. Each is a small type with
// one job: it reads the closed buckets of the series a rule selects and
// emits findings (firing, then resolved). Detectors keep their per-entity
// state inside and serialise it for checkpoints; they never read a clock.
package detectors

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
)

// Finding statuses.
const (
	Firing   = "firing"
	Resolved = "resolved"
)

// Finding is what a detector reports about one entity.
type Finding struct {
	Status   string
	Detector string
	Signal   string
	Entity   string
	// Start is when the anomaly began (the first anomalous bucket); End is
	// set on resolve (the first recovered bucket). At is the event time at
	// which the detector knew: the end of the bucket it just read.
	Start, End, At int64
	Observed       float64
	Baseline       float64
	BaselineMethod string
	ChangePct      float64
	Summary        string
	// Reason says why a resolve happened: "recovered", or
	// ReasonBaselineAdapted when a lasting new level became the baseline.
	Reason string
	// Confidence, on a firing finding, says how far past its threshold the
	// change is, from 0.5 (just at it) towards 1 (see confidence).
	Confidence float64
	// Unstable, on a firing finding, says the series keeps crossing its
	// bar (see flapHold): the alert goes out at severity info.
	Unstable bool
	Details  map[string]any
	Evidence []Evidence
}

// Unjudgeable is implemented by the detectors that know which series
// they cannot judge at their rule's threshold (too small, or too noisy,
// for any change to pass both the threshold and the noise bar, or usually
// so far off that the threshold is out of reach; for a rise, which has
// no ceiling, too noisy for a change of the threshold to pass). The
// pipeline reports them, so that a silent series is known to be
// unwatched rather than fine.
type Unjudgeable interface {
	// Unjudgeable returns "signal entity" of each such series, sorted.
	Unjudgeable() []string
}

// ReasonRecovered is the resolve reason of an alert whose series came back
// to its baseline. Detectors with more than one kind of resolve name it;
// the alert manager gives it to every other resolve.
const ReasonRecovered = "recovered"

// ReasonBaselineAdapted is the resolve reason of an alert whose new level
// lasted the rule's adapt_after and became the baseline: the change is
// still there, but it is the new normal, not an ongoing outage.
const ReasonBaselineAdapted = "baseline_adapted"

// ReasonRuleRemoved and ReasonRuleChanged are the resolve reasons of an
// alert firing when the rules were reloaded, or the service restarted
// with other rules, and whose rule was then gone, or bound another
// detector, or no longer watched the alert's series: nothing would ever
// judge it again, and an alert that nothing judges would stay firing, and
// its outage event open, for good. Whether the series recovered is not
// known.
const (
	ReasonRuleRemoved = "rule_removed"
	ReasonRuleChanged = "rule_changed"
)

// Grouped is implemented by detectors whose alerts name a group of the
// series they read (packet_loss: a transit, for the paths through it), so
// that an alert's entity is not one its rule's patterns match.
type Grouped interface {
	Grouped()
}

// Evidence is one bucket a detector looked at.
type Evidence struct {
	Time     int64
	Value    float64 // NaN when missing
	Baseline float64
}

// Detector evaluates the points of one closed bucket that its rule selects.
type Detector interface {
	// Bucket evaluates pts (in stable order) of closed bucket c and calls
	// emit for each finding, in a deterministic order.
	Bucket(c *aggregate.Closed, pts []aggregate.Point, emit func(Finding))
	// MarshalBinary and UnmarshalBinary checkpoint the detector's state.
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// Params is a detector's configuration as a rule gives it. The rules
// package decodes the rule's params into the value New returns, then calls
// Validate, then Build.
type Params interface {
	// Validate reports the first invalid setting as "field: reason".
	Validate() error
	// Build returns a detector for one rule.
	Build(rule string) Detector
}

var registry = map[string]func() Params{}

// Register makes a detector available to rules under name.
func Register(name string, newParams func() Params) {
	if _, dup := registry[name]; dup {
		panic("detectors: " + name + " registered twice")
	}
	registry[name] = newParams
}

// NewParams returns default params for the named detector.
func NewParams(name string) (Params, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown detector %q (known: %v)", name, Names())
	}
	return f(), nil
}

// Names lists the registered detectors.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Duration is a time.Duration that YAML writes as "10m".
type Duration time.Duration

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// readings is how many readings in a row, one every step, show that a
// condition held for d. Each reading spans what one measurement of the
// signal covers (its cadence: a round of active probing), or its step if
// that is shorter, and a run covers d from the start of its first reading
// to the end of its last: (n−1)·step + span ≥ d. At a series' own cadence
// that is buckets(step), as it always was. On an export thinned to a
// reading an hour of a signal measured every ten minutes, `for: 20m` is
// two readings, not one: a reading shows ten minutes of its hour, not
// twenty. Prometheus reads a `for` over sparse evaluations alike: pending
// at the first that finds the condition, firing at a later one.
func (d Duration) readings(step, cadence int64) int {
	span := step
	if cadence > 0 && cadence < step {
		span = cadence
	}
	if int64(d) <= span {
		return 1
	}
	return int((int64(d)-span+step-1)/step) + 1
}

// readingsOf is readings for series s: its spacing, its signal's cadence.
func (d Duration) readingsOf(s *aggregate.Series) int {
	return d.readings(s.Spacing(), s.Signal.Def().Cadence)
}

// buckets returns how many buckets of width w a duration spans, at least 1.
func (d Duration) buckets(w int64) int {
	n := int((int64(d) + w - 1) / w)
	return max(n, 1)
}

func changePct(v, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round((v-b)/b*1000) / 10
}

// adaptedFinding turns a resolve into one that says the new level, at
// ratio to the old baseline, has lasted after and is the baseline now.
func adaptedFinding(f Finding, c *aggregate.Closed, ratio float64, after Duration) Finding {
	f.End, f.Reason = c.End, ReasonBaselineAdapted
	f.Details = map[string]any{"level_ratio": round(ratio, 3)}
	f.Summary = fmt.Sprintf("%s of %s has stayed at %.0f%% of its old baseline for %s: the new level is the baseline now",
		f.Signal, f.Entity, 100*ratio, fmtDuration(after))
	return f
}

// confidence maps a change against the smallest change that fires (gate)
// to 1 − ½·(gate/change)²: 0.5 at the gate, 0.875 at twice it, towards 1
// beyond. A change as large as the series' noise allows never reaches 1.
func confidence(change, gate float64) float64 {
	if change <= 0 || gate <= 0 {
		return 0
	}
	c := 1 - 0.5*(gate/change)*(gate/change)
	return round(max(c, 0), 3)
}

// fmtDuration writes d for people: "2h", "20m", "1h30m".
func fmtDuration(d Duration) string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}
