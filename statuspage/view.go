package statuspage

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart"
)

// WindowCharts is what Charts implementations that keep history offer
// beyond one alert's chart: a chart over a chosen window, and the overlay
// of a place's signals as shares of their baselines. recorder.Recorder is
// one.
type WindowCharts interface {
	ChartBetween(series string, evs []alerting.Event, from, to time.Time) *chart.Chart
	Overlay(title string, series []string, evs map[string][]alerting.Event, from, to time.Time) *chart.Chart
}

// ViewOptions says how to render an incident.
type ViewOptions struct {
	// Links shows links out, per network and country, to RIPEstat,
	// bgp.tools, Cloudflare Radar and IODA; a private deployment turns
	// them off (http.external_links: false).
	Links bool
	// SignalCharts draws each member series' chart after the overlay (the
	// page); without it only the overlay is drawn (the report draws the
	// series' charts once, after every event).
	SignalCharts bool
	// From and To bound the charts; zero: a day either side of the
	// incident.
	From, To time.Time
	// Now is the time of the data, for durations of what goes on.
	Now time.Time
}

// maxSignalCharts bounds the charts of one incident: Uganda's shutdown
// has 23 member series; beyond two dozen a page is too long to read and
// the overlay tells the story.
const maxSignalCharts = 24

// IncidentHTML renders one incident as the page and the report show it:
// its state, scope and type, why it is as severe as it is and its likely
// cause, the worst change of each signal and the latest, its networks and
// their shares, the overlay chart of its signals, the pages sent about it,
// its member alerts with their peaks (muted ones apart), then, with
// SignalCharts, each series' chart.
func IncidentHTML(in Incident, charts Charts, o ViewOptions) (template.HTML, error) {
	v := incidentView{Incident: in, O: o}
	v.fill(charts)
	var b bytes.Buffer
	if err := incidentFragment.Execute(&b, v); err != nil {
		return "", fmt.Errorf("statuspage: render incident %s: %w", in.ID, err)
	}
	return template.HTML(b.String()), nil
}

type incidentView struct {
	Incident
	O                                   ViewOptions
	StartS, EndS, DurationS, Confidence string
	Why                                 string
	Changes                             []changeRow
	Nets                                []netRow
	PlaceLinks                          []link
	Pages                               []pageRow
	Members, Muted                      []memberRow
	Overlay                             *chartHTML
	Charts                              []chartHTML
	ChartsOmitted                       int
}

type changeRow struct {
	Kind, What, Where, WorstAt string
	Worst, Now                 phrases
	Firing                     bool
	Alerts                     int
}

type netRow struct {
	Name, Share string
	Links       []link
}

type link struct{ Name, URL string }

type pageRow struct {
	At, Update, Severity, Title, Summary, Muted, Changed string
}

type memberRow struct {
	Status, Detector, Signal, Where, When, PeakAt, Summary, Muted string
	Peak, Now                                                     phrases
}

func (v *incidentView) fill(charts Charts) {
	in := v.Incident
	v.StartS = in.Start.UTC().Format("2006-01-02 15:04")
	if in.End != nil {
		v.EndS = in.End.UTC().Format("2006-01-02 15:04")
	}
	v.DurationS = human(in.Duration(v.O.Now))
	v.Confidence = keepPercent(fmt.Sprintf("%.0f %%", in.Confidence*100))
	v.Why = keepPercent(why(in))
	for _, c := range in.Changes {
		r := changeRow{Kind: c.Kind, What: alerting.SignalWords(c.Signal), Where: c.Name, Alerts: c.Alerts, Firing: c.Firing,
			Worst: peakPhrases(c.Signal, c.Peak), WorstAt: peakAt(c.Peak)}
		now := nowWords(c.Signal, c.Peak, c.NowPct, c.NowObserved)
		switch c.NowAt {
		case "firing":
			r.Now = phrases{now, "(firing)"}
		case "paged":
			r.Now = phrases{now, "when paged"}
		case "rule removed", "rule changed":
			r.Now = phrases{"not judged", "(" + c.NowAt + ")"}
		default:
			r.Now = phrases{now, "at resolve"}
		}
		v.Changes = append(v.Changes, r)
	}
	for _, n := range in.Nets {
		r := netRow{Name: n.Name, Share: "share unknown"}
		if n.Share > 0 {
			r.Share = keepPercent(fmt.Sprintf("%.1f %% of %s's traffic", n.Share*100, in.Place))
		}
		if v.O.Links {
			r.Links = asLinks(n.Entity)
		}
		v.Nets = append(v.Nets, r)
	}
	if v.O.Links {
		v.PlaceLinks = countryLinks(in.PlaceEntity)
	}
	for _, p := range in.Pages {
		v.Pages = append(v.Pages, pageRow{At: p.At.UTC().Format("2006-01-02 15:04"), Update: p.Update, Severity: p.Severity,
			Title: p.Title, Summary: keepPercent(p.Summary), Muted: p.Muted, Changed: keepPercent(p.Changed)})
	}
	ms := in.Members
	if len(ms) == 0 && len(in.Alerts) > 0 {
		ms = members(in.Alerts, nil, nil)
	}
	for _, m := range ms {
		v.Members = append(v.Members, memberRowOf(m))
	}
	for _, m := range in.Muted {
		v.Muted = append(v.Muted, memberRowOf(m))
	}
	v.charts(charts, ms)
}

