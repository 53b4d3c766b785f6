package service

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/pipeline"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// stagedStatus is what the stages' loops publish for the endpoints.
type stagedStatus struct {
	reg *prometheus.Registry
	met *metrics
	// lastCPWall is the wall time of the last stage-two checkpoint.
	lastCPWall atomic.Int64
	held1      prometheus.Gauge
	held2      prometheus.Gauge
	stalled    prometheus.Gauge
	assigned   [2]atomic.Bool
	// why names the stage-two partitions whose buckets wait on sources
	// that stopped flushing; nil when none.
	why atomic.Pointer[string]
	// unrestoredWhy names the stage-two partitions assigned here whose
	// state restored from no copy; nil when none.
	unrestoredWhy atomic.Pointer[string]
	// broker says why the brokers did not answer the last probe; nil
	// when they did.
	broker          atomic.Pointer[string]
	unrestored      prometheus.Gauge
	queued          prometheus.Gauge
	restoreFailures prometheus.Counter
	// reloadOK and reloadAt are the outcome of the last rules reload and
	// the wall time of the last that succeeded, as Prometheus reports its
	// own (prometheus_config_last_reload_successful).
	reloadOK, reloadAt prometheus.Gauge
	// pipes are the pipelines of the stage-two partitions held here, by
	// partition, as of the last assignment: what the alert API reads.
	pipes atomic.Pointer[[]*pipeline.Pipeline]
}

func newStagedStatus() *stagedStatus {
	met := newStagedMetrics()
	st := &stagedStatus{reg: met.reg, met: met,
		held1: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outagewatch_stage1_partitions",
			Help: "Input partitions this instance's stage one holds."}),
		held2: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outagewatch_stage2_partitions",
			Help: "Internal-topic partitions this instance's stage two holds."}),
		stalled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outagewatch_stage2_partitions_held_by_sources",
			Help: "Stage-two partitions whose buckets wait on stage-one sources that stopped flushing while others went on."}),
	}
	st.unrestored = prometheus.NewGauge(prometheus.GaugeOpts{Name: "outagewatch_stage2_partitions_unrestored",
		Help: "Stage-two partitions assigned here whose state no copy (cache, changelog) restored; they are not read."})
	st.restoreFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "outagewatch_stage2_restore_failures_total",
		Help: "Attempts to restore a stage-two partition's state that found no good copy (retried every checkpoint interval)."})
	st.queued = prometheus.NewGauge(prometheus.GaugeOpts{Name: "outagewatch_stage1_queued_records",
		Help: "Input records stage one holds until the routing table reaches their bucket (bounded per partition by kafka.max_queued_records)."})
	st.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{Name: "outagewatch_rules_last_reload_successful",
		Help: "Whether the last rules reload (SIGHUP) succeeded: 1, or 0 while the rules in force are older than the files."})
	st.reloadAt = prometheus.NewGauge(prometheus.GaugeOpts{Name: "outagewatch_rules_last_reload_success_timestamp_seconds",
		Help: "Wall time of the last rules load that succeeded, at start or on SIGHUP (Unix seconds)."})
	st.reloadOK.Set(1)
	st.reloadAt.SetToCurrentTime()
	st.reg.MustRegister(st.held1, st.held2, st.stalled, st.unrestored, st.restoreFailures, st.queued, st.reloadOK, st.reloadAt)
	return st
}

// rulesReload records the outcome of a rules reload.
func (st *stagedStatus) rulesReload(ok bool) {
	if !ok {
		st.reloadOK.Set(0)
		return
	}
	st.reloadOK.Set(1)
	st.reloadAt.SetToCurrentTime()
}

// setBroker records the outcome of a request to the brokers.
func (st *stagedStatus) setBroker(err error) {
	if err == nil {
		st.broker.Store(nil)
		return
	}
	why := kafkaio.Trouble(err)
	st.broker.Store(&why)
}

// held returns the pipelines of the stage-two partitions held here.
func (st *stagedStatus) held() []*pipeline.Pipeline {
	if p := st.pipes.Load(); p != nil {
		return *p
	}
	return nil
}

// listen serves /metrics, /healthz, /readyz and the alert and event API
// of a staged process.
func (s *Staged) listen() (*http.Server, error) {
	ln := s.opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.HTTP.Listen); err != nil {
			return nil, fmt.Errorf("http listen %s: %w", s.cfg.HTTP.Listen, err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.status.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if ok, why := s.Ready(); !ok {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// The alert and event API of the whole deployment, from the view
	// every stage-two instance reads; the watermark is that of the
	// partitions held here, the data time this instance has.
	mux.HandleFunc("GET /api/v1/alerts", func(w http.ResponseWriter, r *http.Request) {
		body := struct {
			Alerts    []alerting.Event `json:"alerts"`
			Watermark *time.Time       `json:"watermark"`
		}{Alerts: []alerting.Event{}}
		if s.view != nil {
			body.Alerts = s.view.ActiveAlerts()
		}
		var wm int64
		for _, p := range s.status.held() {
			if w := p.Stats().Watermark; w > 0 && (wm == 0 || w < wm) {
				wm = w
			}
		}
		if wm > 0 {
			t := time.Unix(0, wm).UTC()
			body.Watermark = &t
		}
		writeJSON(w, http.StatusOK, body)
	})
	mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
		evs := []alerting.Event{}
		if s.view != nil {
			evs = s.view.ActiveEvents()
		}
		writeJSON(w, http.StatusOK, struct {
			Events []alerting.Event `json:"events"`
		}{evs})
	})
	mux.HandleFunc("GET /api/v1/events/{id}", func(w http.ResponseWriter, r *http.Request) {
		if s.view != nil {
			if ev, ok := s.view.Event(r.PathValue("id")); ok {
				writeJSON(w, http.StatusOK, ev)
				return
			}
		}
		http.Error(w, "no such event", http.StatusNotFound)
	})
	s.apiRoutes(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			s.log.Error("http server", "err", err)
		}
	}()
	s.log.Info("operations endpoints", "addr", ln.Addr().String())
	return srv, nil
}

// Ready reports whether the brokers answer, each stage run here holds a
// group assignment, every stage-two partition held here is restored, and
// no stage-two partition waits on a source that stopped flushing.
func (s *Staged) Ready() (bool, string) {
	// The brokers first: without them no assignment comes, and that is
	// the reason to give.
	if why := s.status.broker.Load(); why != nil {
		return false, *why
	}
	var missing []string
	if s.one && !s.status.assigned[0].Load() {
		missing = append(missing, "stage one")
	}
	if s.two && !s.status.assigned[1].Load() {
		missing = append(missing, "stage two")
	}
	if len(missing) > 0 {
		return false, "no consumer group assignment yet: " + strings.Join(missing, ", ")
	}
	if why := s.status.unrestoredWhy.Load(); why != nil {
		return false, *why
	}
	if why := s.status.why.Load(); why != nil {
		return false, *why
	}
	return true, "ok"
}
