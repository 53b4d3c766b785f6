// Package report writes a replay's alerts and the series behind them as one
// self-contained HTML page: a chart per alerted series with the alert's span
// shaded, so an operator can see at a glance what fired, when, and against
// what baseline. No script and no external asset: the page opens offline.
package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
)

// Recorder keeps the observed value of every series in every closed
// bucket, for the charts. Pass its Bucket method as the pipeline's Tap.
type Recorder struct {
	width  int64
	series map[string]*recorded
}

type recorded struct {
	start  int64 // first bucket
	values []float64
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{series: map[string]*recorded{}} }

// Bucket records one closed bucket.
func (r *Recorder) Bucket(c *aggregate.Closed) {
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
	}
}

// members returns the series to chart for an alert on series k: k itself,
// or, for an alert on a group with no series of its own (packet loss
// through transit:1299, judged per site), the group's series
// (transit:1299@lis01, ...), at most four.
func (r *Recorder) members(k string) []string {
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

// Chart geometry, in SVG user units.
const (
	width, height = 900.0, 180.0
	padL, padB    = 70.0, 22.0
	maxCharts     = 60
)

// Write renders title, the events (in emission order) and a chart for every
// series that raised one, over the span from a day before the first alert to
// a day after the last resolve.
func Write(w io.Writer, title string, events []alerting.Event, rec *Recorder) error {
	bySeries := map[string][]alerting.Event{}
	var order []string
	for _, ev := range events {
		k := ev.Signal + "{" + ev.Entity + "}"
		if _, seen := bySeries[k]; !seen {
			order = append(order, k)
		}
		bySeries[k] = append(bySeries[k], ev)
	}
	page := pageData{Title: title, Events: rows(events), Generated: len(events)}
	for _, k := range order {
		for _, m := range rec.members(k) {
			if len(page.Charts) < maxCharts {
				page.Charts = append(page.Charts, chart(rec, m, bySeries[k]))
			}
		}
	}
	return tmpl.Execute(w, page)
}

type pageData struct {
	Title     string
	Events    []eventRow
	Charts    []chartData
	Generated int
}

type eventRow struct {
	At, Status, Detector, Signal, Entity, Start, End, Change, Summary string
}

func rows(events []alerting.Event) []eventRow {
	out := make([]eventRow, 0, len(events))
	for _, ev := range events {
		end := ""
		if ev.End != nil {
			end = ev.End.Format("2006-01-02 15:04")
		}
		out = append(out, eventRow{At: ev.At.Format("2006-01-02 15:04"), Status: ev.Status, Detector: ev.Detector,
			Signal: ev.Signal, Entity: ev.Entity, Start: ev.Start.Format("2006-01-02 15:04"), End: end,
			Change: fmt.Sprintf("%+.1f %%", ev.ChangePct), Summary: ev.Summary})
	}
	return out
}

type chartData struct {
	Title    string
	Path     string // the series, gaps (no data) broken
	Baseline string // the detector's baseline over the evidence it kept
	Spans    []span
	Ticks    []tick
	YTicks   []tick
	W, H     float64
}

type span struct{ X, W float64 }

type tick struct {
	X, Y  float64
	Label string
}

// chart draws one series around its alerts.
func chart(rec *Recorder, k string, evs []alerting.Event) chartData {
	w := rec.width
	s := rec.series[k]
	last0 := s.start + int64(len(s.values)-1)*w
	first, last := evs[0].Start.UnixNano(), evs[0].At.UnixNano()
	for _, ev := range evs {
		first = min(first, ev.Start.UnixNano())
		last = max(last, ev.At.UnixNano())
		if ev.End != nil {
			last = max(last, ev.End.UnixNano())
		}
	}
	day := int64(24 * time.Hour)
	from := max(first-day, s.start)
	to := min(last+day, last0)
	from -= from % w
	if to <= from {
		to = from + w
	}
	top := 0.0
	for t := from; t <= to; t += w {
		if v, ok := rec.get(k, t); ok {
			top = max(top, v)
		}
	}
	for _, ev := range evs {
		for _, p := range ev.Evidence {
			top = max(top, p.Baseline)
		}
	}
	if top <= 0 {
		top = 1
	}
	top *= 1.1 // headroom, so the line never runs along the frame
	x := func(t int64) float64 { return padL + (width-padL)*float64(t-from)/float64(to-from) }
	y := func(v float64) float64 { return (height - padB) * (1 - v/top) }

	var path strings.Builder
	pen := false
	for t := from; t <= to; t += w {
		v, ok := rec.get(k, t)
		if !ok {
			pen = false
			continue
		}
		cmd := "L"
		if !pen {
			cmd = "M"
		}
		fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x(t), y(v))
		pen = true
	}
	var base strings.Builder
	var spans []span
	for _, ev := range evs {
		if ev.Status == alerting.Firing {
			end := to
			for _, r := range evs {
				if r.ID == ev.ID && r.Status == alerting.Resolved && r.End != nil && !r.End.Before(ev.Start) {
					end = min(end, r.End.UnixNano())
				}
			}
			x0 := x(max(ev.Start.UnixNano(), from))
			spans = append(spans, span{X: x0, W: math.Max(1, x(end)-x0)})
		}
		drawn := false
		for _, p := range ev.Evidence {
			if t := p.Time.UnixNano(); t >= from && t <= to {
				cmd := "L"
				if !drawn {
					cmd = "M"
				}
				fmt.Fprintf(&base, "%s%.1f %.1f ", cmd, x(t), y(p.Baseline))
				drawn = true
			}
		}
	}
	var ticks []tick
	for t := from - from%day + day; t < to; t += day {
		ticks = append(ticks, tick{X: x(t), Label: time.Unix(0, t).UTC().Format("Jan 2")})
	}
	var yticks []tick
	for _, f := range []float64{0, 0.45, 0.9} {
		yticks = append(yticks, tick{Y: y(top * f), Label: human(top * f)})
	}
	title := k
	dets := []string{}
	for _, ev := range evs {
		if !slices.Contains(dets, ev.Detector) {
			dets = append(dets, ev.Detector)
		}
	}
	title += " — " + strings.Join(dets, ", ")
	return chartData{Title: title, Path: path.String(), Baseline: base.String(), Spans: spans, Ticks: ticks, YTicks: yticks,
		W: width, H: height}
}

