// Package score compares the alerts a replay raised with what a fixture
// says must fire: what was detected and how late, what was missed, what did
// not resolve, and every alert that should not have fired.
package score

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/scenario"
)

// Detection is an expectation that was met.
type Detection struct {
	Detector string        `json:"detector"`
	Signal   string        `json:"signal"`
	Entity   string        `json:"entity"`
	Onset    time.Time     `json:"onset"`
	FiredAt  time.Time     `json:"fired_at"`
	Delay    time.Duration `json:"delay_ns"`
	Resolved *time.Time    `json:"resolved_at,omitempty"`
}

// Miss is an expectation that was not met.
type Miss struct {
	Detector string    `json:"detector"`
	Entity   string    `json:"entity"`
	Onset    time.Time `json:"onset"`
	Reason   string    `json:"reason"`
}

// Result of one fixture.
type Result struct {
	Fixture string `json:"fixture"`
	// Rules names the rule set scored when two are compared.
	Rules    string           `json:"rules,omitempty"`
	Detected []Detection      `json:"detected"`
	Missed   []Miss           `json:"missed"`
	False    []alerting.Event `json:"false_alerts"`
	Allowed  int              `json:"allowed_alerts"`
	Events   int              `json:"events"`
	Stats    map[string]any   `json:"stats,omitempty"`
	Pass     bool             `json:"pass"`
}

// Score judges events (in emission order) against the spec's labels.
func Score(s *scenario.Spec, events []alerting.Event) Result {
	r := Result{Fixture: s.Name, Events: len(events), Detected: []Detection{}, Missed: []Miss{}, False: []alerting.Event{}}
	used := make([]bool, len(events))
	for _, x := range s.Expect {
		deadline := x.Onset.Add(time.Duration(x.Within))
		fired := -1
		for i, ev := range events {
			if ev.Status != alerting.Firing || !matches(x.Detector, x.Entity, x.Signal, ev) {
				continue
			}
			// An alert that fired a little before the labelled onset is
			// still the incident (published onsets are rounded).
			if ev.At.Before(x.Onset.Add(-30*time.Minute)) || ev.At.After(deadline) {
				continue
			}
			fired = i
			break
		}
		if fired < 0 {
			r.Missed = append(r.Missed, Miss{x.Detector, x.Entity, x.Onset, fmt.Sprintf("no %s alert for %s between onset and onset+%s", x.Detector, x.Entity, time.Duration(x.Within))})
			continue
		}
		used[fired] = true
		ev := events[fired]
		d := Detection{Detector: x.Detector, Signal: ev.Signal, Entity: ev.Entity, Onset: x.Onset, FiredAt: ev.At, Delay: max(0, ev.At.Sub(x.Onset))}
		for i := fired + 1; i < len(events); i++ {
			if events[i].ID == ev.ID && events[i].Status == alerting.Resolved {
				at := events[i].At
				d.Resolved = &at
				used[i] = true
				break
			}
		}
		if !x.ResolveAfter.IsZero() {
			hi := x.ResolveAfter.Add(time.Duration(x.ResolveWithin))
			if d.Resolved == nil || d.Resolved.Before(x.ResolveAfter) || d.Resolved.After(hi) {
				got := "never"
				if d.Resolved != nil {
					got = d.Resolved.Format(time.RFC3339)
				}
				r.Missed = append(r.Missed, Miss{x.Detector, x.Entity, x.Onset,
					fmt.Sprintf("resolve expected between %s and %s, got %s", x.ResolveAfter.Format(time.RFC3339), hi.Format(time.RFC3339), got)})
			}
		}
		r.Detected = append(r.Detected, d)
	}
	// Every other firing alert is false unless allowed; resolves of used or
	// allowed alerts are not counted again.
	allowedIDs := map[string]bool{}
	for i, ev := range events {
		if used[i] || ev.Status != alerting.Firing {
			continue
		}
		if allowed(s, ev) {
			r.Allowed++
			allowedIDs[ev.ID] = true
			continue
		}
		expectedID := false
		for j := range events {
			if used[j] && events[j].ID == ev.ID {
				expectedID = true // a re-fire of an expected alert
			}
		}
		if expectedID {
			r.Allowed++
			continue
		}
		r.False = append(r.False, ev)
	}
	r.Pass = len(r.Missed) == 0 && len(r.False) == 0
	return r
}

func matches(detector, entity, signal string, ev alerting.Event) bool {
	return ev.Detector == detector && scenario.EntityMatches(entity, ev.Entity) && (signal == "" || signal == ev.Signal)
}

func allowed(s *scenario.Spec, ev alerting.Event) bool {
	for _, a := range s.Allow {
		if (a.Detector == "" || a.Detector == ev.Detector) && scenario.EntityMatches(a.Entity, ev.Entity) &&
			(a.From.IsZero() || !ev.At.Before(a.From)) && (a.To.IsZero() || !ev.At.After(a.To)) {
			return true
		}
	}
	return false
}

// Print writes a human summary of results.
func Print(w io.Writer, rs []Result) {
	for _, r := range rs {
		verdict := "PASS"
		if !r.Pass {
			verdict = "FAIL"
		}
		name := r.Fixture
		if r.Rules != "" {
			name += " [rules " + r.Rules + "]"
		}
		fmt.Fprintf(w, "%s %s: %d detected, %d missed, %d false, %d allowed, %d events\n",
			verdict, name, len(r.Detected), len(r.Missed), len(r.False), r.Allowed, r.Events)
		for _, d := range r.Detected {
			res := "not resolved"
			if d.Resolved != nil {
				res = "resolved " + d.Resolved.Format(time.RFC3339)
			}
			fmt.Fprintf(w, "  detected  %-17s %-17s %-20s onset %s fired %s delay %s, %s\n", d.Detector, d.Signal, d.Entity,
				d.Onset.Format(time.RFC3339), d.FiredAt.Format(time.RFC3339), d.Delay, res)
		}
		for _, m := range r.Missed {
			fmt.Fprintf(w, "  MISSED    %-17s %-20s %s\n", m.Detector, m.Entity, m.Reason)
		}
		for _, f := range r.False {
			fmt.Fprintf(w, "  FALSE     %-17s %-17s %-20s at %s %s\n", f.Detector, f.Signal, f.Entity, f.At.Format(time.RFC3339), strings.TrimSpace(f.Summary))
		}
	}
}
