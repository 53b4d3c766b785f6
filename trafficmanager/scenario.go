package trafficmanager

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/internal/yamlerr"
)

// Scenario is a planner run written as data: a topology, then ticks that
// change capacities or loads, each with the plan expected after it. The
// tests replay it, and `outagewatch actions plan FILE` prints each tick's
// changes (a dry-run of the Traffic Manager).
type Scenario struct {
	// Thresholds are every unit's, unless the unit gives its own.
	Thresholds Thresholds                    `yaml:"thresholds"`
	Latency    map[string]map[string]float64 `yaml:"latency"`
	Failover   map[string]map[string]float64 `yaml:"failover"`
	Units      map[string]ScenarioUnit       `yaml:"units"`
	// MaxWithdrawn, MaxReportAge, Pace and Errors are the Input fields of
	// the same names (errors: {max: 0.05, ticks: 3}).
	MaxWithdrawn int           `yaml:"max_withdrawn"`
	MaxReportAge time.Duration `yaml:"max_report_age"`
	Pace         float64       `yaml:"pace"`
	Errors       struct {
		Max   float64 `yaml:"max"`
		Ticks int     `yaml:"ticks"`
	} `yaml:"errors"`
	// LearnFailoverAfter is how many recorded withdrawals of a location
	// replace its hand-written failover row with the learnt one (see
	// Predictor); 0 keeps the hand-written matrix.
	LearnFailoverAfter int            `yaml:"learn_failover_after"`
	Ticks              []ScenarioTick `yaml:"ticks"`
	File               string         `yaml:"-"`
}

// ScenarioUnit is a unit's starting capacity and load per plan, and the
// thresholds where they differ from the scenario's; its key is "location"
// or "location/section".
type ScenarioUnit struct {
	Capacity   float64            `yaml:"capacity"`
	Load       map[string]float64 `yaml:"load"`
	Thresholds *UnitThresholds    `yaml:"thresholds"`
}

// UnitThresholds override some of the scenario's thresholds for one unit;
// what is left out comes from the scenario's block.
type UnitThresholds struct {
	Max, Target, Acceptable, SLO *float64
}

// Over returns t with the fields u gives replaced.
func (u *UnitThresholds) Over(t Thresholds) Thresholds {
	if u == nil {
		return t
	}
	for _, f := range []struct {
		v   *float64
		dst *float64
	}{{u.Max, &t.Max}, {u.Target, &t.Target}, {u.Acceptable, &t.Acceptable}, {u.SLO, &t.SLO}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	return t
}

// ScenarioTick changes capacities, loads, error rates or learnt maxima
// (they persist) and report ages or measured loads (this tick only), and
// says what the plan must be after it; nil expectations are not checked.
type ScenarioTick struct {
	Name     string                        `yaml:"name"`
	Capacity map[string]float64            `yaml:"capacity"`
	Load     map[string]map[string]float64 `yaml:"load"`
	// Errors sets units' edge error rates; Learnt their learnt maxima.
	Errors map[string]float64 `yaml:"errors"`
	Learnt map[string]float64 `yaml:"learnt"`
	// Age is how old a unit's load report is at this tick; Served the
	// CPU time it measured in use (what paced steps wait on).
	Age       map[string]time.Duration `yaml:"age"`
	Served    map[string]float64       `yaml:"served"`
	Moves     []string                 `yaml:"moves"`
	Changes   []string                 `yaml:"changes"`
	Withdrawn []string                 `yaml:"withdrawn"`
	Notes     []string                 `yaml:"notes"`
	Line      int                      `yaml:"-"`
}

// knownKeys fails on a mapping key outside allowed, with its line.
func knownKeys(n *yaml.Node, allowed ...string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: thresholds: want a mapping", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !contains(allowed, n.Content[i].Value) {
			return fmt.Errorf("line %d: %s", n.Content[i].Line, yamlerr.Unknown(n.Content[i].Value, "thresholds", allowed))
		}
	}
	return nil
}

var thresholdKeys = []string{"max", "target", "acceptable", "slo"}

// UnmarshalYAML reads thresholds as {max, target, acceptable, slo}.
func (t *Thresholds) UnmarshalYAML(n *yaml.Node) error {
	if err := knownKeys(n, thresholdKeys...); err != nil {
		return err
	}
	var raw struct {
		Max        float64 `yaml:"max"`
		Target     float64 `yaml:"target"`
		Acceptable float64 `yaml:"acceptable"`
		SLO        float64 `yaml:"slo"`
	}
	if err := n.Decode(&raw); err != nil {
		return err
	}
	*t = Thresholds{Max: raw.Max, Target: raw.Target, Acceptable: raw.Acceptable, SLO: raw.SLO}
	return nil
}

