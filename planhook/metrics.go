package planhook

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outagewatch/outagewatch/trafficmanager"
)

// Metrics are the Traffic Manager's gauges and counters. The threshold
// gauges say, per data center, which maximum the planner used and whether
// a learnt one was refused for a poor fit, so a dashboard shows a learner
// that quietly fell back.
type Metrics struct {
	maxThreshold *prometheus.GaugeVec
	fallback     *prometheus.GaugeVec
	util         *prometheus.GaugeVec
	changes      *prometheus.CounterVec
	withdrawn    prometheus.Gauge
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		maxThreshold: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outagewatch_tm_max_threshold",
			Help: "CPU utilisation above which a data center moves load, as used by the last plan; source is learnt or static."}, []string{"unit", "source"}),
		fallback: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outagewatch_tm_threshold_fallback",
			Help: "1 when the learnt maximum threshold was not used (poor fit) and the static one was."}, []string{"unit"}),
		util: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outagewatch_tm_planned_utilisation",
			Help: "CPU utilisation each unit is predicted to run at once the last plan is applied."}, []string{"unit"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outagewatch_tm_changes_total",
			Help: "Plan changes emitted, by operation (move, revert, withdraw, announce)."}, []string{"op"}),
		withdrawn: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outagewatch_tm_withdrawn_locations",
			Help: "Locations whose anycast routes the plan withdraws."}),
	}
	reg.MustRegister(m.maxThreshold, m.fallback, m.util, m.changes, m.withdrawn)
	return m
}

func (m *Metrics) observe(in trafficmanager.Input, r trafficmanager.Result) {
	if m == nil {
		return
	}
	for i := range in.Units {
		u := &in.Units[i]
		id := u.ID()
		m.maxThreshold.DeletePartialMatch(prometheus.Labels{"unit": id})
		fb := 0.0
		switch {
		case u.Learnt != nil && u.Learnt.OK:
			m.maxThreshold.WithLabelValues(id, "learnt").Set(u.Learnt.Max)
		default:
			m.maxThreshold.WithLabelValues(id, "static").Set(u.Thresholds.Max)
			if u.Learnt != nil {
				fb = 1
			}
		}
		m.fallback.WithLabelValues(id).Set(fb)
		if v, ok := r.Util[id]; ok {
			m.util.WithLabelValues(id).Set(v)
		} else {
			m.util.DeleteLabelValues(id)
		}
	}
	for _, c := range r.Changes {
		m.changes.WithLabelValues(c.Op).Inc()
	}
	m.withdrawn.Set(float64(len(r.State.Withdrawn)))
}
