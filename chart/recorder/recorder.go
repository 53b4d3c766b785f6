// Package recorder keeps the observed value of every series in its recent
// closed buckets and draws the chart of an alert from them: the live
// outage page, the chat attachments of alerts and the replay's HTML report
// all draw the same chart from the same record, so the live service needs
// no part of replay to show one.
package recorder

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
)

// Recorder keeps the observed value of every series in every closed
// bucket, for the charts. Pass its Bucket method as the pipeline's Tap. It
// is safe for concurrent use: the live status page reads it while the
// pipeline writes.
type Recorder struct {
	mu     sync.RWMutex
	width  int64
	series map[string]*recorded
	// Keep, when set, bounds the buckets kept per series (a live service
	// runs for months; a chart needs the last few weeks).
	Keep int
}

type recorded struct {
	start  int64 // first bucket
	values []float64
}

// New returns an empty recorder.
func New() *Recorder { return &Recorder{series: map[string]*recorded{}} }

// Bucket records one closed bucket. A bucket recorded before is recorded
// again in place: a live stage-two task restored from an older snapshot
// closes again buckets this recorder already holds, and appending them
// would shift every later value of the series.
func (r *Recorder) Bucket(c *aggregate.Closed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.width = c.End - c.Start
	for _, p := range c.Points {
		k := p.Series.Key.String()
		s := r.series[k]
		if s == nil {
			s = &recorded{start: c.Start}
			r.series[k] = s
		}
		if c.Start < s.start {
			continue // before what is kept
		}
		if i := (c.Start - s.start) / r.width; i < int64(len(s.values)) {
			s.values[i] = p.Value
			continue
		}
		for i := int64(len(s.values)); s.start+i*r.width < c.Start; i++ {
			s.values = append(s.values, math.NaN())
		}
		s.values = append(s.values, p.Value) // NaN when missing
		if r.Keep > 0 && len(s.values) > r.Keep+r.Keep/8 {
			drop := len(s.values) - r.Keep
			s.values = append(s.values[:0], s.values[drop:]...)
			s.start += int64(drop) * r.width
		}
	}
}

// Members returns the series to chart for an alert on series k: see
// members.
func (r *Recorder) Members(k string) []string { return r.members(k) }

// members returns the series to chart for an alert on series k: k itself,
// or, for an alert on a group with no series of its own (packet loss
// through transit:1299, judged per site), the group's series
// (transit:1299@lis01, ...), at most four.
func (r *Recorder) members(k string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if _, ok := r.series[k]; ok {
		return []string{k}
	}
	prefix := strings.TrimSuffix(k, "}") + "@"
	var out []string
	for m := range r.series {
		if strings.HasPrefix(m, prefix) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), 4)]
}

// get returns the value of series k in the bucket starting at t.
func (r *Recorder) get(k string, t int64) (float64, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.series[k]
	if s == nil || t < s.start {
		return 0, false
	}
	i := (t - s.start) / r.width
	if i >= int64(len(s.values)) || math.IsNaN(s.values[i]) {
		return 0, false
	}
	return s.values[i], true
}

// Limits of a chart.
const (
	// maxPoints bounds the points of a chart's line: more than the plot
	// has pixels only makes the page heavy.
	maxPoints = 500
	week      = 7 * 24 * time.Hour
)

// PNG writes the chart of an alert's series as a PNG image, twice the
// page size for sharp display: what a chat message attaches.
func (r *Recorder) PNG(w io.Writer, ev alerting.Event, related []alerting.Event) error {
	k := ev.Signal + "{" + ev.Entity + "}"
	ms := r.members(k)
	if len(ms) == 0 {
		return fmt.Errorf("recorder: no data recorded for %s", k)
	}
	c := r.Chart(ms[0], append([]alerting.Event{ev}, related...))
	if c == nil {
		return fmt.Errorf("recorder: no data recorded for %s", k)
	}
	return c.PNG(w, 2)
}
