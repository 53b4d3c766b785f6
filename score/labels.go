package score

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/yamlerr"
	"github.com/outagewatch/outagewatch/scenario"
)

// Labels say what must fire, and what may, on recordings of an incident an
// operator lived through: a file of `outagewatch record`, an MRT archive, a
// dnstap capture, an IODA or Radar export. They read like a fixture's
// expect: and allow: sections (and like the alert expectations of
// Prometheus's rule tests), so that scoring rules on one's own data is the
// same as scoring them on the bundled incidents:
//
//	name: uganda-2021-01-13
//	inputs: [uganda.owrec.gz]       # optional; relative to this file
//	expect:
//	  - {detector: traffic_drop, signal: traffic_bytes, entity: "country:UG",
//	     onset: 2021-01-13T17:00:00Z, within: 15m,
//	     resolve_after: 2021-01-18T12:00:00Z, resolve_within: 6h}
//	allow:
//	  - {detector: traffic_drop, entity: "asn:*", from: 2021-01-13T17:00:00Z, to: 2021-01-18T18:00:00Z}
//
// Every firing alert that no expectation or allowance covers is false.
type Labels struct {
	Name   string                 `yaml:"name"`
	Inputs []string               `yaml:"inputs"`
	Expect []scenario.Expectation `yaml:"expect"`
	Allow  []scenario.Allowance   `yaml:"allow"`
	// File is where the labels were read from.
	File string `yaml:"-"`
}

// LoadLabels reads and checks a labels file. Errors carry file:line.
func LoadLabels(file string) (*Labels, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	return ParseLabels(file, b)
}

// ParseLabels checks a labels document: unknown keys, an expectation
// without detector, entity, onset or a positive within, an allowance whose
// window ends before it starts.
func ParseLabels(file string, b []byte) (*Labels, error) {
	doc, err := parseDoc(file, b)
	if err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:1: want a mapping with expect: (and name:, inputs:, allow:)", file)
	}
	var l Labels
	if err := yamlerr.Decode(file, b, &l); err != nil {
		return nil, err
	}
	l.File = file
	if l.Name == "" {
		l.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	top := doc.Content[0]
	line := func(section string, i int) int {
		for k := 0; k+1 < len(top.Content); k += 2 {
			if top.Content[k].Value == section && i < len(top.Content[k+1].Content) {
				return top.Content[k+1].Content[i].Line
			}
		}
		return 1
	}
	if len(l.Expect) == 0 && len(l.Allow) == 0 {
		return nil, fmt.Errorf("%s:1: no expect: and no allow: every alert would count as false", file)
	}
	for i, x := range l.Expect {
		var missing []string
		if x.Detector == "" {
			missing = append(missing, "detector")
		}
		if x.Entity == "" {
			missing = append(missing, "entity")
		}
		if x.Onset.IsZero() {
			missing = append(missing, "onset")
		}
		if x.Within <= 0 {
			missing = append(missing, "within")
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s:%d: expect[%d]: missing %s", file, line("expect", i), i, strings.Join(missing, ", "))
		}
		if !x.ResolveAfter.IsZero() && x.ResolveWithin <= 0 {
			return nil, fmt.Errorf("%s:%d: expect[%d]: resolve_after without a positive resolve_within", file, line("expect", i), i)
		}
	}
	for i, a := range l.Allow {
		if a.Entity == "" {
			return nil, fmt.Errorf("%s:%d: allow[%d]: missing entity (a glob such as \"asn:*\")", file, line("allow", i), i)
		}
		if !a.From.IsZero() && !a.To.IsZero() && a.To.Before(a.From) {
			return nil, fmt.Errorf("%s:%d: allow[%d]: to is before from", file, line("allow", i), i)
		}
	}
	return &l, nil
}

// parseDoc parses b as a YAML node tree, a syntax error as file:line.
func parseDoc(file string, b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, yamlerr.Wrap(file, err)
	}
	return &doc, nil
}

// InputPaths returns the labels' inputs relative to the labels file.
func (l *Labels) InputPaths() []string {
	out := make([]string, len(l.Inputs))
	for i, in := range l.Inputs {
		if filepath.IsAbs(in) {
			out[i] = in
		} else {
			out[i] = filepath.Join(filepath.Dir(l.File), in)
		}
	}
	return out
}

