package trafficmanager

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Scenario is a planner run written as data: a topology, then ticks that
// change capacities or loads, each with the plan expected after it. The
// tests replay it, and `outagewatch actions plan FILE` prints each tick's
// changes (a dry-run of the Traffic Manager).
type Scenario struct {
	Thresholds Thresholds                    `yaml:"thresholds"`
	Latency    map[string]map[string]float64 `yaml:"latency"`
	Failover   map[string]map[string]float64 `yaml:"failover"`
	Units      map[string]ScenarioUnit       `yaml:"units"`
	Ticks      []ScenarioTick                `yaml:"ticks"`
	File       string                        `yaml:"-"`
}

// ScenarioUnit is a unit's starting capacity and load per plan; its key is
// "location" or "location/section".
type ScenarioUnit struct {
	Capacity float64            `yaml:"capacity"`
	Load     map[string]float64 `yaml:"load"`
}

// ScenarioTick changes capacities or loads (they persist) and says what the
// plan must be after it; nil expectations are not checked.
type ScenarioTick struct {
	Name      string                        `yaml:"name"`
	Capacity  map[string]float64            `yaml:"capacity"`
	Load      map[string]map[string]float64 `yaml:"load"`
	Moves     []string                      `yaml:"moves"`
	Changes   []string                      `yaml:"changes"`
	Withdrawn []string                      `yaml:"withdrawn"`
	Line      int                           `yaml:"-"`
}

// UnmarshalYAML reads thresholds as {max, target, acceptable}.
func (t *Thresholds) UnmarshalYAML(n *yaml.Node) error {
	var raw struct {
		Max        float64 `yaml:"max"`
		Target     float64 `yaml:"target"`
		Acceptable float64 `yaml:"acceptable"`
	}
	if err := n.Decode(&raw); err != nil {
		return err
	}
	*t = Thresholds{Max: raw.Max, Target: raw.Target, Acceptable: raw.Acceptable}
	return nil
}

var yamlLine = regexp.MustCompile(`line (\d+): `)

// LoadScenario reads and validates a scenario file; errors read
// file:line: reason.
func LoadScenario(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseScenario(path, b)
}

// ParseScenario validates a scenario document.
func ParseScenario(file string, b []byte) (*Scenario, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, yamlErr(file, err)
	}
	sc := &Scenario{File: file}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(sc); err != nil {
		return nil, yamlErr(file, err)
	}
	line := func(path ...string) int { return findLine(&doc, path) }
	fail := func(l int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", file, l, fmt.Sprintf(format, args...))
	}
	if err := sc.Thresholds.Valid(); err != nil {
		return nil, fail(line("thresholds"), "%v", err)
	}
	if len(sc.Units) == 0 {
		return nil, fail(1, "no units")
	}
	for id, u := range sc.Units {
		loc, sec, _ := strings.Cut(id, "/")
		if loc == "" || strings.Contains(sec, "/") {
			return nil, fail(line("units", id), "unit %q: want location or location/section", id)
		}
		if !(u.Capacity >= 0) {
			return nil, fail(line("units", id), "unit %s: capacity %v: want >= 0", id, u.Capacity)
		}
		for p, v := range u.Load {
			if _, err := ParsePlan(p); err != nil || !(v >= 0) {
				return nil, fail(line("units", id), "unit %s: load %s %v: want a plan and a value >= 0", id, p, v)
			}
		}
	}
	locs := map[string]bool{}
	for id := range sc.Units {
		l, _, _ := strings.Cut(id, "/")
		locs[l] = true
	}
	for _, m := range []struct {
		name string
		v    map[string]map[string]float64
	}{{"latency", sc.Latency}, {"failover", sc.Failover}} {
		for a, row := range m.v {
			sum := 0.0
			for b, v := range row {
				if !locs[a] || !locs[b] {
					return nil, fail(line(m.name, a), "%s %s→%s: unknown location", m.name, a, b)
				}
				if !(v >= 0) {
					return nil, fail(line(m.name, a), "%s %s→%s %v: want >= 0", m.name, a, b, v)
				}
				sum += v
			}
			if m.name == "failover" && sum > 1+1e-9 {
				return nil, fail(line(m.name, a), "failover shares of %s add up to %v: want <= 1", a, sum)
			}
		}
	}
	for i := range sc.Ticks {
		tk := &sc.Ticks[i]
		tk.Line = line("ticks", strconv.Itoa(i))
		for id, c := range tk.Capacity {
			if _, ok := sc.Units[id]; !ok || !(c >= 0) {
				return nil, fail(tk.Line, "tick %d: capacity %s %v: want a known unit and a value >= 0", i, id, c)
			}
		}
		for id, ld := range tk.Load {
			if _, ok := sc.Units[id]; !ok {
				return nil, fail(tk.Line, "tick %d: load of unknown unit %s", i, id)
			}
			for p, v := range ld {
				if _, err := ParsePlan(p); err != nil || !(v >= 0) {
					return nil, fail(tk.Line, "tick %d: load %s %s %v: want a plan and a value >= 0", i, id, p, v)
				}
			}
		}
	}
	return sc, nil
}

