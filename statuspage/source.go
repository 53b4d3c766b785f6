// Package statuspage serves a read-only outage page in the manner of an
// outage center (Radar's, IODA's): the incidents going on now and those
// ended in a chosen range, and a page per incident that says how bad (each
// signal's worst change and its latest), why (impact, likely cause, type),
// how wide (scope label, networks and their traffic shares), what was sent
// (its pages), with one chart overlaying every signal of the place as a
// share of its baseline, then each signal's chart. The list updates itself
// by polling a small JSON endpoint; the pages use no script, font or image
// from elsewhere, so they work on an isolated network and read well on a
// phone.
//
// What it shows comes through Source, one small interface. Store, the one
// the service and replay use, shows the correlation stage's outage events
// as incidents, and groups by place whatever alerts belong to no event.
// IncidentHTML renders one incident; the report (package report) uses it
// too, so the review reads like the page.
package statuspage

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/netmap"
)

// Incident is one outage as the page shows it.
type Incident struct {
	ID    string `json:"id"`
	Place string `json:"place"` // "Uganda", "MTN Uganda (AS20294)"
	// Networks and Signals are what the member alerts name.
	Networks []string   `json:"networks"`
	Signals  []string   `json:"signals"`
	Start    time.Time  `json:"start"`
	End      *time.Time `json:"end"` // nil while any member fires
	Severity string     `json:"severity"`
	// Confidence grows with independent signals that agree (0..1).
	Confidence float64          `json:"confidence"`
	Silenced   bool             `json:"silenced"`
	Alerts     []alerting.Event `json:"alerts"` // the latest event of each member

	// What the correlation stage judged of an outage event (empty for
	// alerts grouped by place alone): see incident.go.
	Detail
}

// Active reports whether the incident is going on.
func (in Incident) Active() bool { return in.End == nil }

// Duration is how long the incident lasted, or has lasted at now.
func (in Incident) Duration(now time.Time) time.Duration {
	if in.End != nil {
		return in.End.Sub(in.Start)
	}
	return now.Sub(in.Start)
}

// Source gives the page its incidents and the time they are judged at.
type Source interface {
	// Incidents returns active incidents first (newest first), then recent
	// ones (most recently ended first).
	Incidents() []Incident
	// Now is the time of the data: the watermark live, the end of a
	// replay.
	Now() time.Time
}

// Charts draws the chart of an alert's series over its incident; nil when
// nothing was recorded. The Chart method of chart/recorder's Recorder is one.
type Charts interface {
	Chart(series string, evs []alerting.Event) *chart.Chart
}

// Store keeps the latest event of every alert it is sent, as an
// alerting.Sink, and groups them into incidents by place: alerts whose
// entity is in the same country (a country, its regions, its networks) and
// whose spans overlap are one incident. It is safe for concurrent use.
type Store struct {
	mu     sync.RWMutex
	alerts map[string]alerting.Event
	// outages holds the latest notification of each outage event, pages
	// every notification of it, in revision order (its timeline).
	outages map[string]alerting.Event
	pages   map[string][]alerting.Event
	// peaks holds each alert's worst change over its life, sent its
	// firing notification and its resolve.
	peaks map[string]Peak
	sent  map[string][]alerting.Event
	now   time.Time
	// Recent is how long an ended incident stays listed; a day when 0.
	Recent time.Duration
	// Active, when set, gives the alerts firing now, from the pipeline:
	// they are listed even if this store was attached after they fired.
	Active func() []alerting.Event
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{alerts: map[string]alerting.Event{}, outages: map[string]alerting.Event{},
		pages: map[string][]alerting.Event{}, peaks: map[string]Peak{}, sent: map[string][]alerting.Event{}}
}

// Name is the sink name.
func (s *Store) Name() string { return "statuspage" }

// Send records ev.
func (s *Store) Send(_ context.Context, ev *alerting.Event) error {
	s.Add(*ev)
	return nil
}

// Add records ev.
func (s *Store) Add(ev alerting.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	into, key := s.alerts, episode(ev)
	if ev.IsEvent() {
		into, key = s.outages, ev.ID
		s.pages[ev.ID] = addPage(s.pages[ev.ID], ev)
	} else {
		s.peaks[key] = s.peaks[key].worse(peakOf(ev))
		s.sent[key] = addSent(s.sent[key], ev)
	}
	if old, ok := into[key]; ok && (old.At.After(ev.At) || ev.IsEvent() && old.Revision > ev.Revision) {
		return // an older event delivered late
	}
	into[key] = ev
	if ev.At.After(s.now) {
		s.now = ev.At
	}
}

// Now is the time of the newest event.
func (s *Store) Now() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.now
}