func memberRowOf(m Member) memberRow {
	r := memberRow{Status: m.Status, Detector: m.Detector, Signal: m.Signal, Where: cmp.Or(m.Labels["display"], m.Entity),
		When: m.Start.UTC().Format("01-02 15:04"), Peak: peakPhrases(m.Signal, m.Peak), PeakAt: peakAt(m.Peak),
		Summary: keepPercent(m.Summary), Muted: m.Muted}
	r.Now = phrases{nowWords(m.Signal, m.Peak, m.ChangePct, m.Observed)}
	if m.End != nil {
		r.When += " – " + m.End.UTC().Format("01-02 15:04")
		r.Now = append(r.Now, "at resolve")
		if why := notJudged(m.Event); why != "" {
			r.Now = phrases{"not judged", "(" + why + ")"}
		}
	}
	return r
}

// nowWords writes a signal's latest as its peak is written: a change from
// the baseline, or, where the peak has no baseline to change from (a
// burst of withdrawals) or a threshold to cross (packet loss), the value
// itself: "0 prefixes per 5 min", not "0 %".
func nowWords(signal string, peak Peak, pct, observed float64) string {
	if peak.Baseline == 0 || peak.Method == "threshold" {
		return alerting.Human(signal, observed)
	}
	return alerting.HumanChange(pct)
}

// peakAt says when a peak was: its bucket, or, for the worst of a whole
// alert that the detector reported at resolve, that.
func peakAt(p Peak) string {
	if p.Episode {
		return "over the alert"
	}
	return p.At.UTC().Format("01-02 15:04")
}

// peakWords writes a peak: its change, and the values it is between, as
// "−97 % (32 Mbit/s vs 1 Gbit/s)"; a count against no baseline (a burst of
// withdrawals) as its value.
func peakWords(signal string, p Peak) string { return strings.Join(peakPhrases(signal, p), " ") }

// peakPhrases is peakWords in the pieces a line may break between and not
// inside: a phone's cell is narrower than "−50 % (8.2k /48 prefixes vs 16k
// /48 prefixes)", and a figure cut from its unit misreads.
func peakPhrases(signal string, p Peak) phrases {
	if p.Method == "threshold" {
		return phrases{alerting.Human(signal, p.Observed), "(threshold " + alerting.Human(signal, p.Baseline) + ")"}
	}
	if p.Baseline == 0 {
		return phrases{alerting.Human(signal, p.Observed), "(baseline 0)"}
	}
	return phrases{alerting.HumanChange(p.ChangePct), "(" + alerting.Human(signal, p.Observed), "vs " + alerting.Human(signal, p.Baseline) + ")"}
}

// phrases are words the page sets apart, each kept on one line (the
// "figs" template).
type phrases []string

// why says why the incident is as severe as it is: the impact it was
// mapped from, as the product it is.
func why(in Incident) string {
	if in.PlaceEntity == "" {
		return "the worst of its alerts' severities (alerts grouped by place; no outage event)"
	}
	var parts []string
	for _, c := range in.Changes {
		if c.Kind == "traffic" || c.Signal == "dns_queries" {
			parts = append(parts, alerting.SignalWords(c.Signal)+" "+alerting.HumanChange(c.Peak.ChangePct))
			break
		}
	}
	share := "share affected unknown"
	if in.Share > 0 {
		share = fmt.Sprintf("%.0f %% of %s's traffic affected", in.Share*100, in.Place)
	}
	parts = append(parts, share)
	return fmt.Sprintf("impact %s (drop × share affected × how long, 1 for an hour-long total outage of the whole place): %s",
		strconv.FormatFloat(math.Round(in.Impact*100)/100, 'f', -1, 64), strings.Join(parts, ", "))
}

