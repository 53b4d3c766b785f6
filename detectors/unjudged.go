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
)

// unjudged holds the series a rule cannot judge at its threshold, and
// why, as of each one's last judged bucket: what a detector's
// Unjudgeable reports.
type unjudged map[*aggregate.Series]uint8

// set records whether s can be judged, and if not why, from what this
// bucket showed of it.
func (u *unjudged) set(s *aggregate.Series, why uint8) {
	switch {
	case why == judgeableNow:
		delete(*u, s)
	case *u == nil:
		*u = unjudged{s: why}
	default:
		(*u)[s] = why
	}
}

// list is the series as "signal entity", sorted.
func (u unjudged) list() []string {
	out := make([]string, 0, len(u))
	for s := range u {
		out = append(out, s.Signal.String()+" "+s.Entity)
	}
	slices.Sort(out)
	return out
}
