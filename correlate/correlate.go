// Package correlate is the stage between the detectors' alerts and the
// sinks that turns the alerts of one incident into one outage event, in the
// spirit of Alertmanager's grouping but by place and time rather than by
// label: a country with its regions and networks, a network with its zones,
// a transit at its sites. People get one page per outage, with its scope,
// signals, likely cause, impact-based severity and a confidence that grows
// with independent confirming signals; the member alerts stay recorded.
//
// The stage runs in event time (no wall clock), so replay gives the same
// events as the live service did.
package correlate

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/rules"
)

// Muter says whether an alert pages nobody, and why (a silence). A muted
// alert is recorded but joins no event.
type Muter interface {
	Mutes(ev *alerting.Event) (reason string, muted bool)
}

// Config of a Correlator.
type Config struct {
	Map *netmap.Map
	// Level returns the value of a series in the bucket starting at t (a
	// history lookup), used to weigh a network's share of its country's
	// traffic. Nil leaves shares unknown.
	Level func(signal, entity string, t time.Time) (float64, bool)
	// Severity maps impact to severity (see Impact); the rules' severity:
	// block, through FromRules. Zero fields take DefaultThresholds.
	Severity Thresholds
	// ZoneOwners maps a DNS zone to the network whose outage it belongs
	// to ("virginmedia.com" → 5089). Zones not listed are matched by name
	// against the networks in the map.
	ZoneOwners map[string]uint32
	// Mute holds silences; feed-fault inhibition is built in.
	Mute []Muter
	// MutedBefore says the alerts were muted before Add (the pipeline's
	// mute stages): Add then applies neither Mute nor feed-fault
	// inhibition, keeps no state for them, and an alert that arrives with
	// Muted set joins no event, firing or resolved.
	MutedBefore bool
	// GroupWait holds an event's first page this long in event time after
	// its first alert, as Alertmanager's group_wait holds a group's, so
	// that the page names the place as the other views fill it in rather
	// than the first network whose routes moved. Zero takes
	// DefaultGroupWait; a negative wait pages at once. Later pages are
	// not held: growth pages as soon as a bucket shows it.
	GroupWait time.Duration
}

// DefaultGroupWait is two five-minute buckets. The routing rules fire on
// the first bucket that shows a change (for: 5m) while the traffic and
// DNS rules confirm over two (for: 10m, rules/default/10-traffic.yaml and
// 20-dns.yaml), and a cut in the middle of a bucket shows in full in the
// routing table at the bucket's end but only in part in that bucket's
// traffic, so a drop's first whole bucket of traffic is often the next
// one. From the first routing alert, the volume rules can therefore need
// one bucket for the partial bucket and one more for their longer for:
// ten minutes is the longest a first page waits for the traffic view of
// the same cut.
const DefaultGroupWait = 10 * time.Minute

// Thresholds map an event's impact (drop × share × duration factor, each
// 0..1) to a severity. FullAfter is the duration at which the duration
// factor reaches 1. They are set in the rules (rules.EventSeverity).
type Thresholds struct {
	Warning   float64       `yaml:"warning"`
	Critical  float64       `yaml:"critical"`
	FullAfter time.Duration `yaml:"full_after"`
}

// DefaultThresholds are the shipped rules' severity block
// (rules/default/50-events.yaml, where they are explained; a test holds
// the two equal), for a correlator built without rules.
var DefaultThresholds = Thresholds{Warning: 0.05, Critical: 0.25, FullAfter: 30 * time.Minute}

// FromRules returns the thresholds a rules set's severity block sets, each
// non-zero field of override in its place: the service configuration's
// correlation.severity, which predates the block and still overrides it.
// A nil block (a set built in code) takes DefaultThresholds.
func FromRules(sev *rules.EventSeverity, override Thresholds) (Thresholds, error) {
	t, where := DefaultThresholds, "the default event severity"
	if sev != nil {
		t = Thresholds{Warning: sev.Warning, Critical: sev.Critical, FullAfter: sev.FullAfter}
		where = fmt.Sprintf("the severity block at %s:%d", sev.File, sev.Line)
	}
	if override.Warning > 0 {
		t.Warning = override.Warning
	}
	if override.Critical > 0 {
		t.Critical = override.Critical
	}
	if override.FullAfter > 0 {
		t.FullAfter = override.FullAfter
	}
	if t.Critical <= t.Warning {
		return t, fmt.Errorf("event severity: critical %g not above warning %g once correlation.severity overrides %s", t.Critical, t.Warning, where)
	}
	return t, nil
}