// asLinks are the outside views of a network.
func asLinks(entity string) []link {
	n, ok := strings.CutPrefix(entity, "asn:")
	if !ok {
		return nil
	}
	if _, err := strconv.ParseUint(n, 10, 32); err != nil {
		return nil
	}
	return []link{
		{"RIPEstat", "https://stat.ripe.net/AS" + n},
		{"bgp.tools", "https://bgp.tools/as/" + n},
		{"Radar", "https://radar.cloudflare.com/as" + n},
		{"IODA", "https://ioda.inetintel.cc.gatech.edu/asn/" + n},
	}
}

// countryLinks are the outside views of a country (bgp.tools has no
// country page: its views are per network).
func countryLinks(entity string) []link {
	cc, ok := strings.CutPrefix(entity, "country:")
	if !ok || len(cc) != 2 {
		return nil
	}
	return []link{
		{"RIPEstat", "https://stat.ripe.net/" + url.PathEscape(strings.ToUpper(cc))},
		{"Radar", "https://radar.cloudflare.com/" + url.PathEscape(strings.ToLower(cc))},
		{"IODA", "https://ioda.inetintel.cc.gatech.edu/country/" + url.PathEscape(strings.ToUpper(cc))},
	}
}

// charts draws the overlay of the place's signals (each signal's widest
// series) and then, with SignalCharts, each member's series.
func (v *incidentView) charts(charts Charts, ms []Member) {
	evs := map[string][]alerting.Event{}
	var order []string
	for _, m := range ms {
		k := m.Signal + "{" + m.Entity + "}"
		if _, ok := evs[k]; !ok {
			order = append(order, k)
		}
		evs[k] = append(evs[k], notifications(m)...)
	}
	wc, _ := charts.(WindowCharts)
	if wc != nil {
		var keys []string
		for _, c := range v.Incident.Changes {
			// A count against no baseline (withdrawal bursts) has no
			// share of it to draw.
			if c.Peak.Baseline != 0 {
				keys = append(keys, c.Signal+"{"+c.Entity+"}")
			}
		}
		if len(keys) == 0 {
			keys = order
		}
		if c := wc.Overlay("every signal of "+v.Place+", as a share of its baseline", keys, evs, v.O.From, v.O.To); c != nil {
			if h, err := svg(c); err == nil {
				v.Overlay = &h
			}
		}
	}
	if !v.O.SignalCharts {
		return
	}
	grouped, _ := charts.(Grouped)
	for _, k := range order {
		// An alert on a group (a transit judged per site) is charted by
		// the group's series.
		series := []string{k}
		if grouped != nil {
			if ms := grouped.Members(k); len(ms) > 0 {
				series = ms
			}
		}
		drawn := false
		for _, m := range series {
			if len(v.Charts) >= maxSignalCharts {
				v.ChartsOmitted++
				continue
			}
			var c *chart.Chart
			switch {
			case wc != nil:
				c = wc.ChartBetween(m, evs[k], v.O.From, v.O.To)
			case charts != nil:
				c = charts.Chart(m, evs[k])
			}
			if c == nil {
				continue
			}
			if h, err := svg(c); err == nil {
				v.Charts = append(v.Charts, h)
				drawn = true
			}
		}
		if !drawn && len(evs[k]) > 0 && len(v.Charts) < maxSignalCharts {
			last := evs[k][len(evs[k])-1]
			if c := alerting.EvidenceChart(&last); c != nil {
				if h, err := svg(c); err == nil {
					v.Charts = append(v.Charts, h)
				}
			}
		}
	}
}

// Grouped is what Charts implementations offer that know the series of a
// group: an alert on transit:1299, judged per site, has no series of its
// own but transit:1299@ams01 and others. recorder.Recorder is one.
type Grouped interface {
	Members(series string) []string
}

// notifications are what a member's chart is drawn from: its firing
// notification and its resolve, as the store kept them; without them the
// latest stands for the firing one too.
func notifications(m Member) []alerting.Event {
	if len(m.Sent) > 0 {
		return m.Sent
	}
	if m.Status != alerting.Resolved {
		return []alerting.Event{m.Event}
	}
	firing := m.Event
	firing.Status, firing.End, firing.Evidence = alerting.Firing, nil, nil
	return []alerting.Event{firing, m.Event}
}

func svg(c *chart.Chart) (chartHTML, error) {
	var b bytes.Buffer
	if err := c.SVG(&b); err != nil {
		return chartHTML{}, err
	}
	return chartHTML{Title: c.Title, SVG: template.HTML(b.String())}, nil
}
