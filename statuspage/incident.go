package statuspage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/detectors"
)

// Detail is what an outage event says beyond its place and time: how bad
// (the worst change of each signal over its alerts' life, and now), why
// (impact, cause, type), how wide (scope, networks and their traffic
// shares) and what was sent about it (its pages).
type Detail struct {
	// Title is the event's headline: "Spain", "Digi Spain (AS57269) in
	// Spain".
	Title string `json:"title,omitempty"`
	// PlaceEntity is the place as an entity: "country:ES", "transit:1299".
	PlaceEntity string `json:"place_entity,omitempty"`
	// Scope is "nationwide" (the place's own series fell), "regional"
	// (regions of it), "network" (only some of its networks) or
	// "transit".
	Scope string `json:"scope,omitempty"`
	// Cause is the likely cause in words; Type the kind of outage it
	// points to ("power outage or shutdown", "routing", "DNS", "transit
	// loss", "traffic drop").
	Cause string `json:"cause,omitempty"`
	Type  string `json:"type,omitempty"`
	// Impact is drop × share affected × duration factor (0..1), what the
	// severity is mapped from; Share the share of the place's traffic the
	// affected networks carried (1 for the whole place).
	Impact float64 `json:"impact"`
	Share  float64 `json:"share,omitempty"`
	// Changes is each signal's worst change and its latest, widest entity
	// first.
	Changes []Change `json:"changes,omitempty"`
	// Nets are the affected networks with their traffic shares.
	Nets []Network `json:"network_shares,omitempty"`
	// Members are the member alerts with their peaks (in JSON: the alerts
	// are Incident.Alerts, their peaks Peaks, by alert ID); Muted the
	// alerts of the same place and time that page nobody (a silence, a
	// feed fault).
	Members []Member        `json:"-"`
	Peaks   map[string]Peak `json:"peaks,omitempty"`
	Muted   []Member        `json:"muted,omitempty"`
	// Pages are the notifications sent: open, each growth, resolve.
	Pages []Page `json:"pages,omitempty"`
}

// Change is one signal of an incident.
type Change struct {
	Kind   string `json:"kind"` // traffic, dns, routing, quality
	Signal string `json:"signal"`
	Entity string `json:"entity"`
	Name   string `json:"name"`
	// Peak is the worst change of its alert over its life; NowPct its
	// latest (the value at resolve once resolved), NowObserved the
	// latest value, in Peak.Unit.
	Peak        Peak    `json:"peak"`
	NowPct      float64 `json:"now_pct"`
	NowObserved float64 `json:"now_observed"`
	Firing      bool    `json:"firing"`
	// NowAt says what NowPct is: "firing" (the latest of a firing
	// alert), "resolve" (its alert's value at resolve), "paged" (the
	// figure the event paged with, kept on its resolve: no member alert
	// to read the resolve from), or "rule removed" or "rule changed" (its
	// alert was closed unjudged, its rule no longer judging it: there is
	// no latest).
	NowAt  string `json:"now_at"`
	Alerts int    `json:"alerts"`
}

// notJudged says why a resolved alert's end was not judged ("rule
// removed", "rule changed": the rules no longer judge it), or "".
func notJudged(ev alerting.Event) string {
	switch ev.Reason {
	case detectors.ReasonRuleRemoved:
		return "rule removed"
	case detectors.ReasonRuleChanged:
		return "rule changed"
	}
	return ""
}

// nowAt is what an event's own signal figures are: those of its firing
// alerts, or, on a resolve, those paged (or, from an event log written
// before events said, the resolve's).
func nowAt(o alerting.Event) string {
	switch {
	case o.Status != alerting.Resolved:
		return "firing"
	case o.FiguresAt == "paged":
		return "paged"
	}
	return "resolve"
}

// Peak is an alert's worst bucket: the largest change from the baseline
// the detector judged it against, among the values its notifications
// carry (the firing value, the resolve value, their evidence). Observed
// and Baseline are in the signal's own unit a bucket, named by Unit.
type Peak struct {
	ChangePct float64 `json:"change_pct"`
	Observed  float64 `json:"observed"`
	Baseline  float64 `json:"baseline"`
	// Unit is the unit of Observed and Baseline, the detector's
	// observed_unit ("bytes/300s", "/24 prefixes", "ratio").
	Unit string    `json:"observed_unit,omitempty"`
	At   time.Time `json:"at"`
	// Method is the detector's baseline method: "threshold" makes
	// Baseline a bar to cross, not a level to change from.
	Method string `json:"baseline_method,omitempty"`
	// Episode says the detector reported this as the worst of the whole
	// alert (its lowest routed space, its largest burst) when it resolved:
	// At is then the resolve, not the bucket.
	Episode bool `json:"episode,omitempty"`
}