func (t Thresholds) withDefaults() Thresholds {
	if t.Warning <= 0 {
		t.Warning = DefaultThresholds.Warning
	}
	if t.Critical <= 0 {
		t.Critical = DefaultThresholds.Critical
	}
	if t.FullAfter <= 0 {
		t.FullAfter = DefaultThresholds.FullAfter
	}
	return t
}

// Severity returns info, warning or critical for impact.
func (t Thresholds) Severity(impact float64) string {
	t = t.withDefaults()
	switch {
	case impact >= t.Critical:
		return "critical"
	case impact >= t.Warning:
		return "warning"
	}
	return "info"
}

// Correlator groups alerts into outage events. Not safe for concurrent use;
// the pipeline's goroutine owns it.
type Correlator struct {
	cfg Config
	st  state
}

// state is everything a checkpoint keeps.
type state struct {
	Open map[string]*incident
	// ByAlert maps a firing member alert to its event.
	ByAlert map[string]string
	// Faults are the firing feed-fault alerts, by alert ID → feed name.
	Faults map[string]string
	// Muted maps a muted firing alert to the reason, so its resolve is
	// muted too.
	Muted   map[string]string
	Changed map[string]bool
	// Recent are the last resolved events, newest last, so an event's
	// page still answers after it is over.
	Recent []alerting.Event
}

// keepRecent bounds State.Recent.
const keepRecent = 200

type incident struct {
	ID    string
	Place string
	// First is the event time of its first alert; the first page waits
	// until First + GroupWait.
	First   time.Time
	Members map[string]*alerting.Event
	// Joined lists member IDs in the order they joined.
	Joined []string
	// Notified is what the last notification said, to tell growth.
	Revision    int
	NotEntities int
	NotKinds    int
	NotSeverity int
	// PeakImpact is the highest impact the event reached, judged every
	// bucket.
	PeakImpact float64
	// NotScope and NotKindList are the entities and signal kinds the
	// last notification named, so a growth says what is new.
	NotScope     []string
	NotKindList  []string
	LastEvent    *alerting.Event
	ResolvedSent bool
}

// New returns a correlator.
func New(cfg Config) *Correlator {
	cfg.Severity = cfg.Severity.withDefaults()
	if cfg.GroupWait == 0 {
		cfg.GroupWait = DefaultGroupWait
	}
	if cfg.Map == nil {
		cfg.Map = netmap.New()
	}
	return &Correlator{cfg: cfg, st: state{Open: map[string]*incident{}, ByAlert: map[string]string{},
		Faults: map[string]string{}, Muted: map[string]string{}, Changed: map[string]bool{}}}
}

// SetSeverity changes the impact thresholds from the next notification
// on (a rules reload): events already paged keep the severity they were
// paged with until their figures are worked out again.
func (c *Correlator) SetSeverity(t Thresholds) {
	c.cfg.Severity = t.withDefaults()
}

// Add takes one alert (firing or resolved) as the alert manager emits it,
// before it goes to the sinks: it sets ev.OutageEvent to the event it joins
// or ev.Muted to why it pages nobody.
func (c *Correlator) Add(ev *alerting.Event) {
	if ev.Detector == "feed_health" {
		if !c.cfg.MutedBefore {
			c.feedFault(ev)
		}
		return
	}
	if c.cfg.MutedBefore && ev.Muted != "" {
		return
	}
	if ev.Status == alerting.Resolved {
		if why, ok := c.st.Muted[ev.ID]; ok {
			ev.Muted = why
			delete(c.st.Muted, ev.ID)
			return
		}
		id, ok := c.st.ByAlert[ev.ID]
		if !ok {
			return
		}
		delete(c.st.ByAlert, ev.ID)
		inc := c.st.Open[id]
		if inc == nil {
			return
		}
		ev.OutageEvent = id
		// The member keeps the values it fired with: a resolved event
		// reports how bad it got, not the recovered level.
		cp := *ev
		if prev := inc.Members[ev.ID]; prev != nil {
			cp = *prev
			cp.Status, cp.End = alerting.Resolved, ev.End
		}
		inc.Members[ev.ID] = &cp
		c.st.Changed[id] = true
		return
	}
	place := c.Label(ev)
	if !c.cfg.MutedBefore {
		if why, ok := c.mutes(ev); ok {
			ev.Muted = why
			c.st.Muted[ev.ID] = why
			return
		}
	}
	var inc *incident
	for _, id := range slices.Sorted(maps.Keys(c.st.Open)) {
		o := c.st.Open[id]
		if o.Place == place && o.firing() > 0 {
			inc = o
			break
		}
	}
	if inc == nil {
		id := alerting.AlertID("outage", place, ev.Start.UTC().Format(time.RFC3339))
		if old := c.st.Open[id]; old != nil {
			// The same place failing again from the same bucket after
			// its event resolved in this very bucket: keep the id unique.
			id = alerting.AlertID("outage", place, ev.At.UTC().Format(time.RFC3339Nano))
		}
		inc = &incident{ID: id, Place: place, First: ev.At, Members: map[string]*alerting.Event{}}
		c.st.Open[id] = inc
	}
	ev.OutageEvent = inc.ID
	cp := *ev
	if _, seen := inc.Members[ev.ID]; !seen {
		inc.Joined = append(inc.Joined, ev.ID)
	}
	inc.Members[ev.ID] = &cp
	c.st.ByAlert[ev.ID] = inc.ID
	c.st.Changed[inc.ID] = true
}

