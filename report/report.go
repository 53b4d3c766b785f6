// Package report writes a replay's alerts and the series behind them as one
// self-contained HTML page: a chart per alerted series with the alert's span
// shaded, so an operator can see at a glance what fired, when, and against
// what baseline. No script and no external asset: the page opens offline.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart"
	"github.com/outagewatch/outagewatch/chart/recorder"
	"github.com/outagewatch/outagewatch/scenario"
)

// maxCharts bounds the charts of one report, so that a replay with
// hundreds of alerts still writes a page a browser opens.
const maxCharts = 60

// Window is a labelled stretch of a fixture, outlined on the charts of its
// series: where an alert must fire (onset to onset + within) or resolve.
type Window struct {
	Signal, Entity string // Signal "" matches every signal of Entity
	From, To       time.Time
	Label          string
}

// FixtureWindows returns the windows a fixture's labels define.
func FixtureWindows(spec *scenario.Spec) []Window {
	var out []Window
	for _, e := range spec.Expect {
		out = append(out, Window{Signal: e.Signal, Entity: e.Entity, From: e.Onset,
			To: e.Onset.Add(time.Duration(e.Within)), Label: "must fire (" + e.Detector + ")"})
		if !e.ResolveAfter.IsZero() {
			out = append(out, Window{Signal: e.Signal, Entity: e.Entity, From: e.ResolveAfter,
				To: e.ResolveAfter.Add(time.Duration(e.ResolveWithin)), Label: "must resolve"})
		}
	}
	return out
}

// Write renders title, the events (in emission order) and a chart for every
// series that raised one, over the span from a day before the first alert to
// a day after the last resolve, with the labelled windows of the series
// outlined.
func Write(w io.Writer, title string, events []alerting.Event, rec *recorder.Recorder, windows ...Window) error {
	bySeries, order := group(events)
	page := pageData{Title: title, Events: rows(events), Generated: len(events)}
	for _, k := range order {
		for _, m := range rec.Members(k) {
			if len(page.Charts) >= maxCharts {
				page.Omitted++
				continue
			}
			c := rec.Chart(m, bySeries[k])
			if c == nil {
				continue
			}
			signal, rest, _ := strings.Cut(m, "{")
			entity := strings.TrimSuffix(rest, "}")
			for _, win := range windows {
				if win.Entity == entity && (win.Signal == "" || win.Signal == signal) {
					c.Spans = append(c.Spans, chart.Span{From: win.From, To: win.To, Label: win.Label, Color: chart.ColorWindow, Outline: true})
				}
			}
			var b bytes.Buffer
			if err := c.SVG(&b); err != nil {
				return err
			}
			page.Charts = append(page.Charts, chartHTML{Title: c.Title, SVG: template.HTML(b.String())})
		}
	}
	return tmpl.Execute(w, page)
}

// group returns the events by series key, and the keys in first-seen order.
func group(events []alerting.Event) (map[string][]alerting.Event, []string) {
	bySeries := map[string][]alerting.Event{}
	var order []string
	for _, ev := range events {
		k := ev.Signal + "{" + ev.Entity + "}"
		if _, seen := bySeries[k]; !seen {
			order = append(order, k)
		}
		bySeries[k] = append(bySeries[k], ev)
	}
	return bySeries, order
}

type pageData struct {
	Title     string
	Events    []eventRow
	Charts    []chartHTML
	Generated int
	Omitted   int
}

type chartHTML struct {
	Title string
	SVG   template.HTML
}

type eventRow struct {
	At, Status, Detector, Signal, Entity, Name, Start, End, Change, Summary string
}

func rows(events []alerting.Event) []eventRow {
	out := make([]eventRow, 0, len(events))
	for _, ev := range events {
		end := ""
		if ev.End != nil {
			end = ev.End.UTC().Format("2006-01-02 15:04")
		}
		out = append(out, eventRow{At: ev.At.UTC().Format("2006-01-02 15:04"), Status: ev.Status, Detector: ev.Detector,
			Signal: ev.Signal, Entity: ev.Entity, Name: ev.Labels["display"], Start: ev.Start.UTC().Format("2006-01-02 15:04"), End: end,
			Change: fmt.Sprintf("%+.1f %%", ev.ChangePct), Summary: ev.Summary})
	}
	return out
}

var tmpl = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} — outagewatch</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:15px;margin:22px 0 4px}
.events{overflow-x:auto}
table{border-collapse:collapse;font-size:12px;width:100%}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
td.n{white-space:nowrap}td{overflow-wrap:anywhere}.summary{min-width:14em}small{color:#666}
.firing{color:#b00}.resolved{color:#070}
figure{margin:0 0 12px;border:1px solid #ddd;background:#fff}
</style></head><body>
<h1>{{.Title}}</h1>
<p>{{.Generated}} alert events. Each chart shows the observed series, its baseline (the median of the same time on the previous weeks), the same time a week earlier, and each alert shaded from its start to its resolve; times in UTC.</p>
<div class="events"><table><tr><th>at (UTC)</th><th>status</th><th>what</th><th>where</th><th>from – to</th><th>change</th><th>summary</th></tr>
{{range .Events}}<tr><td>{{.At}}</td><td class="{{.Status}}">{{.Status}}</td><td>{{.Detector}}<br><small>{{.Signal}}</small></td><td>{{if .Name}}{{.Name}}<br>{{end}}<small>{{.Entity}}</small></td><td>{{.Start}}{{if .End}} –<br>{{.End}}{{end}}</td><td class="n">{{.Change}}</td><td class="summary">{{.Summary}}</td></tr>
{{end}}</table></div>
{{range .Charts}}<h2>{{.Title}}</h2>
<figure>{{.SVG}}</figure>
{{end}}{{if .Omitted}}<p>{{.Omitted}} more alerted series not charted (at most {{len .Charts}} charts a report).</p>{{end}}
</body></html>
`))