// worse returns whichever of p and q is further from the baseline (by
// change, or by observed value where there is no baseline to change
// from, as for withdrawal bursts).
func (p Peak) worse(q Peak) Peak {
	switch {
	case p.At.IsZero():
		return q
	case q.At.IsZero():
		return p
	case math.Abs(q.ChangePct) > math.Abs(p.ChangePct):
		return q
	case q.ChangePct == 0 && p.ChangePct == 0 && q.Observed > p.Observed:
		// No change to compare (a burst against no baseline, a loss
		// against a threshold): the larger value is the worse.
		return q
	}
	return p
}

// peakOf is the worst bucket one notification of an alert shows: its own
// value and those of its evidence inside the alert.
func peakOf(ev alerting.Event) Peak {
	p := Peak{ChangePct: ev.ChangePct, Observed: ev.Observed, Baseline: ev.Baseline, At: ev.At, Method: ev.BaselineMethod}
	if ev.Status == alerting.Resolved {
		// A resolve's own value is the recovered one: its evidence before
		// the end may still hold the worst.
		p = Peak{}
	}
	for _, e := range ev.Evidence {
		if e.Value == nil || e.Time.Before(ev.Start) || ev.End != nil && !e.Time.Before(*ev.End) || math.IsNaN(*e.Value) {
			continue
		}
		q := Peak{Observed: *e.Value, Baseline: e.Baseline, At: e.Time, Method: ev.BaselineMethod}
		if e.Baseline > 0 && ev.BaselineMethod != "threshold" {
			q.ChangePct = math.Round((*e.Value-e.Baseline)/e.Baseline*1000) / 10
		}
		p = p.worse(q)
	}
	// What the detector kept of the whole episode: the least routed space
	// against the space it fired against, the largest burst.
	if lowest, ok := number(ev.Details["lowest"]); ok {
		if base, ok := number(ev.Details["fired_against"]); ok && base > 0 {
			p = p.worse(Peak{ChangePct: math.Round((lowest-base)/base*1000) / 10, Observed: lowest, Baseline: base, At: ev.At, Episode: true})
		}
	}
	if peak, ok := number(ev.Details["peak_withdrawals"]); ok && ev.Baseline == 0 {
		p = p.worse(Peak{Observed: peak, At: ev.At, Episode: true})
	}
	if p.At.IsZero() {
		p = Peak{ChangePct: ev.ChangePct, Observed: ev.Observed, Baseline: ev.Baseline, At: ev.At, Method: ev.BaselineMethod}
	}
	// The evidence and the episode's figures are in the alert's unit.
	p.Unit = ev.ObservedUnit
	return p
}

// number reads a detail that JSON may have made a float64 or Go left an
// int.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// Network is one affected network of an incident.
type Network struct {
	Entity string  `json:"entity"`
	Name   string  `json:"name"`
	Share  float64 `json:"share,omitempty"` // of the place's traffic the day before; 0 unknown
}

// Member is one member alert and its worst change.
type Member struct {
	alerting.Event
	Peak Peak `json:"peak"`
	// Sent are its notifications (firing, resolve), for its chart.
	Sent []alerting.Event `json:"-"`
}

// Page is one notification of an outage event: when, why (open, grow,
// resolve) and what it said.
type Page struct {
	At       time.Time `json:"at"`
	Update   string    `json:"update"`
	Revision int       `json:"revision"`
	Severity string    `json:"severity"`
	Title    string    `json:"title"`
	Summary  string    `json:"summary"`
	Muted    string    `json:"muted,omitempty"`
	// Changed says what this page says that the one before did not: the
	// place opened, what grew (signals, networks, severity, headline),
	// or that every member resolved.
	Changed string `json:"changed"`
	// Grew is what the correlation stage said a growth added, which is
	// why it paged ("scope + Euskaltel (AS12338)"); Changed begins with it.
	Grew []string `json:"grew,omitempty"`
	// FiguresAt is "paged" on a resolve whose figures are those the
	// member alerts fired with, "firing" otherwise.
	FiguresAt string `json:"figures_at,omitempty"`
}

// addSent adds an alert's notification to those kept for its chart: the
// first firing one and the latest, by status.
func addSent(sent []alerting.Event, ev alerting.Event) []alerting.Event {
	for i, e := range sent {
		if e.Status == ev.Status {
			if ev.Status == alerting.Resolved || ev.At.Before(e.At) {
				sent[i] = ev
			}
			return sent
		}
	}
	sent = append(sent, ev)
	slices.SortStableFunc(sent, func(a, b alerting.Event) int { return a.At.Compare(b.At) })
	return sent
}

