package detectors

import (
	"slices"

	"github.com/outagewatch/outagewatch/aggregate"
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