// Incidents groups the stored alerts, see Store: those going on and those
// ended within Recent.
func (s *Store) Incidents() []Incident {
	recent := s.Recent
	if recent == 0 {
		recent = 24 * time.Hour
	}
	return s.Within(recent)
}

// Within is Incidents with those ended within d of the newest data; every
// incident the store holds when d is 0 or less.
func (s *Store) Within(d time.Duration) []Incident {
	s.mu.RLock()
	evs := slices.Collect(maps.Values(s.alerts))
	outs := slices.Collect(maps.Values(s.outages))
	pages := maps.Clone(s.pages)
	peaks := maps.Clone(s.peaks)
	sent := maps.Clone(s.sent)
	now := s.now
	s.mu.RUnlock()
	if s.Active != nil {
		seen := map[string]bool{}
		for _, e := range evs {
			seen[episode(e)] = true
		}
		for _, e := range s.Active() {
			if !seen[episode(e)] {
				evs = append(evs, e)
				if e.At.After(now) {
					now = e.At
				}
			}
		}
	}
	for _, e := range evs {
		if _, ok := peaks[episode(e)]; !ok {
			peaks[episode(e)] = peakOf(e) // firing before this store was attached
		}
	}
	out := build(outs, evs, pages, peaks, sent)
	if d <= 0 {
		return out
	}
	return slices.DeleteFunc(out, func(in Incident) bool { return in.End != nil && now.Sub(*in.End) > d })
}

// FromOutages makes an incident of each outage event (its title, scope,
// signals, severity and confidence as the correlation stage judged them,
// its member alerts from alerts), and groups by place the alerts that
// belong to no event (feed faults, muted alerts).
func FromOutages(outages, alerts []alerting.Event) []Incident {
	peaks := map[string]Peak{}
	for _, a := range alerts {
		peaks[episode(a)] = peaks[episode(a)].worse(peakOf(a))
	}
	latest := map[string]alerting.Event{}
	for _, a := range alerts {
		if old, ok := latest[episode(a)]; !ok || !old.At.After(a.At) {
			latest[episode(a)] = a
		}
	}
	return build(outages, slices.Collect(maps.Values(latest)), nil, peaks, nil)
}

// episode keys one episode of an alert: its ID stays the same each time
// the same rule fires on the same series (Virgin Media's two outages of
// one day), its start does not.
func episode(ev alerting.Event) string {
	return ev.ID + "@" + strconv.FormatInt(ev.Start.UnixNano(), 10)
}

// build is FromOutages with each event's pages and each alert's peak.
func build(outages, alerts []alerting.Event, pages map[string][]alerting.Event, peaks map[string]Peak, sent map[string][]alerting.Event) []Incident {
	byID := map[string][]alerting.Event{}
	for _, a := range alerts {
		byID[a.ID] = append(byID[a.ID], a)
	}
	var out []Incident
	inEvent := map[string]bool{}
	for _, o := range outages {
		if o.Outage == nil {
			continue
		}
		in := Incident{ID: o.ID, Place: cmp.Or(o.Title, o.Scope.Name, o.Entity), Start: o.Start, End: o.End,
			Severity: o.Severity, Confidence: o.Confidence, Silenced: o.Muted != ""}
		for _, e := range o.Scope.Entities {
			if strings.HasPrefix(e.Entity, "asn:") {
				in.Networks = append(in.Networks, cmp.Or(e.Name, e.Entity))
			}
		}
		seen := map[string]bool{}
		for _, sc := range o.Signals {
			if !seen[sc.Signal] {
				seen[sc.Signal] = true
				in.Signals = append(in.Signals, sc.Signal)
			}
		}
		for _, id := range o.Members {
			// The episode of the alert that is this event's: the one
			// that started within it.
			eps := byID[id]
			i := slices.IndexFunc(eps, func(a alerting.Event) bool {
				return !a.Start.Before(o.Start) && (o.End == nil || !a.Start.After(*o.End)) && !inEvent[episode(a)]
			})
			if i < 0 && len(eps) > 0 {
				// No episode started within the event's span as this
				// store saw it: the latest stands for it.
				i = slices.IndexFunc(eps, func(a alerting.Event) bool {
					return !slices.ContainsFunc(eps, func(b alerting.Event) bool { return b.Start.After(a.Start) })
				})
			}
			if i >= 0 {
				inEvent[episode(eps[i])] = true
				in.Alerts = append(in.Alerts, eps[i])
			}
		}
		in.Detail = detail(o, in.Alerts, pages[o.ID], peaks, sent)
		out = append(out, in)
	}
	var rest []alerting.Event
	for _, a := range alerts {
		if inEvent[episode(a)] {
			continue
		}
		// A muted alert of an event's place and time is shown with the
		// event, apart from its members, not as an incident of its own.
		if a.Muted != "" {
			if i := slices.IndexFunc(out, func(in Incident) bool { return in.covers(a) }); i >= 0 {
				out[i].Muted = append(out[i].Muted, Member{Event: a, Peak: peaks[episode(a)], Sent: sent[episode(a)]})
				continue
			}
		}
		rest = append(rest, a)
	}
	for _, in := range Group(rest) {
		in.Members = members(in.Alerts, peaks, sent)
		in.Peaks = peakMap(in.Members)
		out = append(out, in)
	}
	sortIncidents(out)
	return out
}

