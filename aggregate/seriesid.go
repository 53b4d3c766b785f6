package aggregate

import "github.com/outagewatch/outagewatch/obs"

var _ obs.SeriesSink = (*Aggregator)(nil)

// SeriesID implements obs.SeriesSink: the number is the series' own (ID).
// A series is numbered only once it exists, so that a late first
// observation, which Observe drops, creates no series here either.
func (a *Aggregator) SeriesID(sig obs.Signal, entity string) (int32, bool) {
	if sig.Def().Agg == obs.Custom {
		return 0, false
	}
	if a.cfg.StageOne {
		p := a.parts.get(sig, entity)
		if p == nil {
			return 0, false
		}
		a.partByID = setAt(a.partByID, p.id, p)
		return p.id, true
	}
	s := a.series.get(sig, entity)
	if s == nil {
		return 0, false
	}
	a.byID = setAt(a.byID, s.id, s)
	return s.id, true
}

// setAt sets l[i] to v, growing l as needed.
func setAt[T any](l []T, i int32, v T) []T {
	if int(i) >= len(l) {
		l = append(l, make([]T, int(i)+1-len(l))...)
	}
	l[i] = v
	return l
}

// ObserveSeries implements obs.SeriesSink.
func (a *Aggregator) ObserveSeries(id int32, t int64, v float64) {
	a.stats.Observations++
	if t < a.closedTo {
		a.stats.Late++
		return
	}
	if a.cfg.StageOne {
		a.addPart(a.partByID[id], t, v, nil, true)
		return
	}
	s := a.byID[id]
	a.add(&s.window, s.Signal, s.Hist.Width(), t, v, nil, true)
}