// Label gives a firing alert the country of the place it belongs to, as
// its "country" label when it has none: a zone learns its network's
// country, so that a silence or a route on country covers it too. It
// returns the place. Add labels every alert it takes; mute stages that
// run before it call Label first.
func (c *Correlator) Label(ev *alerting.Event) string {
	place := c.place(ev.Entity)
	if cc, ok := strings.CutPrefix(place, "country:"); ok && ev.Labels["country"] == "" {
		if ev.Labels == nil {
			ev.Labels = map[string]string{}
		}
		ev.Labels["country"] = cc
	}
	return place
}

// TakeMutes returns, and forgets, the firing feed faults (alert ID →
// feed) and the muted alerts (alert ID → why) of a checkpoint written
// while the correlator muted alerts itself, for the mute stages that do
// it now (Config.MutedBefore).
func (c *Correlator) TakeMutes() (faults, muted map[string]string) {
	faults, muted = c.st.Faults, c.st.Muted
	c.st.Faults, c.st.Muted = map[string]string{}, map[string]string{}
	return faults, muted
}

func (inc *incident) firing() int {
	n := 0
	for _, m := range inc.Members {
		if m.Status == alerting.Firing {
			n++
		}
	}
	return n
}

func (c *Correlator) mutes(ev *alerting.Event) (string, bool) {
	for _, m := range c.cfg.Mute {
		if why, ok := m.Mutes(ev); ok {
			return why, true
		}
	}
	// A feed fault explains the outage alerts of signals from its feed:
	// the detectors hold their state when a feed is silent, but a partial
	// fault (a collector losing half its peers) can still move a series.
	feed := feedOf(ev.Signal)
	if feed == "" {
		return "", false
	}
	for _, id := range slices.Sorted(maps.Keys(c.st.Faults)) {
		if c.st.Faults[id] == feed {
			return "feed fault " + id, true
		}
	}
	return "", false
}

func (c *Correlator) feedFault(ev *alerting.Event) {
	_, id, _ := strings.Cut(ev.Entity, ":")
	feed, _, _ := strings.Cut(id, "@")
	if ev.Status == alerting.Firing {
		c.st.Faults[ev.ID] = feed
	} else {
		delete(c.st.Faults, ev.ID)
	}
}

// Flush ends one closed bucket at event time at: it returns the event
// notifications due (an event opened, grew in scope, signals or severity,
// or resolved), in a stable order. Severity is re-judged every bucket, so
// an event escalates as it lasts.
func (c *Correlator) Flush(at time.Time) []*alerting.Event {
	var out []*alerting.Event
	for _, id := range c.order() {
		inc := c.st.Open[id]
		ev := c.build(inc, at)
		inc.PeakImpact = ev.PeakImpact
		firing := inc.firing()
		ents, kinds, sev := len(ev.Scope.Entities), len(ev.Signals), sevRank(ev.Severity)
		if sev < inc.NotSeverity {
			// A page never walks back: an event keeps the highest
			// severity it was sent with until it resolves, so a member
			// that joins and re-weighs the impact down (a network's
			// traffic alert beside its routing one) does not read as
			// the outage easing, and the resolve carries the peak.
			sev = inc.NotSeverity
			ev.Severity = severityNames[sev]
		}
		switch {
		case firing == 0:
			if inc.Revision > 0 {
				ev.Status, ev.Update = alerting.Resolved, "resolve"
				var end time.Time
				for _, m := range inc.Members {
					if m.End != nil && m.End.After(end) {
						end = *m.End
					}
				}
				if end.IsZero() {
					end = ev.At
				}
				ev.End = &end
				inc.Revision++
				ev.Revision = inc.Revision
				out = append(out, ev)
				c.st.Recent = append(c.st.Recent, *ev)
				if n := len(c.st.Recent) - keepRecent; n > 0 {
					c.st.Recent = slices.Delete(c.st.Recent, 0, n)
				}
			}
			delete(c.st.Open, id)
		case inc.Revision == 0 && at.Before(inc.First.Add(c.cfg.GroupWait)):
			// Held: its place may still fill in.
		case inc.Revision == 0:
			ev.Update = "open"
		case ents > inc.NotEntities || kinds > inc.NotKinds || sev > inc.NotSeverity:
			ev.Update = "grow"
			ev.Grew = c.grew(inc, ev, sev)
		}
		if firing > 0 {
			inc.LastEvent = ev
		}
		if firing == 0 || ev.Update == "" {
			// Between notifications the API shows the event as it
			// stands, under the revision last sent.
			ev.Revision = inc.Revision
			continue
		}
		inc.Revision++
		ev.Revision = inc.Revision
		inc.NotEntities, inc.NotKinds, inc.NotSeverity = ents, kinds, sev
		inc.NotScope, inc.NotKindList = scopeIDs(ev), ev.Kinds()
		out = append(out, ev)
	}
	clear(c.st.Changed)
	return out
}

