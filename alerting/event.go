// Package alerting turns detector findings into alert events with a stable
// identity and a lifecycle (firing, then resolved), deduplicates them, and
// delivers them to sinks (JSON lines, webhooks, Slack) through a persisted
// outbox so that a sink that is down gets its alerts when it is back.
package alerting

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Status of an alert.
const (
	Firing   = "firing"
	Resolved = "resolved"
)

// Event is one alert notification: the JSON line that replay prints and the
// body a webhook receives. Field order and names are the public format.
type Event struct {
	ID       string            `json:"id"`
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
	// BaselineMethod says what the baseline was computed from
	// ("similar_days", "previous_weeks", "previous_day", ...).
	BaselineMethod string  `json:"baseline_method,omitempty"`
	ChangePct      float64 `json:"change_pct"`
	// Confidence says how far past its threshold a firing change is, from
	// 0.5 (just at it) towards 1; Reason why a resolve happened
	// ("recovered", or "baseline_adapted": a lasting new level became the
	// baseline).
	Confidence float64  `json:"confidence,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Severity   string   `json:"severity"`
	Summary    string   `json:"summary,omitempty"`
	Actions    []string `json:"actions"`
	// Details carries detector-specific evidence: affected destinations,
	// sites, prefixes.
	Details map[string]any `json:"details,omitempty"`
	// Evidence is the bucket values the detector looked at, oldest first.
	Evidence []Point `json:"evidence,omitempty"`
	// Receivers names the sinks this event goes to; empty means all.
	Receivers []string `json:"-"`
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