// addPage adds an event's notification to its pages, once per revision,
// in revision order.
func addPage(pages []alerting.Event, ev alerting.Event) []alerting.Event {
	if slices.ContainsFunc(pages, func(p alerting.Event) bool { return p.Revision == ev.Revision }) {
		return pages
	}
	pages = append(pages, ev)
	slices.SortFunc(pages, func(a, b alerting.Event) int { return cmp.Compare(a.Revision, b.Revision) })
	return pages
}

// detail reads what an outage event o says, with its members' peaks and
// its pages.
func detail(o alerting.Event, alerts []alerting.Event, pages []alerting.Event, peaks map[string]Peak, sent map[string][]alerting.Event) Detail {
	d := Detail{Title: o.Title, PlaceEntity: o.Scope.Place, Cause: o.Cause, Impact: o.Impact, Share: o.Scope.Share,
		Members: members(alerts, peaks, sent)}
	d.Peaks = peakMap(d.Members)
	for _, e := range o.Scope.Entities {
		if strings.HasPrefix(e.Entity, "asn:") {
			d.Nets = append(d.Nets, Network{Entity: e.Entity, Name: cmp.Or(e.Name, e.Entity), Share: e.Share})
		}
	}
	d.Scope = scopeLabel(o)
	d.Type = outageType(o)
	for _, sc := range o.Signals {
		c := Change{Kind: sc.Kind, Signal: sc.Signal, Entity: sc.Entity, Alerts: sc.Alerts, NowPct: sc.ChangePct, NowObserved: sc.Observed, NowAt: nowAt(o),
			Peak: Peak{ChangePct: sc.ChangePct, Observed: sc.Observed, Baseline: sc.Baseline, Unit: sc.ObservedUnit, At: sc.Start}}
		c.Firing = c.NowAt == "firing"
		c.Name = sc.Entity
		for _, m := range d.Members {
			if m.Signal == sc.Signal && m.Entity == sc.Entity {
				c.Peak, c.NowPct, c.NowObserved, c.Firing = m.Peak, m.ChangePct, m.Observed, m.Status == alerting.Firing
				c.NowAt = "resolve"
				if c.Firing {
					c.NowAt = "firing"
				} else if why := notJudged(m.Event); why != "" {
					c.NowAt = why
				}
				c.Name = cmp.Or(m.Labels["display"], c.Name)
			}
		}
		if sc.Entity == o.Scope.Place {
			c.Name = cmp.Or(o.Scope.Name, c.Name)
		}
		d.Changes = append(d.Changes, c)
	}
	if len(pages) == 0 {
		pages = []alerting.Event{o}
	}
	for i, p := range pages {
		var prev *alerting.Event
		if i > 0 {
			prev = &pages[i-1]
		}
		pg := Page{At: p.At, Update: cmp.Or(p.Update, "open"), Revision: p.Revision, Severity: p.Severity,
			Title: p.Title, Summary: p.Summary, Muted: p.Muted, Changed: changed(prev, p)}
		if p.Outage != nil {
			pg.Grew, pg.FiguresAt = p.Grew, p.FiguresAt
		}
		d.Pages = append(d.Pages, pg)
	}
	return d
}