// Inputs returns the planner's input at the start (before any tick) and
// after each tick's changes.
func (sc *Scenario) Inputs() (start Input, ticks []Input) {
	ids := make([]string, 0, len(sc.Units))
	capa, load := map[string]float64{}, map[string][numPlans]float64{}
	for id, u := range sc.Units {
		ids = append(ids, id)
		capa[id] = u.Capacity
		var l [numPlans]float64
		for p, v := range u.Load {
			pl, _ := ParsePlan(p)
			l[pl] = v
		}
		load[id] = l
	}
	sort.Strings(ids)
	build := func() Input {
		in := Input{Latency: sc.Latency, Failover: sc.Failover}
		for _, id := range ids {
			loc, sec, _ := strings.Cut(id, "/")
			in.Units = append(in.Units, Unit{Location: loc, Section: sec, Capacity: capa[id], Load: load[id], Thresholds: sc.Thresholds})
		}
		return in
	}
	start = build()
	for i := range sc.Ticks {
		tk := &sc.Ticks[i]
		for id, c := range tk.Capacity {
			capa[id] = c
		}
		for id, ld := range tk.Load {
			l := load[id]
			for p, v := range ld {
				pl, _ := ParsePlan(p)
				l[pl] = v
			}
			load[id] = l
		}
		ticks = append(ticks, build())
	}
	return start, ticks
}

// Run plays the scenario through the planner; check is called after each
// tick with its result.
func (sc *Scenario) Run(check func(i int, tick *ScenarioTick, r Result)) {
	_, ins := sc.Inputs()
	var st State
	for i, in := range ins {
		r := Tick(in, st)
		check(i, &sc.Ticks[i], r)
		st = r.State
	}
}

// Mismatch compares a tick's result with its expectations and describes
// the differences ("" when they match or none are given).
func (tk *ScenarioTick) Mismatch(r Result) string {
	var b strings.Builder
	cmp := func(what string, want []string, got []string) {
		if want == nil {
			return
		}
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			fmt.Fprintf(&b, "%s:\n  got:  %s\n  want: %s\n", what, strings.Join(got, "\n        "), strings.Join(want, "\n        "))
		}
	}
	var moves, changes []string
	for _, m := range r.State.Moves {
		moves = append(moves, m.String())
	}
	for _, c := range r.Changes {
		changes = append(changes, c.String())
	}
	cmp("moves", tk.Moves, moves)
	cmp("changes", tk.Changes, changes)
	if tk.Withdrawn != nil || len(r.State.Withdrawn) > 0 {
		w := tk.Withdrawn
		if w == nil {
			w = []string{}
		}
		cmp("withdrawn", w, r.State.Withdrawn)
	}
	return b.String()
}

func yamlErr(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil && m[0] == 0 {
		return fmt.Errorf("%s:%s: %s", file, msg[m[2]:m[3]], msg[m[1]:])
	}
	return fmt.Errorf("%s:1: %s", file, msg)
}

// findLine returns the line of the node at path (mapping keys, or list
// indexes), or of the deepest node found.
func findLine(doc *yaml.Node, path []string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, p := range path {
		switch n.Kind {
		case yaml.MappingNode:
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
			if !found {
				return line
			}
		case yaml.SequenceNode:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		default:
			return line
		}
	}
	return line
}
