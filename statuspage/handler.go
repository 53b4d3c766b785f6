package statuspage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart"
)

// Handler serves the page:
//
//	GET /                    the incident list (updates itself every few seconds)
//	GET /incident/{id}       one incident: its charts and member alerts
//	GET /api/v1/incidents    the list as JSON, for the page's polling and for scripts
//
// charts may be nil: then each alert is charted from its own evidence.
func Handler(src Source, charts Charts, title string) http.Handler {
	h := &handler{src: src, charts: charts, title: title}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.list)
	mux.HandleFunc("GET /incident/{id}", h.incident)
	mux.HandleFunc("GET /api/v1/incidents", h.api)
	return mux
}

type handler struct {
	src    Source
	charts Charts
	title  string
}

func (h *handler) api(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	ins := h.src.Incidents()
	if ins == nil {
		ins = []Incident{}
	}
	now := h.src.Now()
	type row struct {
		Incident
		DurationS float64 `json:"duration_s"`
	}
	body := struct {
		Now       time.Time `json:"now"`
		Incidents []row     `json:"incidents"`
	}{Now: now.UTC()}
	for _, in := range ins {
		body.Incidents = append(body.Incidents, row{in, in.Duration(now).Seconds()})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	ins := h.src.Incidents()
	page := listPage{Title: h.title, Now: h.src.Now().UTC()}
	for _, in := range ins {
		page.Rows = append(page.Rows, h.row(in, page.Now))
	}
	h.render(w, listTmpl, page)
}

func (h *handler) row(in Incident, now time.Time) incidentRow {
	r := incidentRow{Incident: in, StartS: in.Start.UTC().Format("2006-01-02 15:04"),
		DurationS: human(in.Duration(now)), ConfidenceS: fmt.Sprintf("%.0f %%", in.Confidence*100)}
	if in.End != nil {
		r.EndS = in.End.UTC().Format("2006-01-02 15:04")
	}
	return r
}

func (h *handler) incident(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var in *Incident
	for _, x := range h.src.Incidents() {
		if x.ID == id {
			in = &x
			break
		}
	}
	if in == nil {
		http.Error(w, "no such incident (it may have aged out of the list)", http.StatusNotFound)
		return
	}
	now := h.src.Now().UTC()
	page := incidentPage{Title: h.title, Row: h.row(*in, now), Now: now}
	for _, ev := range in.Alerts {
		a := alertRow{Event: ev, StartS: ev.Start.UTC().Format("2006-01-02 15:04"),
			Change: fmt.Sprintf("%+.1f %%", ev.ChangePct), Name: ev.Labels["display"]}
		if a.Name == "" {
			a.Name = ev.Entity
		}
		if ev.End != nil {
			a.EndS = ev.End.UTC().Format("2006-01-02 15:04")
		}
		page.Alerts = append(page.Alerts, a)
		if len(page.Charts) < 24 {
			if c := h.chart(ev); c != nil {
				var b bytes.Buffer
				if err := c.SVG(&b); err == nil {
					page.Charts = append(page.Charts, chartHTML{Title: c.Title, SVG: template.HTML(b.String())})
				}
			}
		}
	}
	h.render(w, incidentTmpl, page)
}

// chart returns the alert's chart from the recorded series, else from the
// evidence the alert carries.
func (h *handler) chart(ev alerting.Event) *chart.Chart {
	var evs []alerting.Event
	if ev.Status == alerting.Resolved {
		firing := ev
		firing.Status, firing.End = alerting.Firing, nil
		evs = []alerting.Event{firing, ev}
	} else {
		evs = []alerting.Event{ev}
	}
	if h.charts != nil {
		if c := h.charts.Chart(ev.Signal+"{"+ev.Entity+"}", evs); c != nil {
			return c
		}
	}
	return alerting.EvidenceChart(&ev)
}

func (h *handler) render(w http.ResponseWriter, t *template.Template, data any) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Nothing from elsewhere: the page must work on an isolated network.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'self' data:")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// human writes a duration as people say it: "45 min", "5 h 10 min", "2 d 3 h".
func human(d time.Duration) string {
	d = d.Round(time.Minute)
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 24*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	days, h := int(d.Hours())/24, int(d.Hours())%24
	if h == 0 {
		return fmt.Sprintf("%d d", days)
	}
	return fmt.Sprintf("%d d %d h", days, h)
}

type incidentRow struct {
	Incident
	StartS, EndS, DurationS, ConfidenceS string
}

func (r incidentRow) NetworksS() string { return strings.Join(r.Networks, ", ") }
func (r incidentRow) SignalsS() string  { return strings.Join(r.Signals, ", ") }

type listPage struct {
	Title string
	Now   time.Time
	Rows  []incidentRow
}

type alertRow struct {
	alerting.Event
	Name, StartS, EndS, Change string
}

type chartHTML struct {
	Title string
	SVG   template.HTML
}

type incidentPage struct {
	Title  string
	Now    time.Time
	Row    incidentRow
	Alerts []alertRow
	Charts []chartHTML
}
