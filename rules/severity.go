package rules

import (
	"fmt"
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/detectors"
)

// EventSeverity maps an outage event's impact (drop × share of the place's
// traffic × duration factor, each 0..1, as IODA scores an outage) to info,
// warning or critical. It sits in the rules, next to the per-alert
// severities, because both answer the same operator question (when does
// this page as critical) and change together when a team tunes its
// paging; an event re-judges it every bucket, so it escalates as it grows.
type EventSeverity struct {
	// Warning and Critical are the impacts at which an event becomes a
	// warning and a critical; below Warning it is info.
	Warning  float64
	Critical float64
	// FullAfter is how long an event must last before its duration
	// factor reaches 1: a short blip weighs less than a lasting outage.
	FullAfter time.Duration
	// File and Line locate the block for messages.
	File string
	Line int
}

// Summary says what the block sets, for `outagewatch rules check`.
func (s *EventSeverity) Summary() string {
	return fmt.Sprintf("event severity: warning from impact %g, critical from %g, full weight after %s",
		s.Warning, s.Critical, s.FullAfter)
}

type rawSeverity struct {
	Warning   *float64            `yaml:"warning"`
	Critical  *float64            `yaml:"critical"`
	FullAfter *detectors.Duration `yaml:"full_after"`
}

// parseSeverity reads a top-level severity: block. Every key is required,
// so that a file never mixes its own thresholds with someone else's.
func parseSeverity(file string, key, n *yaml.Node) (*EventSeverity, error) {
	if n.Kind != yaml.MappingNode {
		return nil, &Error{file, key.Line, "severity: want a mapping with warning, critical and full_after"}
	}
	if err := checkKeys(file, n, reflect.TypeOf(rawSeverity{}), "severity"); err != nil {
		return nil, err
	}
	var raw rawSeverity
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		one := &yaml.Node{Kind: yaml.MappingNode, Content: n.Content[i : i+2]}
		if err := one.Decode(&raw); err != nil {
			return nil, &Error{file, k.Line, "severity." + k.Value + ": " + yamlError(file, err).(*Error).Msg}
		}
	}
	at := func(k string) int {
		if l := keyLine(n, k); l > 0 {
			return l
		}
		return key.Line
	}
	for _, k := range []struct {
		name string
		set  bool
	}{{"warning", raw.Warning != nil}, {"critical", raw.Critical != nil}, {"full_after", raw.FullAfter != nil}} {
		if !k.set {
			return nil, &Error{file, key.Line, fmt.Sprintf("severity: missing %s (want warning, critical and full_after)", k.name)}
		}
	}
	s := &EventSeverity{Warning: *raw.Warning, Critical: *raw.Critical, FullAfter: time.Duration(*raw.FullAfter), File: file, Line: key.Line}
	switch {
	case !(s.Warning > 0 && s.Warning <= 1): // also NaN
		return nil, &Error{file, at("warning"), fmt.Sprintf("severity.warning: %g: want an impact above 0 and at most 1", s.Warning)}
	case !(s.Critical > 0 && s.Critical <= 1):
		return nil, &Error{file, at("critical"), fmt.Sprintf("severity.critical: %g: want an impact above 0 and at most 1", s.Critical)}
	case s.Critical <= s.Warning:
		return nil, &Error{file, at("critical"), fmt.Sprintf("severity.critical: %g must be above warning (%g)", s.Critical, s.Warning)}
	case s.FullAfter <= 0:
		return nil, &Error{file, at("full_after"), fmt.Sprintf("severity.full_after: %s: want a positive duration such as 30m", s.FullAfter)}
	}
	return s, nil
}

// shippedSeverity is the severity block of the shipped rules, which a set
// without one of its own uses.
func shippedSeverity() (*EventSeverity, error) {
	set, err := Default()
	if err != nil {
		return nil, err
	}
	if set.Severity == nil {
		return nil, fmt.Errorf("rules: the shipped rules have no severity block")
	}
	return set.Severity, nil
}
