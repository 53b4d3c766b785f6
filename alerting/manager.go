package alerting

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/rules"
)

// Manager gives findings their alert identity and lifecycle: a firing
// finding for an alert already firing is a duplicate and is dropped, a
// resolve for an alert not firing is dropped, and the set of active alerts
// is what /api/v1/alerts shows and what a checkpoint keeps.
type Manager struct {
	Map    *netmap.Map
	active map[string]*Event
}

// NewManager returns a manager that labels entities from m (may be nil).
func NewManager(m *netmap.Map) *Manager {
	return &Manager{Map: m, active: map[string]*Event{}}
}

// Handle turns a finding of rule r into an event, or returns nil when the
// finding changes nothing.
func (m *Manager) Handle(r *rules.Rule, f detectors.Finding) *Event {
	ruleName, severity := "", "warning"
	var receivers []string
	var labels map[string]string
	if r != nil {
		ruleName, severity, receivers = r.Name, r.Severity, r.Receivers
		labels = maps.Clone(r.Labels)
	}
	if f.Unstable {
		// De-rated: a series oscillating around its bar is news, not an
		// outage page.
		severity = "info"
	}
	if f.Detector == "feed_health" {
		// One feed fault per feed, whichever rule saw it.
		ruleName, severity = "feed-health", "warning"
	}
	id := AlertID(ruleName, f.Signal, f.Entity)
	prev := m.active[id]
	switch {
	case f.Status == detectors.Firing && prev != nil, f.Status == detectors.Resolved && prev == nil:
		return nil
	}
	ev := &Event{
		ID: id, Status: f.Status, Rule: ruleName, Detector: f.Detector, Signal: f.Signal, Entity: f.Entity,
		Labels: m.labels(f.Entity, labels), Start: ts(f.Start), At: ts(f.At),
		Observed: f.Observed, Baseline: f.Baseline, ObservedUnit: ObservedUnit(f.Signal), BaselineMethod: f.BaselineMethod, ChangePct: f.ChangePct,
		Reason:   f.Reason,
		Severity: severity, Summary: SummaryInWords(f.Signal, f.Summary), Actions: []string{}, Details: f.Details, Receivers: receivers,
	}
	if r != nil {
		ev.Threshold = ThresholdText(r.Params)
	}
	if f.Confidence > 0 {
		ev.Details = maps.Clone(ev.Details)
		if ev.Details == nil {
			ev.Details = map[string]any{}
		}
		ev.Details["confidence"] = f.Confidence
	}
	for _, e := range f.Evidence {
		p := Point{Time: ts(e.Time), Baseline: e.Baseline}
		if e.Value == e.Value { // not NaN
			v := e.Value
			p.Value = &v
		}
		ev.Evidence = append(ev.Evidence, p)
	}
	if f.Status == detectors.Resolved {
		if ev.Reason == "" {
			ev.Reason = detectors.ReasonRecovered
		}
		end := ts(f.End)
		ev.End = &end
		ev.Start = prev.Start
		delete(m.active, id)
	} else {
		m.active[id] = ev
	}
	return ev
}

func ts(ns int64) time.Time { return time.Unix(0, ns).UTC() }

func (m *Manager) labels(entity string, extra map[string]string) map[string]string {
	out := extra
	set := func(k, v string) {
		if v == "" {
			return
		}
		if out == nil {
			out = map[string]string{}
		}
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	kind, id, err := obs.SplitEntity(entity)
	if err != nil || m.Map == nil {
		return out
	}
	switch kind {
	case obs.KindASN:
		if n, err := strconv.ParseUint(id, 10, 32); err == nil {
			set("name", m.Map.Names[uint32(n)])
			set("country", m.Map.Country(uint32(n)))
		}
	case obs.KindCountry:
		set("country", id)
	case obs.KindRegion:
		if len(id) > 2 {
			set("country", id[:2])
		}
	}
	return out
}

// Retire resolves the active alerts that why gives a reason for
// (detectors.ReasonRuleRemoved, ReasonRuleChanged), in ID order, ending
// them at end and raising the resolves at at: alerts whose rules no
// longer judge them, which no finding would ever resolve. Each keeps the
// figures it fired with; its summary says that recovery was not judged.
func (m *Manager) Retire(end, at time.Time, why func(*Event) string) []*Event {
	var out []*Event
	for _, id := range slices.Sorted(maps.Keys(m.active)) {
		prev := m.active[id]
		reason := why(prev)
		if reason == "" {
			continue
		}
		what := "is no longer in the rules"
		if reason == detectors.ReasonRuleChanged {
			what = "no longer judges it"
		}
		ev := &Event{
			ID: id, Status: detectors.Resolved, Rule: prev.Rule, Detector: prev.Detector, Signal: prev.Signal, Entity: prev.Entity,
			Labels: maps.Clone(prev.Labels), Start: prev.Start, End: &end, At: at,
			Observed: prev.Observed, Baseline: prev.Baseline, ObservedUnit: prev.ObservedUnit, BaselineMethod: prev.BaselineMethod,
			ChangePct: prev.ChangePct, Reason: reason, Threshold: prev.Threshold, Severity: prev.Severity,
			Summary: fmt.Sprintf("%s of %s: alert closed, rule %s %s; recovery not judged", SignalWords(prev.Signal), prev.Entity, prev.Rule, what),
			Actions: []string{}, Receivers: prev.Receivers,
		}
		delete(m.active, id)
		out = append(out, ev)
	}
	return out
}

// Active returns the firing alerts, oldest first then by ID.
func (m *Manager) Active() []Event {
	out := make([]Event, 0, len(m.active))
	for _, id := range slices.Sorted(maps.Keys(m.active)) {
		out = append(out, *m.active[id])
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.Start.Compare(b.Start) })
	return out
}

