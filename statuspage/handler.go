package statuspage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
)

// Handler serves the page:
//
//	GET /                    the incident list (updates itself every few seconds); ?range=1d|7d|30d|all
//	GET /incident/{id}       one incident: its facts, charts and member alerts; ?chart=incident|week|all
//	GET /api/v1/incidents    the list as JSON, for the page's polling and for scripts; ?range= as the list
//
// charts may be nil: then each alert is charted from its own evidence.
// Links out are shown; see NewHandler.
func Handler(src Source, charts Charts, title string) http.Handler {
	return NewHandler(src, charts, Options{Title: title, Links: true})
}

// Options configure the page.
type Options struct {
	Title string
	// Links shows links out per network and country (RIPEstat, bgp.tools,
	// Cloudflare Radar, IODA): off for a private deployment that must not
	// suggest its readers look elsewhere or leak what they look at.
	Links bool
}

// Windowed is a Source that can list incidents ended longer ago than its
// default: Store is one. Within(0) is every incident it holds.
type Windowed interface {
	Within(d time.Duration) []Incident
}

// NewHandler is Handler with options.
func NewHandler(src Source, charts Charts, o Options) http.Handler {
	h := &handler{src: src, charts: charts, title: o.Title, opts: o}
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
	opts   Options
}

// listRange is one choice of how far back the list goes.
type listRange struct {
	Key, Name string
	D         time.Duration // 0: the source's default; <0: all it keeps
}

// listRanges are the list's choices: the default (ended in the last day),
// a week, a month (30 days), and everything the service still holds.
var listRanges = []listRange{
	{"1d", "the last day", 0},
	{"7d", "the last week", 7 * 24 * time.Hour},
	{"30d", "the last 30 days", 30 * 24 * time.Hour},
	{"all", "all kept", -1},
}

// incidents returns the incidents of the range the request asks for, or
// an error naming the ranges there are.
func (h *handler) incidents(r *http.Request) ([]Incident, listRange, error) {
	rg := listRanges[0]
	if q := r.URL.Query().Get("range"); q != "" {
		i := slices.IndexFunc(listRanges, func(x listRange) bool { return x.Key == q })
		if i < 0 {
			var keys []string
			for _, x := range listRanges {
				keys = append(keys, x.Key)
			}
			return nil, rg, fmt.Errorf("unknown range %q: one of %s", q, strings.Join(keys, ", "))
		}
		rg = listRanges[i]
	}
	w, ok := h.src.(Windowed)
	switch {
	case rg.D == 0 || !ok:
		return h.src.Incidents(), rg, nil
	case rg.D < 0:
		return w.Within(0), rg, nil
	}
	return w.Within(rg.D), rg, nil
}

type rangeLink struct {
	Key, Name string
	On        bool
}

