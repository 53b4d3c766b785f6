// Package alerting turns detector findings into alert events with a stable
// identity and a lifecycle (firing, then resolved), deduplicates them, and
// delivers them to sinks (JSON lines, webhooks, Slack) through a persisted
// outbox so that a sink that is down gets its alerts when it is back.
package alerting

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"
)

// Status of an alert.
const (
	Firing   = "firing"
	Resolved = "resolved"
)

// Kinds of notification. An alert is one detector's judgement of one series;
// an event is one outage: the alerts of one incident grouped by place and
// time (package correlate). Every JSON line says which it is.
const (
	KindAlert = "alert"
	KindEvent = "event"
)

// Event is one alert notification: the JSON line that replay prints and the
// body a webhook receives. Field order and names are the public format.
type Event struct {
	ID string `json:"id"`
	// Kind is KindAlert or KindEvent.
	Kind     string            `json:"kind"`
	Status   string            `json:"status"`
	Rule     string            `json:"rule"`
	Detector string            `json:"detector"`
	Signal   string            `json:"signal"`
	Entity   string            `json:"entity"`
	Labels   map[string]string `json:"labels,omitempty"`
	Start    time.Time         `json:"start"`
	End      *time.Time        `json:"end"`
	// At is the event time at which the pipeline knew: the close of the
	// bucket that made the detector fire or resolve. At minus Start is the
	// detection delay.
	At       time.Time `json:"at"`
	Observed float64   `json:"observed"`
	Baseline float64   `json:"baseline"`
	// ObservedUnit is the unit of Observed and Baseline: "bytes/300s" for
	// a count over a five-minute bucket, "ms", "Mbit/s", "ratio" (0..1),
	// "/24 prefixes" (see ObservedUnit).
	ObservedUnit string `json:"observed_unit,omitempty"`
	// BaselineMethod says what the baseline was computed from
	// ("similar_days", "previous_weeks", "previous_day", ...).
	BaselineMethod string  `json:"baseline_method,omitempty"`
	ChangePct      float64 `json:"change_pct"`
	// Reason says why a resolve happened: "baseline_adapted" (a lasting
	// new level became the baseline), "rule_removed" or "rule_changed"
	// (the rules, reloaded or at a restart, no longer judge it), or else
	// "recovered". How far past its
	// bar a firing alert is, is details.confidence; an outage event's own
	// confidence is Outage.Confidence.
	Reason string `json:"reason,omitempty"`
	// Threshold says what the rule fires on, in words.
	Threshold string   `json:"threshold,omitempty"`
	Severity  string   `json:"severity"`
	Summary   string   `json:"summary,omitempty"`
	Actions   []string `json:"actions"`
	// Details carries detector-specific evidence: affected destinations,
	// sites, prefixes.
	Details map[string]any `json:"details,omitempty"`
	// Evidence is the bucket values the detector looked at, oldest first.
	Evidence []Point `json:"evidence,omitempty"`
	// OutageEvent, on an alert, is the ID of the outage event it belongs
	// to: the event is what pages, the alert stays visible in the API.
	OutageEvent string `json:"event,omitempty"`
	// Muted says why this alert pages nobody: a silence ("silence <id>")
	// or a feed fault that explains it ("feed fault <alert id>"). A muted
	// alert is still recorded (JSON lines, the API) but joins no event.
	Muted string `json:"muted,omitempty"`
	// Outage is set on events (Kind KindEvent) only.
	*Outage
	// DeliveryKey identifies this notification (see DeliveryKey): the
	// same on every repeat, so a receiver drops what it already has. Set
	// by the sinks on what they write.
	DeliveryKey string `json:"delivery_key,omitempty"`
	// Receivers names the sinks this event goes to; empty means all.
	Receivers []string `json:"-"`
}

// Outage is what an outage event says beyond an alert: where, which
// signals, why, how sure, and which alerts it groups.
type Outage struct {
	// Title names what is out, for headlines: "Spain", or "Virgin Media
	// (AS5089) in United Kingdom" when the country as a whole is not.
	Title   string         `json:"title"`
	Scope   Scope          `json:"scope"`
	Signals []SignalChange `json:"signals"`
	// Cause is the likely cause where the data shows one, else empty.
	Cause string `json:"cause,omitempty"`
	// Confidence grows with independent confirming signal kinds (traffic,
	// DNS, routing, quality), from 0 to 1.
	Confidence float64 `json:"confidence"`
	// Impact is drop × share affected × duration factor (see
	// correlate.Impact); Severity is mapped from it.
	Impact float64 `json:"impact"`
	// PeakImpact is the highest impact the event reached, judged every
	// bucket; a resolve's severity is the peak severity.
	PeakImpact float64 `json:"peak_impact"`
	// FiguresAt says when the signals' figures (observed, baseline,
	// change) were taken: "firing" while the event fires, "paged" on a
	// resolve, whose figures are those the member alerts fired with, not
	// the recovered level.
	FiguresAt string `json:"figures_at"`
	// Members are the IDs of the alerts grouped, firing or resolved.
	Members []string `json:"members"`
	// Revision counts notifications of this event: 1 on open, one more
	// on each growth and on resolve. It is part of the delivery key, so a
	// growth is a new notification and a repeat of one is not.
	Revision int `json:"revision"`
	// Update says why this notification went out: "open", "grow" or
	// "resolve".
	Update string `json:"update"`
	// Grew, on a growth, says what is new since the last page: "severity
	// warning → critical", "scope + Euskaltel (AS12338)", "seen in +
	// quality".
	Grew []string `json:"grew,omitempty"`
}

