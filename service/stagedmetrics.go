package service

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/rules"
)

// newStagedMetrics is the service's set of metrics (Go, process, records,
// decode errors, dead letters, lag, watermark, checkpoints, commits,
// sinks), with the pipeline's counters read from the stage-two tasks
// held here by stagedCollector.
func newStagedMetrics() *metrics { return newMetrics() }

// stagedCollector reads, at scrape time, the counters of the pipelines of
// the stage-two partitions held here, summed (the watermark is the least
// of theirs), and the dispatcher's, so the hot path pays nothing for them.
type stagedCollector struct {
	s *Staged
	// rules are the rules of set whose detectors say what they cannot
	// judge, found once a rules set: each has its
	// outagewatch_unjudgeable_series from the first scrape.
	mu    sync.Mutex
	set   *rules.Set
	rules []string
}

// judgingRules lists the rules in force whose detectors report the
// series they cannot judge (detectors.Unjudgeable).
func (c *stagedCollector) judgingRules() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if set := c.s.rules(); set != c.set {
		c.set, c.rules = set, nil
		for _, r := range set.Rules {
			if _, ok := r.Params.Build(r.Name).(detectors.Unjudgeable); ok {
				c.rules = append(c.rules, r.Name)
			}
		}
	}
	return c.rules
}

func (c *stagedCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBuckets, descFindings, descEvents, descActive, descSeries, descLate, descWM, descWMAge,
		descSent, descFail, descDropped, descDepth, descReady, descLastCP, descUnjudgeable} {
		ch <- d
	}
}

func (c *stagedCollector) Collect(ch chan<- prometheus.Metric) {
	cm := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gm := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	var buckets, findings, events, late, active, series, wm int64
	unjudgeable := map[string]int{}
	for _, r := range c.judgingRules() {
		unjudgeable[r] = 0
	}
	held := c.s.status.held()
	for _, p := range held {
		st := p.Stats()
		for r, l := range st.Unjudgeable {
			unjudgeable[r] += len(l)
		}
		buckets += st.BucketsClosed
		findings += st.Findings
		events += st.Events
		late += st.Late
		series += int64(st.Series)
		active += int64(len(p.ActiveAlerts()))
		if st.Watermark > 0 && (wm == 0 || st.Watermark < wm) {
			wm = st.Watermark
		}
	}
	cm(descBuckets, float64(buckets))
	cm(descFindings, float64(findings))
	cm(descEvents, float64(events))
	cm(descLate, float64(late))
	gm(descActive, float64(active))
	gm(descSeries, float64(series))
	gm(descWM, float64(wm)/1e9)
	// The age is read now, from the watermark just reported, not kept up
	// by the stage-two loop: a loop held up (by brokers gone, say) would
	// leave it stale, and two readings of one scrape would disagree.
	switch {
	case wm > 0:
		gm(descWMAge, time.Since(time.Unix(0, wm)).Seconds())
	case c.s.two:
		// No bucket closed here yet: as stale as can be, not 0 (fresh).
		gm(descWMAge, math.Inf(1))
	}
	for r, n := range unjudgeable {
		gm(descUnjudgeable, float64(n), r)
	}
	if c.s.disp != nil {
		for _, ss := range c.s.disp.Stats() {
			cm(descSent, float64(ss.Sent), ss.Sink)
			cm(descFail, float64(ss.Failures), ss.Sink)
			cm(descDropped, float64(ss.Dropped), ss.Sink)
			gm(descDepth, float64(ss.QueueDepth), ss.Sink)
		}
	}
	ready := 0.0
	if ok, _ := c.s.Ready(); ok {
		ready = 1
	}
	gm(descReady, ready)
	gm(descLastCP, float64(c.s.status.lastCPWall.Load())/1e9)
}

// observeCheckpoint counts a stage-two checkpoint round as the plain
// service counts its checkpoints.
func (st *stagedStatus) observeCheckpoint(start time.Time, failed bool) {
	if failed {
		st.met.checkpointErrors.Inc()
		return
	}
	st.met.checkpoints.Inc()
	st.met.checkpointSeconds.Observe(time.Since(start).Seconds())
	st.lastCPWall.Store(time.Now().UnixNano())
}