// MarshalBinary checkpoints the active alerts.
func (m *Manager) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(m.active)
	return b.Bytes(), err
}

// UnmarshalBinary restores active alerts.
func (m *Manager) UnmarshalBinary(b []byte) error {
	act := map[string]*Event{}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&act); err != nil {
		return fmt.Errorf("alerting: restore active alerts: %w", err)
	}
	m.active = act
	return nil
}

// paramMap is a rule's params as the rules file writes them, keyed by
// their YAML names; nil for none.
func paramMap(p any) map[string]any {
	if p == nil {
		return nil
	}
	b, err := yaml.Marshal(p)
	if err != nil {
		return nil
	}
	var m map[string]any
	if yaml.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// positive is a param's number as YAML reads it back (a whole 1.0 comes
// back an int), 0 for anything else or for a number not above 0.
func positive(v any) float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int:
		f = float64(x)
	}
	return max(f, 0)
}

// NoiseText says the bar a rule's detector sets besides its thresholds,
// "past 4σ of its own noise", from a `noise` param; "" for a detector
// without one, or with it off. Each such detector measures the noise of
// the series it judges (its residuals, its sampling bound), so the words
// are the same for all.
func NoiseText(p any) string {
	k := positive(paramMap(p)["noise"])
	if k == 0 {
		return ""
	}
	return "past " + strconv.FormatFloat(k, 'g', 3, 64) + "σ of its own noise"
}

// ThresholdText says in words what a rule's detector fires on, from its
// params as the rules file writes them: "threshold 40 %, for 10 min,
// critical 80 %". Keys a detector does not have are left out.
func ThresholdText(p any) string {
	m := paramMap(p)
	if m == nil {
		return ""
	}
	// Thresholds, floors and critical levels are fractions, a rise of
	// 1.0 (100 %) as much as a drop of 0.4.
	pct := func(v any) string {
		if f := positive(v); f > 0 {
			return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + " %"
		}
		return ""
	}
	var parts []string
	add := func(key, label, unit string, fmtv func(any) string) {
		v, ok := m[key]
		if !ok {
			return
		}
		if s := fmtv(v); s != "" {
			parts = append(parts, label+" "+s+unit)
		}
	}
	num := func(v any) string {
		if f := positive(v); f > 0 {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return ""
	}
	dur := func(v any) string {
		s, _ := v.(string)
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return ""
		}
		return HumanDuration(d)
	}
	add("threshold", "threshold", "", pct)
	add("floor", "at least", "", pct)
	add("multiple", "", "× the baseline", num)
	add("min_withdrawals", "and at least", " withdrawals", num)
	add("min_delta_ms", "and", " ms above it", num)
	add("min_delta_mbps", "and", " Mbit/s below it", num)
	add("min_destinations", "on at least", " destinations", num)
	add("for", "for", "", dur)
	add("critical", "critical at", "", pct)
	for i, s := range parts {
		parts[i] = strings.TrimSpace(s)
	}
	if len(parts) > 0 {
		// "and 20 ms above it" reads as a condition of its own first.
		parts[0] = strings.TrimPrefix(parts[0], "and ")
	}
	return strings.Join(parts, ", ")
}