// Scope is the place an outage event covers.
type Scope struct {
	// Place is the country ("country:ES"), the transit ("transit:1299") or,
	// for what no country is known of, the entity itself.
	Place string `json:"place"`
	Name  string `json:"name,omitempty"`
	// Entities are the affected entities, widest first.
	Entities []ScopeEntity `json:"entities"`
	// Share is the share of the place's traffic that the affected
	// networks carried before the event (1 when the whole country is
	// affected), 0 when unknown.
	Share float64 `json:"share,omitempty"`
	// Sites and Destinations are named for transit events.
	Sites        []string `json:"sites,omitempty"`
	Destinations []string `json:"destinations,omitempty"`
}

// ScopeEntity is one affected entity of an event.
type ScopeEntity struct {
	Entity string  `json:"entity"`
	Name   string  `json:"name,omitempty"`
	Share  float64 `json:"share,omitempty"`
}

// SignalChange is one signal kind of an event at its worst member.
type SignalChange struct {
	// Kind is traffic, dns, routing or quality.
	Kind     string  `json:"kind"`
	Signal   string  `json:"signal"`
	Entity   string  `json:"entity"`
	Detector string  `json:"detector"`
	Observed float64 `json:"observed"`
	Baseline float64 `json:"baseline"`
	// ObservedUnit is the unit of Observed and Baseline, as on an alert.
	ObservedUnit string    `json:"observed_unit,omitempty"`
	ChangePct    float64   `json:"change_pct"`
	Threshold    string    `json:"threshold,omitempty"`
	Start        time.Time `json:"start"`
	Alerts       int       `json:"alerts"`
}

// Kinds lists the signal kinds of an event (traffic, dns, routing,
// quality), each once, in its signals' order.
func (o *Outage) Kinds() []string {
	var out []string
	for _, s := range o.Signals {
		if !slices.Contains(out, s.Kind) {
			out = append(out, s.Kind)
		}
	}
	return out
}

// IsEvent says whether ev is an outage event rather than an alert.
func (ev *Event) IsEvent() bool { return ev.Kind == KindEvent }

// Paged says whether ev is something to page a person with: an outage
// event, or an alert that belongs to no event (a feed fault), and not
// muted. Alerts inside an event are recorded, not paged.
func (ev *Event) Paged() bool {
	if ev.Muted != "" {
		return false
	}
	return ev.IsEvent() || ev.OutageEvent == ""
}

// SeverityRank orders severities: info 1, warning 2, critical 3, anything
// else 0.
func SeverityRank(s string) int {
	switch s {
	case "info":
		return 1
	case "warning":
		return 2
	case "critical":
		return 3
	}
	return 0
}

// PagedAtLeast says whether ev pages (see Paged) at severity min or above.
// An event's resolve carries its peak severity, so a sink that got the
// growth that crossed min also gets the resolve, and one that got nothing
// gets no resolve either.
func (ev *Event) PagedAtLeast(min string) bool {
	return ev.Paged() && (min == "" || SeverityRank(ev.Severity) >= SeverityRank(min))
}

// Selector is implemented by sinks that take only some notifications; the
// dispatcher skips the rest for them. Sinks without it take everything.
type Selector interface {
	Wants(ev *Event) bool
}

// Point is one bucket value in an alert's evidence.
type Point struct {
	Time     time.Time `json:"t"`
	Value    *float64  `json:"v"`
	Baseline float64   `json:"b"`
}

// AlertID returns the stable ID of the alert that rule raises for entity on
// signal: the same incident keeps the same ID across restarts and instances.
func AlertID(rule, signal, entity string) string {
	h := sha256.Sum256([]byte(rule + "\x00" + signal + "\x00" + entity))
	return hex.EncodeToString(h[:8])
}

// Sink delivers events. Send returns an error when the event was not
// delivered and should be retried; the outbox retries with backoff.
type Sink interface {
	Name() string
	Send(ctx context.Context, ev *Event) error
}