// human writes a value with an SI suffix.
func human(v float64) string {
	for _, u := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.f {
			return fmt.Sprintf("%.1f%s", v/u.f, u.s)
		}
	}
	return fmt.Sprintf("%.3g", v)
}

var tmpl = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} — outagewatch</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:15px;margin:22px 0 4px}
table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;white-space:nowrap;border-bottom:1px solid #ddd;text-align:left}
.firing{color:#b00}.resolved{color:#070}
svg{background:#fafafa;border:1px solid #ddd}
.series{fill:none;stroke:#1f5fa8;stroke-width:1.2}.base{fill:none;stroke:#888;stroke-dasharray:4 3}
.alert{fill:#d33;opacity:.15}.tick{font-size:10px;fill:#666}.grid{stroke:#e5e5e5}
</style></head><body>
<h1>{{.Title}}</h1>
<p>{{.Generated}} alert events. Charts: the series (blue), the detector's baseline over the buckets it kept as evidence (grey, dashed), and each alert from start to resolve (red).</p>
<table><tr><th>at</th><th>status</th><th>detector</th><th>signal</th><th>entity</th><th>start</th><th>end</th><th>change</th><th>summary</th></tr>
{{range .Events}}<tr><td>{{.At}}</td><td class="{{.Status}}">{{.Status}}</td><td>{{.Detector}}</td><td>{{.Signal}}</td><td>{{.Entity}}</td><td>{{.Start}}</td><td>{{.End}}</td><td>{{.Change}}</td><td style="white-space:normal">{{.Summary}}</td></tr>
{{end}}</table>
{{range .Charts}}<h2>{{.Title}}</h2>
<svg viewBox="0 0 {{.W}} {{.H}}" width="{{.W}}" height="{{.H}}" role="img" aria-label="{{.Title}}">
{{range .YTicks}}<line class="grid" x1="70" x2="900" y1="{{.Y}}" y2="{{.Y}}"/><text class="tick" x="4" y="{{.Y}}">{{.Label}}</text>
{{end}}{{range .Spans}}<rect class="alert" x="{{.X}}" y="0" width="{{.W}}" height="158"/>
{{end}}<path class="series" d="{{.Path}}"/><path class="base" d="{{.Baseline}}"/>
{{range .Ticks}}<line class="grid" x1="{{.X}}" x2="{{.X}}" y1="0" y2="158"/><text class="tick" x="{{.X}}" y="174">{{.Label}}</text>
{{end}}</svg>
{{end}}</body></html>
`))
