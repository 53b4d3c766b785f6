package detectors

import (
	"math"
	"slices"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
)

// Why a series is unjudgeable, or that it is not.
const (
	judgeableNow uint8 = iota
	unjudgeableCount
	unjudgeableNoise
	// unjudgeableLevel: the series' usual level leaves the rule's
	// threshold out of reach.
	unjudgeableLevel
)

// tooFewToFall reports whether a count at level is too small for any
// fall, even to 0, to pass sigmas times its own sampling noise (√level,
// or √(level/k) for the mean of k counts): a series no drop of which
// can be told from chance, unjudgeable as a count (unjudgeableCount).
// A count back above that is judgeable again.
func tooFewToFall(def *obs.SignalDef, level, sigmas float64) bool {
	return def.Poisson && (level <= 0 || level < sigmas*math.Sqrt(def.SamplingVar(level)))
}

// unjudged holds what a rule cannot judge at its threshold (a series, or
// a transit by name), and why, as of its last judged bucket: what a
// detector's Unjudgeable reports.
type unjudged[K comparable] map[K]uint8

// set records whether k can be judged, and if not why, from what this
// bucket showed of it.
func (u *unjudged[K]) set(k K, why uint8) {
	switch {
	case why == judgeableNow:
		delete(*u, k)
	case *u == nil:
		*u = unjudged[K]{k: why}
	default:
		(*u)[k] = why
	}
}

// seriesNames is the series of u as "signal entity", sorted.
func seriesNames(u unjudged[*aggregate.Series]) []string {
	out := make([]string, 0, len(u))
	for s := range u {
		out = append(out, s.Signal.String()+" "+s.Entity)
	}
	slices.Sort(out)
	return out
}