func (h *handler) api(w http.ResponseWriter, r *http.Request) {
	ins, _, err := h.incidents(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if ins == nil {
		ins = []Incident{}
	}
	now := h.src.Now()
	type row struct {
		Incident
		DurationS float64 `json:"duration_s"`
		// Worst is the worst change of the incident's first signal, in
		// words, as the list shows it.
		Worst string `json:"worst,omitempty"`
		// SignalsInWords are Signals as the list shows them.
		SignalsInWords []string `json:"signals_in_words,omitempty"`
	}
	body := struct {
		Now       time.Time `json:"now"`
		Incidents []row     `json:"incidents"`
	}{Now: now.UTC()}
	for _, in := range ins {
		body.Incidents = append(body.Incidents, row{in, in.Duration(now).Seconds(), worst(in), signalWords(in.Signals)})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
}

// worst is the incident's headline change: its first signal's peak.
func worst(in Incident) string {
	if len(in.Changes) == 0 {
		return ""
	}
	c := in.Changes[0]
	if c.Peak.Baseline == 0 || c.Peak.Method == "threshold" {
		return keepPercent(alerting.SignalWords(c.Signal) + " " + alerting.Human(c.Signal, c.Peak.Observed))
	}
	return keepPercent(alerting.SignalWords(c.Signal) + " " + alerting.HumanChange(c.Peak.ChangePct))
}

// keepPercent joins each figure to its "%" with a no-break space, so that
// a narrow cell never breaks "−61 %" before its "%" (the figures the
// page sets in a span of their own are kept whole by their span).
func keepPercent(s string) string { return strings.ReplaceAll(s, " %", "\u00a0%") }

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	ins, rg, err := h.incidents(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	page := listPage{Title: h.title, Now: h.src.Now().UTC(), RangeName: rg.Name}
	if rg.Key != listRanges[0].Key {
		page.Query = "?range=" + rg.Key
	}
	for _, x := range listRanges {
		page.Ranges = append(page.Ranges, rangeLink{x.Key, x.Name, x.Key == rg.Key})
	}
	for _, in := range ins {
		page.Rows = append(page.Rows, h.row(in, page.Now))
	}
	h.render(w, listTmpl, page)
}

func (h *handler) row(in Incident, now time.Time) incidentRow {
	r := incidentRow{Incident: in, StartS: in.Start.UTC().Format("2006-01-02 15:04"),
		DurationS: human(in.Duration(now)), ConfidenceS: keepPercent(fmt.Sprintf("%.0f %%", in.Confidence*100)), WorstS: worst(in)}
	if in.End != nil {
		r.EndS = in.End.UTC().Format("2006-01-02 15:04")
	}
	r.ScopeS = in.Scope
	if in.Type != "" {
		r.ScopeS = strings.TrimPrefix(r.ScopeS+" · "+in.Type, " · ")
	}
	return r
}

// chartRanges are the incident page's choices of chart window: a day
// either side of the incident, the week before it too, and all the
// history kept (http.chart_history live, the whole replay).
var chartRanges = []struct{ Key, Name string }{
	{"incident", "a day either side"},
	{"week", "from a week before"},
	{"all", "all kept"},
}

func (h *handler) incident(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var in *Incident
	var all []Incident
	if ws, ok := h.src.(Windowed); ok {
		all = ws.Within(0)
	} else {
		all = h.src.Incidents()
	}
	for _, x := range all {
		if x.ID == id {
			in = &x
			break
		}
	}
	if in == nil {
		http.Error(w, "no such incident (it may have aged out of what is kept)", http.StatusNotFound)
		return
	}
	now := h.src.Now().UTC()
	o := ViewOptions{Links: h.opts.Links, SignalCharts: true, Now: now}
	key := r.URL.Query().Get("chart")
	end := now
	if in.End != nil {
		end = *in.End
	}
	switch key {
	case "week":
		o.From, o.To = in.Start.Add(-7*24*time.Hour), end.Add(24*time.Hour)
	case "all":
		o.From, o.To = time.Unix(0, 1), now.Add(24*time.Hour)
	case "", "incident":
		key = "incident"
	default:
		http.Error(w, fmt.Sprintf("unknown chart window %q: one of incident, week, all", key), http.StatusBadRequest)
		return
	}
	body, err := IncidentHTML(*in, h.charts, o)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	page := incidentPage{Title: h.title, Row: h.row(*in, now), Now: now, Body: body}
	for _, c := range chartRanges {
		page.Ranges = append(page.Ranges, rangeLink{c.Key, c.Name, c.Key == key})
	}
	h.render(w, incidentTmpl, page)
}

func (h *handler) render(w http.ResponseWriter, t *template.Template, data any) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Nothing from elsewhere: the page must work on an isolated network
	// (links out are links, not loads).
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
	StartS, EndS, DurationS, ConfidenceS, ScopeS, WorstS string
}

func (r incidentRow) NetworksS() string { return strings.Join(r.Networks, ", ") }
func (r incidentRow) SignalsS() string  { return strings.Join(signalWords(r.Signals), ", ") }

// signalWords are signals as the incident's page names them ("announced
// IPv4 space", not bgp_announced_v4), for the list.
func signalWords(sigs []string) []string {
	out := make([]string, len(sigs))
	for i, s := range sigs {
		out[i] = alerting.SignalWords(s)
	}
	return out
}

type listPage struct {
	Title     string
	Now       time.Time
	Rows      []incidentRow
	RangeName string
	Ranges    []rangeLink
	Query     string // the range, carried into the incident links
}

type chartHTML struct {
	Title string
	SVG   template.HTML
}

type incidentPage struct {
	Title  string
	Now    time.Time
	Row    incidentRow
	Query  string
	Ranges []rangeLink
	Body   template.HTML
}
