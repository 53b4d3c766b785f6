package service

import (
	"net/http"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/pipeline"
)

// Version is the release this binary is, for outagewatch_build_info; the
// command sets it from its link-time version. Empty takes the module
// version Go stamped into the binary.
var Version string

// Metric names follow the Prometheus conventions: a counter ends in
// _total, a point in time in _timestamp_seconds (Unix seconds), a span of
// time in _seconds or _duration_seconds, and every series with labels is
// present from the start (at zero) for the labels the configuration
// knows, so that rate() and absent() work before the first event.
// docs/CHANGES.md lists the names this replaced.

// metrics are registered on a registry of the service's own, so that two
// services in one process (tests) do not collide.
type metrics struct {
	reg               *prometheus.Registry
	records           *prometheus.CounterVec
	decodeErrors      *prometheus.CounterVec
	deadLetters       *prometheus.CounterVec
	deadLetterErrors  prometheus.Counter
	lag               *prometheus.GaugeVec
	checkpoints       prometheus.Counter
	checkpointErrors  prometheus.Counter
	checkpointSeconds prometheus.Histogram
	commits           prometheus.Counter
	commitErrors      prometheus.Counter
	groupErrors       prometheus.Counter
	dispatchErrors    prometheus.Counter
}

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &metrics{reg: reg,
		records: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outagewatch_records_total",
			Help: "Kafka records consumed, per topic."}, []string{"topic"}),
		decodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outagewatch_decode_errors_total",
			Help: "Records that did not decode, per topic and reason."}, []string{"topic", "reason"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outagewatch_dead_letters_total",
			Help: "Records written to the dead-letter topic, per source topic and reason."}, []string{"topic", "reason"}),
		deadLetterErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "outagewatch_dead_letter_write_errors_total",
			Help: "Failed attempts to write to the dead-letter topic (retried)."}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outagewatch_consumer_lag",
			Help: "Records between the high watermark and the next offset to process."}, []string{"topic", "partition"}),
		checkpoints: prometheus.NewCounter(prometheus.CounterOpts{Name: "outagewatch_checkpoints_total",
			Help: "Checkpoints written."}),
		checkpointErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "outagewatch_checkpoint_errors_total",
			Help: "Checkpoints that failed (offsets stay uncommitted)."}),
		checkpointSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "outagewatch_checkpoint_duration_seconds",
			Help: "Time to write a checkpoint.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{Name: "outagewatch_offset_commits_total",
			Help: "Offset commits to the consumer group."}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "outagewatch_offset_commit_errors_total",
			Help: "Failed offset commits (the checkpoint still holds the offsets)."}),
		groupErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "outagewatch_consumer_group_errors_total",
			Help: "Consumer group join/sync errors (retried)."}),
		dispatchErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "outagewatch_alert_queue_errors_total",
			Help: "Alert events that could not be queued to a sink's outbox."}),
	}
	for _, c := range []prometheus.Collector{m.records, m.decodeErrors, m.deadLetters, m.deadLetterErrors, m.lag,
		m.checkpoints, m.checkpointErrors, m.checkpointSeconds, m.commits, m.commitErrors,
		m.groupErrors, m.dispatchErrors, BuildInfo(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}

// BuildInfo is outagewatch_build_info: 1, labelled with the version, the
// VCS revision and the Go version the binary was built from. Every
// process of outagewatch that serves /metrics registers it.
func BuildInfo() prometheus.Collector {
	v, rev := Version, ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, st := range info.Settings {
			if st.Key == "vcs.revision" {
				rev = st.Value
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outagewatch_build_info",
		Help: "1, labelled with the version, VCS revision and Go version of this binary."}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(v, rev, runtime.Version()).Set(1)
	return g
}

// ReplayMetrics serves the metrics of a finished replay (replay --serve):
// what the pipeline counted, its watermark and the build, in the names
// the live service uses.
func ReplayMetrics(p *pipeline.Pipeline) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&pipelineCollector{p}, BuildInfo(), collectors.NewGoCollector())
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

var (
	descBuckets  = prometheus.NewDesc("outagewatch_buckets_closed_total", "Event-time buckets closed and judged.", nil, nil)
	descFindings = prometheus.NewDesc("outagewatch_findings_total", "Detector findings.", nil, nil)
	descEvents   = prometheus.NewDesc("outagewatch_alert_events_total", "Alert events (firing and resolved) raised.", nil, nil)
	descActive   = prometheus.NewDesc("outagewatch_alerts_active", "Alerts firing now.", nil, nil)
	descSeries   = prometheus.NewDesc("outagewatch_series", "Series tracked.", nil, nil)
	// descUnjudgeable counts, by rule, the series no change can fire on:
	// watched by nobody, which an operator should know rather than trust
	// their silence.
	descUnjudgeable = prometheus.NewDesc("outagewatch_unjudgeable_series",
		"Series a rule cannot judge at its threshold: too small or too noisy for any change, even to zero, to pass its noise bar, or usually so far off that the threshold is out of reach.", []string{"rule"}, nil)
	descLate    = prometheus.NewDesc("outagewatch_late_observations_total", "Observations for buckets already closed (dropped).", nil, nil)
	descWM      = prometheus.NewDesc("outagewatch_watermark_timestamp_seconds", "Event-time watermark (Unix seconds).", nil, nil)
	descWMAge   = prometheus.NewDesc("outagewatch_watermark_age_seconds", "Wall time minus the event-time watermark: how far behind real time buckets close (+Inf while stage two holds partitions and none has closed a bucket).", nil, nil)
	descSent    = prometheus.NewDesc("outagewatch_alerts_sent_total", "Alert notifications delivered, per sink.", []string{"sink"}, nil)
	descFail    = prometheus.NewDesc("outagewatch_sink_failures_total", "Failed delivery attempts, per sink (retried).", []string{"sink"}, nil)
	descDropped = prometheus.NewDesc("outagewatch_sink_dropped_total", "Notifications given up on and parked in dead/, per sink.", []string{"sink"}, nil)
	descDepth   = prometheus.NewDesc("outagewatch_sink_queue_depth", "Notifications waiting in a sink's outbox.", []string{"sink"}, nil)
	descReady   = prometheus.NewDesc("outagewatch_ready", "1 when consuming (see /readyz).", nil, nil)
	descLastCP  = prometheus.NewDesc("outagewatch_last_checkpoint_timestamp_seconds", "Wall time of the last checkpoint (Unix seconds).", nil, nil)
)

// pipelineCollector reads a pipeline's counters at scrape time: the live
// service's and a served replay's.
type pipelineCollector struct{ p *pipeline.Pipeline }

func (c *pipelineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBuckets, descFindings, descEvents, descActive, descSeries, descLate, descWM, descUnjudgeable} {
		ch <- d
	}
}

func (c *pipelineCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.p.Stats()
	cm := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gm := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	cm(descBuckets, float64(st.BucketsClosed))
	cm(descFindings, float64(st.Findings))
	cm(descEvents, float64(st.Events))
	cm(descLate, float64(st.Late))
	gm(descActive, float64(len(c.p.ActiveAlerts())))
	gm(descSeries, float64(st.Series))
	gm(descWM, float64(st.Watermark)/1e9)
	for r, l := range st.Unjudgeable {
		ch <- prometheus.MustNewConstMetric(descUnjudgeable, prometheus.GaugeValue, float64(len(l)), r)
	}
}

// deadLetterCounters counts the dead letters written, by source topic and
// reason, and the failed writes.
func (m *metrics) deadLetterCounters() kafkaio.Counters {
	return kafkaio.Counters{
		Written: func(topic, reason string) { m.deadLetters.WithLabelValues(topic, reason).Inc() },
		Failed:  m.deadLetterErrors.Inc,
	}
}