// grew says what a growth adds to the last page: the severity it rose
// from, the entities and the signal kinds that are new.
func (c *Correlator) grew(inc *incident, ev *alerting.Event, sev int) []string {
	var out []string
	if sev > inc.NotSeverity && inc.NotSeverity > 0 {
		out = append(out, "severity "+severityNames[inc.NotSeverity]+" → "+ev.Severity)
	}
	var names []string
	for _, e := range ev.Scope.Entities {
		if !slices.Contains(inc.NotScope, e.Entity) {
			names = append(names, e.Name)
		}
	}
	if len(names) > 0 {
		out = append(out, "scope + "+strings.Join(names, ", "))
	}
	var ks []string
	for _, k := range ev.Kinds() {
		if !slices.Contains(inc.NotKindList, k) {
			ks = append(ks, k)
		}
	}
	if len(ks) > 0 {
		out = append(out, "seen in + "+strings.Join(ks, ", "))
	}
	return out
}

func scopeIDs(ev *alerting.Event) []string {
	out := make([]string, len(ev.Scope.Entities))
	for i, e := range ev.Scope.Entities {
		out[i] = e.Entity
	}
	return out
}

// order is the open events by start, then ID.
func (c *Correlator) order() []string {
	ids := slices.Sorted(maps.Keys(c.st.Open))
	slices.SortStableFunc(ids, func(a, b string) int {
		return c.start(c.st.Open[a]).Compare(c.start(c.st.Open[b]))
	})
	return ids
}

func (c *Correlator) start(inc *incident) time.Time {
	var s time.Time
	for _, id := range inc.Joined {
		if m := inc.Members[id]; s.IsZero() || m.Start.Before(s) {
			s = m.Start
		}
	}
	return s
}

// Active returns the open events as of the last bucket, oldest first.
func (c *Correlator) Active() []alerting.Event {
	var out []alerting.Event
	for _, id := range c.order() {
		if ev := c.st.Open[id].LastEvent; ev != nil && c.st.Open[id].Revision > 0 {
			out = append(out, *ev)
		}
	}
	return out
}

// Event returns an open event as of the last bucket, or one of the last
// resolved ones.
func (c *Correlator) Event(id string) (alerting.Event, bool) {
	if inc := c.st.Open[id]; inc != nil && inc.LastEvent != nil && inc.Revision > 0 {
		return *inc.LastEvent, true
	}
	for i := len(c.st.Recent) - 1; i >= 0; i-- {
		if c.st.Recent[i].ID == id {
			return c.st.Recent[i], true
		}
	}
	return alerting.Event{}, false
}

func sevRank(s string) int { return alerting.SeverityRank(s) }

// severityNames inverts sevRank.
var severityNames = [...]string{"", "info", "warning", "critical"}

// MarshalBinary checkpoints the open events.
func (c *Correlator) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&c.st); err != nil {
		return nil, fmt.Errorf("correlate: checkpoint: %w", err)
	}
	return b.Bytes(), nil
}

// UnmarshalBinary restores open events.
func (c *Correlator) UnmarshalBinary(b []byte) error {
	st := state{}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&st); err != nil {
		return fmt.Errorf("correlate: restore: %w", err)
	}
	for _, m := range []*map[string]string{&st.ByAlert, &st.Faults, &st.Muted} {
		if *m == nil {
			*m = map[string]string{}
		}
	}
	if st.Open == nil {
		st.Open = map[string]*incident{}
	}
	if st.Changed == nil {
		st.Changed = map[string]bool{}
	}
	c.st = st
	return nil
}