// changed says what page p says beyond prev, the page before it. A
// growth says first why it paged, as the correlation stage said it
// (Grew: "scope + Euskaltel (AS12338)"), then what else differs that
// Grew does not cover ("also new signals: median bandwidth", a new
// headline, more member alerts); a page from before events carried Grew
// says what differs alone. A resolve whose figures are those paged says
// so, lest its figures read as the level traffic recovered to.
func changed(prev *alerting.Event, p alerting.Event) string {
	if p.Outage == nil {
		return ""
	}
	if prev == nil || prev.Outage == nil {
		return "opened: " + cmp.Or(p.Title, p.Scope.Name)
	}
	if p.Status == alerting.Resolved {
		if p.FiguresAt == "paged" {
			return "every member alert resolved; its figures are those paged, not the level at resolve"
		}
		return "every member alert resolved"
	}
	grewHas := func(prefix string) bool {
		return slices.ContainsFunc(p.Grew, func(g string) bool { return strings.HasPrefix(g, prefix) })
	}
	var parts []string
	if p.Severity != prev.Severity && !grewHas("severity ") {
		parts = append(parts, "severity "+prev.Severity+" → "+p.Severity)
	}
	if p.Title != prev.Title {
		parts = append(parts, "now "+p.Title+" (was "+prev.Title+")")
	}
	var sigs []string
	for _, s := range p.Signals {
		if slices.ContainsFunc(prev.Signals, func(q alerting.SignalChange) bool { return q.Signal == s.Signal }) {
			continue
		}
		newKind := !slices.ContainsFunc(prev.Signals, func(q alerting.SignalChange) bool { return q.Kind == s.Kind })
		if newKind && grewHas("seen in + ") {
			continue // Grew names its kind
		}
		sigs = append(sigs, alerting.SignalWords(s.Signal))
	}
	if len(sigs) > 0 {
		parts = append(parts, "new signals: "+strings.Join(sigs, ", "))
	}
	var nets []string
	for _, e := range p.Scope.Entities {
		if !slices.ContainsFunc(prev.Scope.Entities, func(q alerting.ScopeEntity) bool { return q.Entity == e.Entity }) {
			nets = append(nets, cmp.Or(e.Name, e.Entity))
		}
	}
	if len(nets) > 0 && !grewHas("scope + ") {
		parts = append(parts, "new in scope: "+strings.Join(nets, ", "))
	}
	if n, m := len(p.Members), len(prev.Members); n > m {
		parts = append(parts, fmt.Sprintf("%d more member %s (%d)", n-m, plural(n-m, "alert", "alerts"), n))
	}
	switch {
	case len(p.Grew) > 0 && len(parts) > 0:
		return strings.Join(p.Grew, "; ") + "; also " + strings.Join(parts, "; ")
	case len(p.Grew) > 0:
		return strings.Join(p.Grew, "; ")
	case len(parts) == 0:
		return fmt.Sprintf("impact %.2f → %.2f", prev.Impact, p.Impact)
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// peakMap is the members' peaks by alert ID.
func peakMap(ms []Member) map[string]Peak {
	out := make(map[string]Peak, len(ms))
	for _, m := range ms {
		out[m.ID] = m.Peak
	}
	return out
}

// members pairs alerts with their peaks, in start order.
func members(alerts []alerting.Event, peaks map[string]Peak, sent map[string][]alerting.Event) []Member {
	out := make([]Member, 0, len(alerts))
	for _, a := range alerts {
		p, ok := peaks[episode(a)]
		if !ok {
			p = peakOf(a)
		}
		out = append(out, Member{Event: a, Peak: p, Sent: sent[episode(a)]})
	}
	slices.SortStableFunc(out, func(a, b Member) int {
		return cmp.Or(a.Start.Compare(b.Start), strings.Compare(a.Entity, b.Entity), strings.Compare(a.Signal, b.Signal))
	})
	return out
}

// scopeLabel says how wide an event is, as outage centers label it:
// nationwide when the place itself fell (the event's headline is the
// place, and a series of the place itself is among its signals), regional
// when regions of it did, else network (Virgin Media's outage is a network
// one, though the country's routed space fell with it); a transit is a
// transit.
func scopeLabel(o alerting.Event) string {
	switch {
	case strings.HasPrefix(o.Scope.Place, "transit:"):
		return "transit"
	case !strings.HasPrefix(o.Scope.Place, "country:"):
		return "network"
	}
	whole, regional := false, false
	for _, e := range o.Scope.Entities {
		switch {
		case e.Entity == o.Scope.Place:
			whole = true
		case strings.HasPrefix(e.Entity, "region:"):
			regional = true
		}
	}
	switch {
	case whole && (o.Title == "" || o.Title == o.Scope.Name):
		return "nationwide"
	case regional:
		return "regional"
	}
	return "network"
}

// outageType names the kind of outage the cause points to. It reads the
// correlation stage's cause: many networks falling together is a power cut
// or a shutdown; routes withdrawn first, routing; failing zones, DNS.
func outageType(o alerting.Event) string {
	c := o.Cause
	switch {
	case strings.Contains(c, "power-like or a shutdown"):
		return "power outage or shutdown"
	case strings.HasPrefix(o.Scope.Place, "transit:"):
		return "transit loss"
	case strings.HasPrefix(c, "routes withdrawn"):
		return "routing"
	case strings.HasPrefix(c, "DNS failures"):
		return "DNS"
	}
	for _, s := range o.Signals {
		if s.Kind == "traffic" {
			return "traffic drop"
		}
	}
	if len(o.Signals) > 0 {
		return o.Signals[0].Kind
	}
	return ""
}

// covers says whether alert a is of the incident's place and time.
func (in Incident) covers(a alerting.Event) bool {
	if in.PlaceEntity == "" {
		return false
	}
	at := a.Entity == in.PlaceEntity || "country:"+a.Labels["country"] == in.PlaceEntity
	if !at {
		return false
	}
	if in.End != nil && a.Start.After(*in.End) {
		return false
	}
	return a.End == nil || !a.End.Before(in.Start)
}
