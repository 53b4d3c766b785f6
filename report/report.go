// Package report writes the review of a replay as one self-contained HTML
// page: the outage events first, each as the outage page shows it (the
// same renderer) with its timeline of pages sent (open, each growth,
// resolve, when and why); then every alert and a chart per alerted series
// with the alert's span shaded, so an operator can see what fired, when,
// and against what baseline. No script and no external asset: the page
// opens offline.
package report

import (
	"bytes"
	"cmp"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart"
	"github.com/outagewatch/outagewatch/chart/recorder"
	"github.com/outagewatch/outagewatch/scenario"
	"github.com/outagewatch/outagewatch/statuspage"
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

// Write renders title; the outage events among events, oldest first, each
// with its facts, overlay chart, pages and members; then the alert events
// (in emission order) and a chart for every series that raised one, over
// the span from a day before the first alert to a day after the last
// resolve, with the labelled windows of the series outlined.
func Write(w io.Writer, title string, events []alerting.Event, rec *recorder.Recorder, windows ...Window) error {
	var alerts []alerting.Event
	store := statuspage.NewStore()
	for _, ev := range events {
		store.Add(ev)
		if !ev.IsEvent() {
			alerts = append(alerts, ev)
		}
	}
	bySeries, order := group(alerts)
	page := pageData{Title: title, Events: rows(alerts), Generated: len(alerts), Style: statuspage.Style()}
	var ins []statuspage.Incident
	for _, in := range store.Within(0) {
		if in.PlaceEntity != "" {
			ins = append(ins, in)
		}
	}
	slices.SortFunc(ins, func(a, b statuspage.Incident) int {
		return cmp.Or(a.Start.Compare(b.Start), strings.Compare(a.Place, b.Place), strings.Compare(a.ID, b.ID))
	})
	var end time.Time
	for _, ev := range events {
		if ev.At.After(end) {
			end = ev.At
		}
	}
	var charts statuspage.Charts
	if rec != nil {
		charts = rec
	}
	for _, in := range ins {
		body, err := statuspage.IncidentHTML(in, charts, statuspage.ViewOptions{Links: true, Now: end})
		if err != nil {
			return err
		}
		page.Outages = append(page.Outages, outageHTML{ID: in.ID, Place: in.Place, Body: body})
	}
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
	Style     template.HTML
	Outages   []outageHTML
	Events    []eventRow
	Charts    []chartHTML
	Generated int
	Omitted   int
}

type outageHTML struct {
	ID, Place string
	Body      template.HTML
}

type chartHTML struct {
	Title string
	SVG   template.HTML
}

type eventRow struct {
	At, Status, Detector, Signal, Entity, Name, Start, End, Change, Summary string
}

// changeWords writes a notification's change as the incidents above it
// do ("−90 %"), or, against no baseline (a burst) or a threshold (a
// loss), its value in its unit ("315 prefixes per 5 min").
func changeWords(ev alerting.Event) string {
	if ev.Baseline == 0 || ev.BaselineMethod == "threshold" {
		return alerting.Human(ev.Signal, ev.Observed)
	}
	return alerting.HumanChange(ev.ChangePct)
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
			Change: changeWords(ev), Summary: ev.Summary})
	}
	return out
}

var tmpl = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">{{.Style}}
<title>{{.Title}} — outagewatch</title>
<style>
.events{overflow-x:auto}
table.all{font-size:12px}table.all td.n{white-space:nowrap}.summary{min-width:14em}small{color:#666}
.firing{color:#b00}.resolved{color:#070}
</style></head><body><main>
<h1>{{.Title}}</h1>
<nav id="toc"><p>{{len .Outages}} outage event{{if ne (len .Outages) 1}}s{{end}}{{range .Outages}} · <a href="#event-{{.ID}}">{{.Place}}</a>{{end}} · <a href="#alerts">{{.Generated}} alert events</a></p></nav>
{{range .Outages}}<section class="incident event" id="event-{{.ID}}">
<h1 class="event-place">{{.Place}}</h1>
{{.Body}}
</section>
{{else}}<p>No outage event.</p>{{end}}
<h1 id="alerts">Alerts</h1>
<p>{{.Generated}} alert events. Each chart shows the observed series (the band: each point's lowest and highest bucket when points fold several), the baseline the detector judged against inside its alerts and the median of the same time on previous weeks or days elsewhere, the same time a week earlier, and each alert shaded from its start to its resolve; times in UTC.</p>
<div class="events"><table class="all"><tr><th>at (UTC)</th><th>status</th><th>what</th><th>where</th><th>from – to</th><th>change (at this notification)</th><th>summary</th></tr>
{{range .Events}}<tr><td>{{.At}}</td><td class="{{.Status}}">{{.Status}}</td><td>{{.Detector}}<br><small>{{.Signal}}</small></td><td>{{if .Name}}{{.Name}}<br>{{end}}<small>{{.Entity}}</small></td><td>{{.Start}}{{if .End}} –<br>{{.End}}{{end}}</td><td class="n">{{.Change}}</td><td class="summary">{{.Summary}}</td></tr>
{{end}}</table></div>
{{range .Charts}}<h2>{{.Title}}</h2>
<figure>{{.SVG}}</figure>
{{end}}{{if .Omitted}}<p>{{.Omitted}} more alerted series not charted (at most {{len .Charts}} charts a report).</p>{{end}}
</main></body></html>
`))
