package service

import (
	"net/http"
	"time"

	"github.com/outagewatch/outagewatch/statuspage"
)

// statusPage serves the outage page on the operations listener. The
// alerts firing now come from the pipeline itself; ended ones are listed
// when a *statuspage.Store is among Options.Sinks (`outagewatch run` adds
// one), which the dispatcher feeds like any sink. Charts are drawn from
// the observed values kept for http.chart_history, or else from the
// evidence each alert carries.
func (s *Service) statusPage() http.Handler {
	var store *statuspage.Store
	for _, sk := range s.opts.Sinks {
		if st, ok := sk.(*statuspage.Store); ok {
			store = st
		}
	}
	if store == nil {
		store = statuspage.NewStore()
	}
	store.Active = s.p.ActiveAlerts
	var charts statuspage.Charts
	if s.charts != nil {
		charts = s.charts
	}
	return statuspage.NewHandler(liveSource{store, s}, charts, statuspage.Options{Title: "outagewatch", Links: s.cfg.HTTP.Links()})
}

// liveSource judges durations at the service's watermark, the time of the
// data, not the wall clock.
type liveSource struct {
	*statuspage.Store
	s *Service
}

func (l liveSource) Now() time.Time {
	if wm := l.s.p.Stats().Watermark; wm > 0 {
		return time.Unix(0, wm).UTC()
	}
	return l.Store.Now()
}