// Spec is the labels as the spec that Score reads.
func (l *Labels) Spec() *scenario.Spec {
	return &scenario.Spec{Name: l.Name, Expect: l.Expect, Allow: l.Allow, File: l.File}
}

// Shift is an alert that both rule sets raised at different times.
type Shift struct {
	Detector string    `json:"detector"`
	Signal   string    `json:"signal"`
	Entity   string    `json:"entity"`
	AtA      time.Time `json:"at_a"`
	AtB      time.Time `json:"at_b"`
}

// Diff is how the alerts of two rule sets on the same data differ: firing
// alerts only one of them raised, and the ones both raised at different
// times. Alerts are matched by detector, signal and entity (the n-th firing
// of one with the n-th of the other), not by rule name, which the two sets
// may spell differently.
type Diff struct {
	A      string           `json:"a"`
	B      string           `json:"b"`
	OnlyA  []alerting.Event `json:"only_a"`
	OnlyB  []alerting.Event `json:"only_b"`
	Shifts []Shift          `json:"shifts"`
	Same   int              `json:"same"`
}

// Compare diffs the firing alerts of rule sets a and b.
func Compare(nameA string, a []alerting.Event, nameB string, b []alerting.Event) Diff {
	d := Diff{A: nameA, B: nameB, OnlyA: []alerting.Event{}, OnlyB: []alerting.Event{}, Shifts: []Shift{}}
	type key struct{ det, sig, ent string }
	firings := func(evs []alerting.Event) map[key][]alerting.Event {
		m := map[key][]alerting.Event{}
		for _, ev := range evs {
			if ev.Status == alerting.Firing {
				k := key{ev.Detector, ev.Signal, ev.Entity}
				m[k] = append(m[k], ev)
			}
		}
		return m
	}
	fa, fb := firings(a), firings(b)
	for _, ev := range a {
		if ev.Status != alerting.Firing {
			continue
		}
		k := key{ev.Detector, ev.Signal, ev.Entity}
		n := slices.IndexFunc(fa[k], func(x alerting.Event) bool { return x.At.Equal(ev.At) && x.ID == ev.ID })
		if n >= len(fb[k]) {
			d.OnlyA = append(d.OnlyA, ev)
			continue
		}
		if o := fb[k][n]; !o.At.Equal(ev.At) {
			d.Shifts = append(d.Shifts, Shift{ev.Detector, ev.Signal, ev.Entity, ev.At, o.At})
		} else {
			d.Same++
		}
	}
	for _, ev := range b {
		if ev.Status != alerting.Firing {
			continue
		}
		k := key{ev.Detector, ev.Signal, ev.Entity}
		n := slices.IndexFunc(fb[k], func(x alerting.Event) bool { return x.At.Equal(ev.At) && x.ID == ev.ID })
		if n >= len(fa[k]) {
			d.OnlyB = append(d.OnlyB, ev)
		}
	}
	return d
}

// PrintDiff writes a human summary of d.
func PrintDiff(w interface{ Write([]byte) (int, error) }, d Diff) {
	fmt.Fprintf(w, "DIFF %s vs %s: %d alerts the same, %d only in A, %d only in B, %d at other times\n",
		d.A, d.B, d.Same, len(d.OnlyA), len(d.OnlyB), len(d.Shifts))
	for _, ev := range d.OnlyA {
		fmt.Fprintf(w, "  only A    %-17s %-17s %-20s at %s\n", ev.Detector, ev.Signal, ev.Entity, ev.At.Format(time.RFC3339))
	}
	for _, ev := range d.OnlyB {
		fmt.Fprintf(w, "  only B    %-17s %-17s %-20s at %s\n", ev.Detector, ev.Signal, ev.Entity, ev.At.Format(time.RFC3339))
	}
	for _, s := range d.Shifts {
		fmt.Fprintf(w, "  moved     %-17s %-17s %-20s A %s, B %s (%+v)\n", s.Detector, s.Signal, s.Entity,
			s.AtA.Format(time.RFC3339), s.AtB.Format(time.RFC3339), s.AtB.Sub(s.AtA))
	}
}