// place returns the key alerts are grouped by and its display name.
func place(ev alerting.Event) (key, name string) {
	if cc := ev.Labels["country"]; cc != "" {
		return "country:" + cc, countryDisplay(ev, cc)
	}
	if d := ev.Labels["display"]; d != "" {
		return ev.Entity, d
	}
	return ev.Entity, ev.Entity
}

func countryDisplay(ev alerting.Event, cc string) string {
	if ev.Entity == "country:"+cc && ev.Labels["display"] != "" {
		return ev.Labels["display"]
	}
	return netmap.CountryName(cc)
}

var severityRank = map[string]int{"info": 1, "warning": 2, "critical": 3}

// Group turns alert events (the latest of each alert) into incidents.
func Group(evs []alerting.Event) []Incident {
	slices.SortFunc(evs, func(a, b alerting.Event) int {
		return cmp.Or(a.Start.Compare(b.Start), strings.Compare(a.ID, b.ID))
	})
	type open struct {
		in   *Incident
		last time.Time // latest end of a member; zero while one fires
	}
	byPlace := map[string][]*open{}
	var all []*Incident
	for _, ev := range evs {
		key, name := place(ev)
		var hit *open
		for _, o := range byPlace[key] {
			if o.last.IsZero() || !ev.Start.After(o.last) {
				hit = o
				break
			}
		}
		if hit == nil {
			in := &Incident{Place: name, Start: ev.Start}
			hit = &open{in: in, last: ev.Start}
			byPlace[key] = append(byPlace[key], hit)
			all = append(all, in)
		}
		in := hit.in
		in.Alerts = append(in.Alerts, ev)
		if ev.Status == alerting.Firing || ev.End == nil {
			hit.last = time.Time{}
		} else if !hit.last.IsZero() && ev.End.After(hit.last) {
			hit.last = *ev.End
		}
		if name != in.Place && strings.HasPrefix(ev.Entity, "country:") {
			in.Place = name
		}
	}
	out := make([]Incident, 0, len(all))
	for _, in := range all {
		finish(in)
		out = append(out, *in)
	}
	sortIncidents(out)
	return out
}

// sortIncidents puts active incidents first (newest first), then ended
// ones (most recently ended first).
func sortIncidents(out []Incident) {
	slices.SortStableFunc(out, func(a, b Incident) int {
		switch {
		case a.Active() != b.Active():
			if a.Active() {
				return -1
			}
			return 1
		case a.Active():
			return b.Start.Compare(a.Start)
		default:
			return cmp.Or(b.End.Compare(*a.End), b.Start.Compare(a.Start))
		}
	})
}

// finish fills the incident's summary fields from its members.
func finish(in *Incident) {
	signals, nets := map[string]bool{}, map[string]bool{}
	kinds := map[string]bool{}
	var end time.Time
	firing := false
	h := sha256.New()
	for _, ev := range in.Alerts {
		h.Write([]byte(ev.ID))
		signals[ev.Signal] = true
		kinds[correlate.KindOf(ev.Signal)] = true
		if strings.HasPrefix(ev.Entity, "asn:") {
			n := ev.Labels["display"]
			if n == "" {
				n = ev.Entity
			}
			nets[n] = true
		}
		if severityRank[ev.Severity] > severityRank[in.Severity] {
			in.Severity = ev.Severity
		}
		if ev.Status == alerting.Firing || ev.End == nil {
			firing = true
		} else if ev.End.After(end) {
			end = *ev.End
		}
		if ev.Labels["silenced"] == "true" {
			in.Silenced = true
		}
	}
	if !firing {
		in.End = &end
	}
	in.ID = hex.EncodeToString(h.Sum(nil))[:16]
	in.Signals = slices.Sorted(maps.Keys(signals))
	in.Networks = slices.Sorted(maps.Keys(nets))
	// As sure as the outage events the correlator writes, by the same
	// count of independent views.
	in.Confidence = correlate.Confidence(kinds)
	slices.SortFunc(in.Alerts, func(a, b alerting.Event) int {
		return cmp.Or(a.Start.Compare(b.Start), strings.Compare(a.Entity, b.Entity), strings.Compare(a.Signal, b.Signal))
	})
}