// UnmarshalYAML reads some of {max, target, acceptable, slo}.
func (u *UnitThresholds) UnmarshalYAML(n *yaml.Node) error {
	if err := knownKeys(n, thresholdKeys...); err != nil {
		return err
	}
	var raw struct {
		Max        *float64 `yaml:"max"`
		Target     *float64 `yaml:"target"`
		Acceptable *float64 `yaml:"acceptable"`
		SLO        *float64 `yaml:"slo"`
	}
	if err := n.Decode(&raw); err != nil {
		return err
	}
	*u = UnitThresholds{raw.Max, raw.Target, raw.Acceptable, raw.SLO}
	return nil
}

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
	if err := yamlerr.Decode(file, b, sc); err != nil {
		return nil, err
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
		if err := u.Thresholds.Over(sc.Thresholds).Valid(); err != nil {
			return nil, fail(line("units", id, "thresholds"), "unit %s: %v", id, err)
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
	if sc.MaxWithdrawn < 0 {
		return nil, fail(line("max_withdrawn"), "max_withdrawn %d: want >= 0", sc.MaxWithdrawn)
	}
	if sc.MaxReportAge < 0 {
		return nil, fail(line("max_report_age"), "max_report_age %v: want >= 0", sc.MaxReportAge)
	}
	if !(sc.Pace >= 0 && sc.Pace <= 1) {
		return nil, fail(line("pace"), "pace %v: want a share of a unit's traffic in [0, 1]", sc.Pace)
	}
	if !(sc.Errors.Max >= 0 && sc.Errors.Max < 1) || sc.Errors.Ticks < 0 {
		return nil, fail(line("errors"), "errors max %v ticks %d: want 0 <= max < 1 and ticks >= 0", sc.Errors.Max, sc.Errors.Ticks)
	}
	if sc.LearnFailoverAfter < 0 {
		return nil, fail(line("learn_failover_after"), "learn_failover_after %d: want >= 0", sc.LearnFailoverAfter)
	}
	for i := range sc.Ticks {
		tk := &sc.Ticks[i]
		tk.Line = line("ticks", strconv.Itoa(i))
		for what, m := range map[string]map[string]float64{"errors": tk.Errors, "learnt": tk.Learnt, "served": tk.Served} {
			for id, v := range m {
				hi := 1.0
				if what == "served" {
					hi = math.Inf(1)
				}
				if _, ok := sc.Units[id]; !ok || !(v >= 0 && v <= hi) {
					return nil, fail(tk.Line, "tick %d: %s %s %v: want a known unit and a value in [0, %v]", i, what, id, v, hi)
				}
			}
		}
		for id, a := range tk.Age {
			if _, ok := sc.Units[id]; !ok || a < 0 {
				return nil, fail(tk.Line, "tick %d: age %s %v: want a known unit and an age >= 0", i, id, a)
			}
		}
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
	errs, learnt := map[string]float64{}, map[string]float64{}
	var tick *ScenarioTick
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
		in := sc.Input()
		for _, id := range ids {
			loc, sec, _ := strings.Cut(id, "/")
			u := Unit{Location: loc, Section: sec, Capacity: capa[id], Load: load[id], Thresholds: sc.Units[id].Thresholds.Over(sc.Thresholds), ErrorRate: errs[id]}
			if v, ok := learnt[id]; ok {
				u.Learnt = &Learnt{OK: true, Max: v, Reason: "given by the scenario"}
			}
			if tick != nil {
				u.ReportAge = tick.Age[id]
				u.Served, u.ServedKnown = tick.Served[id]
			}
			in.Units = append(in.Units, u)
		}
		return in
	}
	start = build()
	for i := range sc.Ticks {
		tk := &sc.Ticks[i]
		tick = tk
		for id, c := range tk.Capacity {
			capa[id] = c
		}
		for id, v := range tk.Errors {
			errs[id] = v
		}
		for id, v := range tk.Learnt {
			learnt[id] = v
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

// Input is the planner input of the topology alone: latencies, failover
// and the limits, no units.
func (sc *Scenario) Input() Input {
	return Input{Latency: sc.Latency, Failover: sc.Failover, MaxWithdrawn: sc.MaxWithdrawn, MaxAge: sc.MaxReportAge, Pace: sc.Pace,
		Errors: ErrorTrigger{Max: sc.Errors.Max, Ticks: sc.Errors.Ticks}}
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
	cmp("withdrawn", tk.Withdrawn, r.State.Withdrawn)
	cmp("notes", tk.Notes, r.Notes)
	return b.String()
}

func yamlErr(file string, err error) error {
	line, msg := yamlerr.Split(err)
	return fmt.Errorf("%s:%d: %s", file, max(line, 1), msg)
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
