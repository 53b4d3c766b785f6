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
	"github.com/outagewatch/outagewatch/chart"
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

// Bucket records one closed bucket.
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

// Members returns the series to chart for an alert on series k: k itself,
// or, for an alert on a group with no series of its own (packet loss
// through transit:1299, judged per site), the group's series
// (transit:1299@lis01, ...), at most four.
func (r *Recorder) Members(k string) []string {
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

const (
	// maxPoints bounds the points of a chart's line: more than the plot
	// has pixels only makes the page heavy.
	maxPoints = 500
	week      = 7 * 24 * time.Hour
)

// Chart returns the chart of series k (as "signal{entity}") around its
// alerts: from a day before the first to a day after the last resolve (or
// the end of the data), with the observed values, the baseline (the median
// of the same time on up to four previous weeks, or on the previous days
// when there is less than a week of history, so it runs through the whole
// outage), the same time last week, and each alert shaded from start to
// resolve. It returns nil if nothing was recorded for k.
func (r *Recorder) Chart(k string, evs []alerting.Event) *chart.Chart {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.series[k]
	if s == nil || len(s.values) == 0 || r.width <= 0 {
		return nil
	}
	w := r.width
	last0 := s.start + int64(len(s.values)-1)*w
	from, to := s.start, last0
	if len(evs) > 0 {
		first, last := evs[0].Start.UnixNano(), evs[0].At.UnixNano()
		for _, ev := range evs {
			first = min(first, ev.Start.UnixNano())
			last = max(last, ev.At.UnixNano())
			if ev.End != nil {
				last = max(last, ev.End.UnixNano())
			}
		}
		day := int64(24 * time.Hour)
		from = max(first-day, s.start)
		to = min(last+day, last0)
	}
	from -= (from - s.start) % w
	if to < from {
		to = from
	}
	n := int((to-from)/w) + 1
	signal, _, _ := strings.Cut(k, "{")
	unit, scale := alerting.ChartUnit(signal, time.Duration(w))
	observed := make([]float64, n)
	baseline := make([]float64, n)
	lastWeek := make([]float64, n)
	wk := int64(week)
	for i := range n {
		t := from + int64(i)*w
		observed[i] = r.at(s, t) * scale
		lastWeek[i] = r.at(s, t-wk) * scale
		baseline[i] = r.baselineAt(s, t) * scale
	}
	step := time.Duration(w)
	if n > maxPoints {
		f := (n + maxPoints - 1) / maxPoints
		observed, baseline, lastWeek = downsample(observed, f), downsample(baseline, f), downsample(lastWeek, f)
		step *= time.Duration(f)
	}
	c := &chart.Chart{
		Title: k, Start: time.Unix(0, from).UTC(), Step: step, Unit: unit,
		Series: []chart.Series{
			{Name: "observed", Values: observed, Color: chart.ColorObserved, Width: 2},
			{Name: "baseline (median, same time, previous weeks)", Values: baseline, Color: chart.ColorBaseline},
			{Name: "same time last week", Values: lastWeek, Color: chart.ColorLastWeek, Dash: true},
		},
	}
	var dets []string
	for _, ev := range evs {
		if d := ev.Labels["display"]; d != "" && !strings.Contains(c.Title, d) {
			c.Title = d + " · " + k
		}
		if !slices.Contains(dets, ev.Detector) {
			dets = append(dets, ev.Detector)
		}
		if ev.Status != alerting.Firing {
			continue
		}
		end := time.Time{}
		for _, r := range evs {
			if r.ID == ev.ID && r.Status == alerting.Resolved && r.End != nil && !r.End.Before(ev.Start) {
				end = *r.End
				break
			}
		}
		c.Spans = append(c.Spans, chart.Span{From: ev.Start, To: end})
	}
	if len(dets) > 0 {
		c.Title += " — " + strings.Join(dets, ", ")
	}
	return c
}

// at returns the value of s at t, NaN when unknown.
func (r *Recorder) at(s *recorded, t int64) float64 {
	if t < s.start {
		return math.NaN()
	}
	i := (t - s.start) / r.width
	if i >= int64(len(s.values)) {
		return math.NaN()
	}
	return s.values[i]
}

// baselineAt is the median of s at the same time on up to four previous
// weeks, or, with no week of history yet, on up to six previous days.
func (r *Recorder) baselineAt(s *recorded, t int64) float64 {
	var vs []float64
	for k := int64(1); k <= 4; k++ {
		if v := r.at(s, t-k*int64(week)); !math.IsNaN(v) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		for k := int64(1); k <= 6; k++ {
			if v := r.at(s, t-k*int64(24*time.Hour)); !math.IsNaN(v) {
				vs = append(vs, v)
			}
		}
	}
	if len(vs) == 0 {
		return math.NaN()
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// downsample averages runs of f values, ignoring NaN (a run of only NaN
// stays a gap).
func downsample(v []float64, f int) []float64 {
	out := make([]float64, 0, (len(v)+f-1)/f)
	for i := 0; i < len(v); i += f {
		sum, n := 0.0, 0
		for _, x := range v[i:min(i+f, len(v))] {
			if !math.IsNaN(x) {
				sum += x
				n++
			}
		}
		if n == 0 {
			out = append(out, math.NaN())
		} else {
			out = append(out, sum/float64(n))
		}
	}
	return out
}

// PNG writes the chart of an alert's series as a PNG image, twice the
// page size for sharp display: what a chat message attaches.
func (r *Recorder) PNG(w io.Writer, ev alerting.Event, related []alerting.Event) error {
	k := ev.Signal + "{" + ev.Entity + "}"
	ms := r.Members(k)
	if len(ms) == 0 {
		return fmt.Errorf("recorder: no data recorded for %s", k)
	}
	c := r.Chart(ms[0], append([]alerting.Event{ev}, related...))
	if c == nil {
		return fmt.Errorf("recorder: no data recorded for %s", k)
	}
	return c.PNG(w, 2)
}
