package planhook

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outagewatch/outagewatch/trafficmanager"
)

// Metrics are the Traffic Manager's gauges and counters. The threshold
// gauges say, per data center, which maximum the planner used, whether a
// learnt one was refused for a poor fit and whether a learnt one forced
// the target down, so a dashboard shows a learner that quietly fell back
// or shed harder. Withdrawals are read from the plan in force, the one
// the webhook, Kafka topic and routes were given.
type Metrics struct {
	maxThreshold *prometheus.GaugeVec
	target       *prometheus.GaugeVec
	fallback     *prometheus.GaugeVec
	reconciled   *prometheus.GaugeVec
	util         *prometheus.GaugeVec
	stale        *prometheus.GaugeVec
	waiting      *prometheus.GaugeVec
	heldBack     *prometheus.GaugeVec
	withdrawnLoc *prometheus.GaugeVec
	changes      *prometheus.CounterVec
	failures     prometheus.Counter
	withdrawn    prometheus.Gauge
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	g := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		maxThreshold: g("outagewatch_tm_max_threshold", "CPU utilisation above which a data center moves load, as used by the last plan; source is learnt or static.", "unit", "source"),
		target:       g("outagewatch_tm_target_threshold", "CPU utilisation a data center sheds down to, as used by the last plan (scaled down when a learnt maximum is at or below the static target).", "unit"),
		fallback:     g("outagewatch_tm_threshold_fallback", "1 when the learnt maximum threshold was not used (poor fit) and the static one was.", "unit"),
		reconciled:   g("outagewatch_tm_threshold_reconciled", "1 when a learnt maximum at or below the static target scaled the target and acceptable level down.", "unit"),
		util:         g("outagewatch_tm_planned_utilisation", "CPU utilisation each unit is predicted to run at once the last plan is applied.", "unit"),
		stale:        g("outagewatch_tm_stale", "1 when a unit's load report is older than the configured age and the planner treats it as unknown.", "unit"),
		waiting:      g("outagewatch_tm_paced_waiting", "1 when a unit's next paced step waits for its load reports to show the last one.", "unit"),
		heldBack:     g("outagewatch_tm_withdrawal_held_back", "1 when a location would be withdrawn but the limit of locations withdrawn at once is reached.", "location"),
		withdrawnLoc: g("outagewatch_tm_withdrawn", "1 when the plan in force withdraws the location's anycast routes.", "location"),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outagewatch_tm_changes_total",
			Help: "Plan changes emitted, by operation (move, revert, withdraw, announce)."}, []string{"op"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "outagewatch_tm_publish_failures_total",
			Help: "Ticks whose plan a publisher refused; the plan in force stays the previous one and is retried."}),
		withdrawn: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outagewatch_tm_withdrawn_locations",
			Help: "Locations whose anycast routes the plan in force withdraws."}),
	}
	reg.MustRegister(m.maxThreshold, m.target, m.fallback, m.reconciled, m.util, m.stale, m.waiting, m.heldBack, m.withdrawnLoc, m.changes, m.failures, m.withdrawn)
	return m
}

func (m *Metrics) failed() {
	if m != nil {
		m.failures.Inc()
	}
}

// observe records the thresholds and predictions of r and the withdrawals
// of the plan in force; changes are those published.
func (m *Metrics) observe(in trafficmanager.Input, r trafficmanager.Result, inForce trafficmanager.State, changes []trafficmanager.Change) {
	if m == nil {
		return
	}
	set := func(ss []string) map[string]bool {
		out := map[string]bool{}
		for _, s := range ss {
			out[s] = true
		}
		return out
	}
	stale, waiting, held, gone := set(r.Stale), set(r.Waiting), set(r.HeldBack), set(inForce.Withdrawn)
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	locs := map[string]bool{}
	for i := range in.Units {
		u := &in.Units[i]
		id := u.ID()
		locs[u.Location] = true
		lim, rec := u.Limits()
		m.maxThreshold.DeletePartialMatch(prometheus.Labels{"unit": id})
		fb := 0.0
		switch {
		case u.Learnt != nil && u.Learnt.OK:
			m.maxThreshold.WithLabelValues(id, "learnt").Set(lim.Max)
		default:
			m.maxThreshold.WithLabelValues(id, "static").Set(lim.Max)
			if u.Learnt != nil {
				fb = 1
			}
		}
		m.target.WithLabelValues(id).Set(lim.Target)
		m.fallback.WithLabelValues(id).Set(fb)
		m.reconciled.WithLabelValues(id).Set(b(rec))
		m.stale.WithLabelValues(id).Set(b(stale[id]))
		m.waiting.WithLabelValues(id).Set(b(waiting[id]))
		if v, ok := r.Util[id]; ok {
			m.util.WithLabelValues(id).Set(v)
		} else {
			m.util.DeleteLabelValues(id)
		}
	}
	for l := range locs {
		m.heldBack.WithLabelValues(l).Set(b(held[l]))
		m.withdrawnLoc.WithLabelValues(l).Set(b(gone[l]))
	}
	for _, c := range changes {
		m.changes.WithLabelValues(c.Op).Inc()
	}
	m.withdrawn.Set(float64(len(inForce.Withdrawn)))
}
