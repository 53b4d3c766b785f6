// Package trafficmanager plans how CPU load moves between data centers, and
// between the sections of one data center, when one runs short of capacity,
// and how it comes back. It is a pure function of its input: no clock, no
// I/O. The actuators (a load-balancer hook, gobgp route withdrawals) apply
// the difference between two plans, so a planner bug is found by a table
// test, not in production.
//
// The rules follow Cloudflare's Traffic Manager: three CPU thresholds per
// data center (act above the maximum, move down to the target, take others'
// load only below the acceptable level), the cheapest plans move first, the
// nearest destinations fill first with the most important moved traffic, a
// data center reverts its own moves before it accepts anyone else's, and a
// failover matrix predicts where a withdrawn data center's traffic lands so
// the neighbours it would flood shed load before it arrives.
package trafficmanager

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Plan is a customer plan. Lower values are moved first.
type Plan int

// Plans in the order they are moved: the cheapest first.
const (
	Free Plan = iota
	Pro
	Business
	Enterprise
	numPlans
)

var planNames = [numPlans]string{"Free", "Pro", "Business", "Enterprise"}

func (p Plan) String() string {
	if p < 0 || p >= numPlans {
		return fmt.Sprintf("Plan(%d)", int(p))
	}
	return planNames[p]
}

// MarshalText writes the plan's name, so JSON carries "Free", not 0.
func (p Plan) MarshalText() ([]byte, error) {
	if p < 0 || p >= numPlans {
		return nil, fmt.Errorf("plan %d out of range", int(p))
	}
	return []byte(planNames[p]), nil
}

// UnmarshalText reads a plan's name.
func (p *Plan) UnmarshalText(b []byte) error {
	v, err := ParsePlan(string(b))
	*p = v
	return err
}

// ParsePlan returns the plan named s (case-insensitive).
func ParsePlan(s string) (Plan, error) {
	for i, n := range planNames {
		if strings.EqualFold(n, s) {
			return Plan(i), nil
		}
	}
	return 0, fmt.Errorf("unknown plan %q (want Free, Pro, Business or Enterprise)", s)
}

// Thresholds are CPU utilisation ratios in [0, 1].
type Thresholds struct {
	// Max: above it the data center moves load away.
	Max float64
	// Target: it moves just enough to come down to this.
	Target float64
	// Acceptable: below it the data center takes its own moved load back,
	// and, once it has none away, accepts others' load.
	Acceptable float64
	// SLO is the p95 SLI (ms) at which the learner puts the maximum; 0
	// leaves it to LearnConfig. The planner itself does not read it.
	SLO float64
}

// Valid reports whether 0 < Acceptable <= Target < Max <= 1 and SLO >= 0.
func (t Thresholds) Valid() error {
	if !(t.Acceptable > 0 && t.Acceptable <= t.Target && t.Target < t.Max && t.Max <= 1) {
		return fmt.Errorf("thresholds acceptable %.3g, target %.3g, max %.3g: want 0 < acceptable <= target < max <= 1", t.Acceptable, t.Target, t.Max)
	}
	if !(t.SLO >= 0) {
		return fmt.Errorf("thresholds slo %v: want >= 0 (ms)", t.SLO)
	}
	return nil
}

// Unit is a data center, or one section of a multi-section data center:
// the smallest thing the planner moves load out of and into.
type Unit struct {
	// Location is the data center (anycast site) the unit belongs to.
	Location string
	// Section names the section within a multi-section location; empty
	// for a single-section data center.
	Section string
	// Capacity is the CPU time the unit can serve, ms per second, with the
	// hardware that works now. Zero in every section of a location drains
	// the location: its anycast routes are withdrawn.
	Capacity float64
	// Load is the CPU time, ms per second, of the unit's own traffic per
	// plan: what it costs when served here.
	Load [numPlans]float64
	// Thresholds apply to this unit. Learnt, if set and good, replaces
	// Thresholds.Max (see Limits for a learnt maximum at or below the
	// target).
	Thresholds Thresholds
	Learnt     *Learnt
	// ReportAge is how old the unit's latest load report is at this tick;
	// past Input.MaxAge the unit is stale (see Input.MaxAge).
	ReportAge time.Duration
	// Served is the CPU time the unit measured in use (ms per second),
	// when ServedKnown: what paced moves wait on to show their effect.
	Served      float64
	ServedKnown bool
	// ErrorRate is the share of the unit's requests that failed at the
	// edge (HTTP 499 and 5xx), in [0, 1]: the error-rate trigger's signal.
	ErrorRate float64
}

// ID is "location" or "location/section".
func (u *Unit) ID() string {
	if u.Section == "" {
		return u.Location
	}
	return u.Location + "/" + u.Section
}

func (u *Unit) own() float64 {
	s := 0.0
	for _, v := range u.Load {
		s += v
	}
	return s
}

// Limits are the thresholds the planner applies to u. A good learnt
// maximum replaces the static one. A learnt maximum at or below the static
// target would leave no band to shed into (the unit would shed to a target
// above the level it may not exceed, and so move nothing): then the target
// and the acceptable level are scaled by learnt ÷ static maximum, keeping
// the proportions the operator chose, and reconciled is true.
func (u *Unit) Limits() (t Thresholds, reconciled bool) {
	t = u.Thresholds
	if u.Learnt == nil || !u.Learnt.OK {
		return t, false
	}
	t.Max = u.Learnt.Max
	if t.Max > u.Thresholds.Target+eps || u.Thresholds.Max <= 0 {
		return t, false
	}
	k := u.Learnt.Max / u.Thresholds.Max
	t.Target *= k
	t.Acceptable *= k
	return t, true
}

// Input is everything the planner knows at one tick.
type Input struct {
	Units []Unit
	// Latency between locations, ms. Either direction may be given. Two
	// sections of one location are at zero; a pair with no entry is never
	// used for a move.
	Latency map[string]map[string]float64
	// Failover gives, for a location, the share of its traffic that lands
	// on each other location when its anycast routes are withdrawn.
	Failover map[string]map[string]float64
	// MaxWithdrawn is the most locations withdrawn at once; 0 means one,
	// the limit the anycast actuator used to enforce on its own. A drained
	// location past it keeps its routes and has its load moved away by
	// the load balancer instead, so that a bad input (every report saying
	// zero capacity) cannot take the network off the Internet.
	MaxWithdrawn int
	// MaxAge is the age past which a unit's load report is stale; 0 never.
	// A stale unit is treated as unknown: no move goes into it, the moves
	// into it are reverted (a destination that cannot be seen may be
	// failing), and its own moves away are held as they are (bringing them
	// home blind could overload it, growing them acts on numbers no one
	// trusts).
	MaxAge time.Duration
	// Pace, in (0, 1], is the most of a unit's own traffic whose placement
	// changes in one tick; 0 applies each plan whole. Paced, the plan is
	// worked out as if unpaced (State.Target) and the moves in force step
	// towards it; a unit whose last step has not shown in its load reports
	// (Unit.Served) waits.
	Pace float64
	// Errors is the error-rate trigger; a zero Max turns it off.
	Errors ErrorTrigger
}

// ErrorTrigger withdraws a location whose users cannot reach it: its edge
// error rate (HTTP 499 and 5xx as a share of requests, the traffic-weighted
// mean of its sections) above Max for Ticks consecutive ticks. It is
// announced again once the rate is back at or below Max and its capacity
// can serve its own load below the maximum threshold. Withdrawals it asks
// for are subject to Input.MaxWithdrawn like any other.
type ErrorTrigger struct {
	Max   float64
	Ticks int
}

// Move sends Fraction of From's own traffic of Plan to To.
type Move struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Plan     Plan    `json:"plan"`
	Fraction float64 `json:"fraction"`
	// CPU is Fraction of From's load of Plan at this tick, ms per second.
	CPU float64 `json:"cpu_ms"`
}

func (m Move) key() string { return m.From + "\x00" + m.To + "\x00" + planNames[m.Plan] }

func (m Move) String() string {
	return fmt.Sprintf("%s %s %s→%s %s", m.Plan, pct(m.Fraction), m.From, m.To, num(m.CPU))
}

// State is a plan: the moves and withdrawals in force, and what the next
// tick needs to carry on from it.
type State struct {
	Moves []Move `json:"moves"`
	// Withdrawn lists locations whose anycast routes are withdrawn.
	Withdrawn []string `json:"withdrawn"`
	// Target is, when moves are paced, the plan Moves step towards, in
	// the order its moves were made.
	Target []Move `json:"target,omitempty"`
	// Pending lists the units whose load the last paced step changed, and
	// what their load reports should read once it has taken effect.
	Pending []Pending `json:"pending,omitempty"`
	// Failing counts, per location, the consecutive ticks its error rate
	// has been above the error-rate trigger.
	Failing map[string]int `json:"failing,omitempty"`
}

// Pending is a paced step not yet confirmed: the unit served Before (as
// predicted) and should serve Expect once the step lands. The step has
// shown once the measured load is nearer Expect than half the step.
type Pending struct {
	Unit   string  `json:"unit"`
	Before float64 `json:"before_ms"`
	Expect float64 `json:"expect_ms"`
}

// Change is one difference between two plans, what an actuator applies.
type Change struct {
	// Op is "move" (new or changed fraction), "revert" (a move ended or
	// shrank), "withdraw" or "announce".
	Op       string `json:"op"`
	Move     *Move  `json:"move,omitempty"`
	Location string `json:"location,omitempty"`
	// Was is the move's fraction in the previous plan.
	Was float64 `json:"was,omitempty"`
}

func (c Change) String() string {
	switch c.Op {
	case "withdraw", "announce":
		return c.Op + " " + c.Location
	}
	return fmt.Sprintf("%s %s %s→%s %s→%s", c.Op, c.Move.Plan, c.Move.From, c.Move.To, pct(c.Was), pct(c.Move.Fraction))
}

// Result is one tick's plan, its difference from the previous one and
// what the planner could not do.
type Result struct {
	State   State
	Changes []Change
	// Notes say what the plan could not achieve (load it found nowhere to
	// put), which thresholds came from a poor fit or were reconciled,
	// which units are stale, where a cascade sent traffic, and what waits.
	Notes []string
	// Util is each unit's predicted utilisation once the plan is applied.
	Util map[string]float64
	// Stale lists the units treated as unknown; Reconciled those whose
	// target and acceptable level were scaled to a learnt maximum;
	// Waiting those whose paced step has not shown yet; HeldBack the
	// locations that would be withdrawn but for Input.MaxWithdrawn.
	Stale, Reconciled, Waiting, HeldBack []string
}

// eps ignores float dust in fractions and CPU time.
const eps = 1e-9

type planner struct {
	in       Input
	units    []*Unit
	byID     map[string]*Unit
	lim      map[string]Thresholds
	moves    map[string]*Move
	seq      map[string]int     // order in which moves were made: how a paced step applies them
	held     map[string]bool    // moves that must not change (their source is stale)
	eff      map[string]float64 // load served once moves and predicted inflow apply
	withdraw map[string]bool
	failing  map[string]int
	notes    []string
	heldBack []string
}

func newPlanner(in Input) *planner {
	p := &planner{in: in, byID: map[string]*Unit{}, lim: map[string]Thresholds{}, moves: map[string]*Move{}, seq: map[string]int{},
		held: map[string]bool{}, eff: map[string]float64{}, withdraw: map[string]bool{}, failing: map[string]int{}}
	for i := range in.Units {
		u := &in.Units[i]
		p.units = append(p.units, u)
		p.byID[u.ID()] = u
		p.lim[u.ID()], _ = u.Limits()
	}
	sort.Slice(p.units, func(i, j int) bool { return p.units[i].ID() < p.units[j].ID() })
	return p
}

// sub is a planner on the same input and withdrawals with moves ms, for
// predicting the load a plan other than the one being made leaves.
func (p *planner) sub(ms []Move) *planner {
	q := newPlanner(p.in)
	q.withdraw = p.withdraw
	for _, m := range ms {
		mm := m
		q.moves[m.key()] = &mm
	}
	q.load(false)
	return q
}

func (p *planner) stale(u *Unit) bool { return p.in.Stale(u) }

// Tick computes the plan for in, given the plan in force (prev), and the
// difference between them.
func Tick(in Input, prev State) Result {
	p := newPlanner(in)
	var r Result
	for _, u := range p.units {
		if u.Learnt != nil && !u.Learnt.OK {
			p.notes = append(p.notes, fmt.Sprintf("%s: learnt max threshold not used (%s); static %s", u.ID(), u.Learnt.Reason, pct(u.Thresholds.Max)))
		}
		if t, ok := u.Limits(); ok {
			r.Reconciled = append(r.Reconciled, u.ID())
			p.notes = append(p.notes, fmt.Sprintf("%s: learnt max %s is at or below the target %s: target and acceptable scaled by learnt ÷ static max to %s and %s",
				u.ID(), pct(t.Max), pct(u.Thresholds.Target), pct(t.Target), pct(t.Acceptable)))
		}
		if p.stale(u) {
			r.Stale = append(r.Stale, u.ID())
		}
	}
	p.countFailing(prev)
	p.withdrawals(prev)
	base := prev.Moves
	if in.Pace > 0 && prev.Target != nil {
		base = prev.Target
	}
	p.adopt(base)
	p.load(true)
	p.revert()
	p.shed()
	target := p.list()
	applied := target
	if in.Pace > 0 {
		applied, r.State.Pending, r.Waiting = p.step(prev, target)
		r.State.Target = p.made()
	}
	q := p // unpaced, the plan made is the plan applied
	if in.Pace > 0 {
		q = p.sub(applied)
	}
	r.Util = map[string]float64{}
	for _, u := range p.units {
		if !p.withdraw[u.Location] {
			r.Util[u.ID()] = q.util(u)
		}
	}
	r.State.Moves = applied
	r.State.Withdrawn = sortedKeys(p.withdraw)
	if len(p.failing) > 0 {
		r.State.Failing = p.failing
	}
	r.Notes = p.notes
	r.HeldBack = p.heldBack
	r.Changes = Diff(prev, r.State)
	return r
}

// adopt takes the moves of the plan in force, except those touching a
// withdrawn location or going into a stale unit; a stale unit's own moves
// are held.
func (p *planner) adopt(base []Move) {
	heldN, reverted := map[string]int{}, map[string]int{}
	for _, m := range base {
		from, to := p.byID[m.From], p.byID[m.To]
		if from == nil || to == nil || p.withdraw[from.Location] || p.withdraw[to.Location] || m.Plan < 0 || m.Plan >= numPlans {
			continue
		}
		if p.stale(to) {
			reverted[to.ID()]++
			continue
		}
		mm := m
		p.moves[m.key()] = &mm
		p.seq[m.key()] = len(p.seq)
		if p.stale(from) {
			p.held[m.key()] = true
			heldN[from.ID()]++
		}
	}
	for _, u := range p.units {
		if p.stale(u) {
			p.notes = append(p.notes, fmt.Sprintf("%s: load report %s old, older than %s: treated as unknown (no moves into it; %d of its moves held, %d into it reverted)",
				u.ID(), u.ReportAge, p.in.MaxAge, heldN[u.ID()], reverted[u.ID()]))
		}
	}
}

// made returns the moves in the order the planner made them: kept in
// that order in State.Target, so that the next tick's steps still fill the
// nearest destinations with the most important traffic first.
func (p *planner) made() []Move {
	ms := p.list()
	sort.SliceStable(ms, func(i, j int) bool { return p.seq[ms[i].key()] < p.seq[ms[j].key()] })
	return ms
}

// list returns the moves as a sorted plan.
func (p *planner) list() []Move {
	var ms []Move
	for _, m := range p.moves {
		ms = append(ms, *m)
	}
	SortMoves(ms)
	return ms
}

// rates returns each location's error rate: its sections' rates weighted
// by their own load (their plain mean when none has load).
func (p *planner) rates() map[string]float64 {
	sum, w, plain, n := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, u := range p.units {
		sum[u.Location] += u.ErrorRate * u.own()
		w[u.Location] += u.own()
		plain[u.Location] += u.ErrorRate
		n[u.Location]++
	}
	out := map[string]float64{}
	for l := range n {
		if w[l] > eps {
			out[l] = sum[l] / w[l]
		} else {
			out[l] = plain[l] / n[l]
		}
	}
	return out
}

// countFailing advances each location's count of ticks above the error
// trigger; a tick at or below it starts the count again.
func (p *planner) countFailing(prev State) {
	if p.in.Errors.Max <= 0 {
		return
	}
	for l, r := range p.rates() {
		if r > p.in.Errors.Max+eps {
			p.failing[l] = prev.Failing[l] + 1
		}
	}
}

// withdrawals decides which locations are drained: every section without
// capacity, or users failing past the error trigger. A drained location
// comes back once it can serve its own load below its maximum and its
// error rate is back under the trigger. At most MaxWithdrawn are withdrawn:
// those already withdrawn keep their place, then locations without
// capacity, then those failing their users, by name.
func (p *planner) withdrawals(prev State) {
	was := map[string]bool{}
	for _, l := range prev.Withdrawn {
		was[l] = true
	}
	capa, own := map[string]float64{}, map[string]float64{}
	maxu := map[string]float64{}
	for _, u := range p.units {
		capa[u.Location] += u.Capacity
		own[u.Location] += u.own()
		maxu[u.Location] += p.lim[u.ID()].Max * u.Capacity
	}
	rates := p.rates()
	trig := p.in.Errors
	need := max(1, trig.Ticks)
	type cand struct {
		loc, why string
		rank     int
	}
	var cs []cand
	for _, l := range sortedKeys(capa) {
		erring := trig.Max > 0 && rates[l] > trig.Max+eps
		switch {
		case capa[l] <= eps:
			cs = append(cs, cand{l, "no capacity", 1})
		case trig.Max > 0 && p.failing[l] >= need:
			cs = append(cs, cand{l, fmt.Sprintf("error rate %s above %s for %d ticks", pct(rates[l]), pct(trig.Max), p.failing[l]), 2})
		case was[l] && own[l] > maxu[l]+eps:
			cs = append(cs, cand{l, "still short of capacity", 1})
		case was[l] && erring:
			cs = append(cs, cand{l, fmt.Sprintf("error rate %s still above %s", pct(rates[l]), pct(trig.Max)), 2})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if was[cs[i].loc] != was[cs[j].loc] {
			return was[cs[i].loc]
		}
		return cs[i].rank < cs[j].rank
	})
	limit := max(1, p.in.MaxWithdrawn)
	for _, c := range cs {
		if c.rank == 2 && !was[c.loc] && len(p.withdraw) < limit {
			// Withdrawing a location for its errors must not push a
			// neighbour past its capacity: its users would fail there too.
			if n := p.pastCapacity(c.loc, own, capa); n != "" {
				p.heldBack = append(p.heldBack, c.loc)
				p.notes = append(p.notes, fmt.Sprintf("%s: not withdrawn (%s): its traffic would push %s past its capacity", c.loc, c.why, n))
				continue
			}
		}
		if len(p.withdraw) < limit {
			p.withdraw[c.loc] = true
			if c.rank == 2 && !was[c.loc] {
				p.notes = append(p.notes, fmt.Sprintf("%s: withdrawn: %s", c.loc, c.why))
			}
			continue
		}
		p.heldBack = append(p.heldBack, c.loc)
		p.notes = append(p.notes, fmt.Sprintf("%s: not withdrawn (%s): %d locations withdrawn already, the most at once", c.loc, c.why, limit))
	}
}

// pastCapacity returns the first location (by name) that withdrawing loc,
// on top of the withdrawals already decided, would push past its capacity,
// or "".
func (p *planner) pastCapacity(loc string, own, capa map[string]float64) string {
	gone := map[string]bool{loc: true}
	for l := range p.withdraw {
		gone[l] = true
	}
	served := map[string]float64{}
	for w := range gone {
		land, _, _ := Landing(p.in.Failover, gone, w)
		for to, sh := range land {
			served[to] += own[w] * sh
		}
	}
	for _, l := range sortedKeys(served) {
		if !gone[l] && own[l]+served[l] > capa[l]+eps {
			return l
		}
	}
	return ""
}

// Landing is where from's traffic lands when its routes are withdrawn: its
// failover row, followed through every withdrawn location on the way (that
// location's own row, share times share) for as many layers as it takes.
// A share that reaches a withdrawn location with no row of its own, or one
// it already passed through, is lost, and why is said. A row adding up to
// less than one sends the rest off the network, and that is not counted.
// paths says, for each share that passed through withdrawn locations,
// where it went and through which.
func Landing(failover map[string]map[string]float64, withdrawn map[string]bool, from string) (land map[string]float64, paths, lost []string) {
	land = map[string]float64{}
	var walk func(at string, share float64, path []string)
	walk = func(at string, share float64, path []string) {
		for _, to := range sortedKeys(failover[at]) {
			s := share * failover[at][to]
			if s <= eps {
				continue
			}
			switch {
			case to == from || contains(path, to):
				lost = append(lost, fmt.Sprintf("%s of its traffic comes back to %s through %s", pct(s), to, strings.Join(path, ", ")))
			case withdrawn[to] && len(failover[to]) == 0:
				lost = append(lost, fmt.Sprintf("%s of its traffic is lost: %s is withdrawn too and has no failover of its own", pct(s), to))
			case withdrawn[to]:
				walk(to, s, append(append([]string(nil), path...), to))
			default:
				land[to] += s
				if len(path) > 0 {
					paths = append(paths, fmt.Sprintf("%s of its traffic lands on %s through %s (withdrawn)", pct(s), to, strings.Join(path, ", ")))
				}
			}
		}
	}
	walk(from, 1, nil)
	return land, paths, lost
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

// load computes what each unit serves once the moves in force and the
// traffic of withdrawn locations (spread by the failover matrix through as
// many withdrawn layers as it takes, and over a location's sections by
// capacity) land. With notes it says where a cascade went.
func (p *planner) load(notes bool) {
	for _, u := range p.units {
		if !p.withdraw[u.Location] {
			p.eff[u.ID()] += u.own()
		}
	}
	for _, m := range p.moves {
		m.CPU = m.Fraction * p.byID[m.From].Load[m.Plan]
		p.eff[m.From] -= m.CPU
		p.eff[m.To] += m.CPU
	}
	for _, w := range sortedKeys(p.withdraw) {
		total := 0.0
		for _, u := range p.units {
			if u.Location == w {
				total += u.own()
			}
		}
		land, paths, lost := Landing(p.in.Failover, p.withdraw, w)
		for _, to := range sortedKeys(land) {
			var in []*Unit
			capa := 0.0
			for _, u := range p.units {
				if u.Location == to {
					in = append(in, u)
					capa += u.Capacity
				}
			}
			for _, u := range in {
				if capa > eps {
					p.eff[u.ID()] += total * land[to] * u.Capacity / capa
				} else {
					p.eff[u.ID()] += total * land[to] / float64(len(in))
				}
			}
		}
		if notes {
			for _, l := range append(paths, lost...) {
				p.notes = append(p.notes, w+": "+l)
			}
		}
	}
}

func (p *planner) util(u *Unit) float64 {
	if u.Capacity <= eps {
		if p.eff[u.ID()] > eps {
			return math.Inf(1)
		}
		return 0
	}
	return p.eff[u.ID()] / u.Capacity
}

// outgoing returns u's moves, farthest destination first, then the most
// important plan first: the order in which they come home.
func (p *planner) outgoing(u *Unit) []*Move {
	var ms []*Move
	for _, m := range p.moves {
		if m.From == u.ID() {
			ms = append(ms, m)
		}
	}
	sort.Slice(ms, func(i, j int) bool {
		di, dj := p.distance(u, p.byID[ms[i].To]), p.distance(u, p.byID[ms[j].To])
		if di != dj {
			return di > dj
		}
		if ms[i].Plan != ms[j].Plan {
			return ms[i].Plan > ms[j].Plan
		}
		return ms[i].To > ms[j].To
	})
	return ms
}

// revert brings moved load home wherever the source is below its
// acceptable level, up to what keeps it there. The traffic that travels
// farthest comes home first.
func (p *planner) revert() {
	for _, u := range p.units {
		if p.withdraw[u.Location] || u.Capacity <= eps || p.stale(u) {
			continue
		}
		room := p.lim[u.ID()].Acceptable*u.Capacity - p.eff[u.ID()]
		if room <= eps {
			continue
		}
		for _, m := range p.outgoing(u) {
			if room <= eps {
				break
			}
			back := math.Min(room, m.CPU)
			p.shift(m, -back)
			room -= back
		}
	}
}

// shift changes a move by cpu ms/s (negative to bring load home), keeping
// the served loads in step.
func (p *planner) shift(m *Move, cpu float64) {
	load := p.byID[m.From].Load[m.Plan]
	m.CPU += cpu
	if load > 0 {
		m.Fraction = m.CPU / load
	}
	p.eff[m.From] -= cpu
	p.eff[m.To] += cpu
	if m.CPU <= eps || m.Fraction <= eps {
		delete(p.moves, m.key())
	}
}

// distance orders destinations: sections of the same location first (zero),
// then by latency; -1 means unreachable.
func (p *planner) distance(from, to *Unit) float64 {
	if from.Location == to.Location {
		return 0
	}
	if l, ok := p.in.Latency[from.Location][to.Location]; ok {
		return l
	}
	if l, ok := p.in.Latency[to.Location][from.Location]; ok {
		return l
	}
	return -1
}

// shed moves load out of every unit above its maximum, most loaded first,
// down to its target. A unit that holds others' load sends that back
// first (the cheapest plans first): it lost capacity since it accepted, and
// its own traffic should not travel to make room for someone else's. The
// sources then shed elsewhere in the next round.
func (p *planner) shed() {
	short := map[*Unit]float64{}
	for round := 0; round < 2*len(p.units)+1; round++ {
		var over []*Unit
		for _, u := range p.units {
			if !p.withdraw[u.Location] && !p.stale(u) && p.util(u) > p.lim[u.ID()].Max+eps {
				over = append(over, u)
			}
		}
		sort.SliceStable(over, func(i, j int) bool { return p.util(over[i]) > p.util(over[j]) })
		changed := false
		for _, u := range over {
			need := p.eff[u.ID()] - p.lim[u.ID()].Target*u.Capacity
			if b := p.bounce(u, need); b > eps {
				changed = true
				need -= b
			}
			moved, rest := p.moveOut(u, need)
			changed = changed || moved > eps
			short[u] = rest
		}
		if !changed {
			break
		}
	}
	for _, u := range p.units {
		if short[u] > 1e-6 {
			p.notes = append(p.notes, fmt.Sprintf("%s: %s ms/s found no destination", u.ID(), num(short[u])))
			continue
		}
		if p.withdraw[u.Location] || p.stale(u) {
			continue
		}
		// What is left above the maximum is not the unit's own to move:
		// traffic failing over onto it, or moves held.
		if over := p.eff[u.ID()] - p.lim[u.ID()].Max*u.Capacity; over > 1e-6 {
			p.notes = append(p.notes, fmt.Sprintf("%s: %s ms/s above its maximum cannot move (failover inflow or held moves)", u.ID(), num(over)))
		}
	}
}

// bounce sends up to need of the load moved into u back to its sources,
// the cheapest plans first, the farthest source first within a plan, and
// returns how much.
func (p *planner) bounce(u *Unit, need float64) float64 {
	var in []*Move
	for _, m := range p.moves {
		if m.To == u.ID() && !p.held[m.key()] {
			in = append(in, m)
		}
	}
	sort.Slice(in, func(i, j int) bool {
		if in[i].Plan != in[j].Plan {
			return in[i].Plan < in[j].Plan
		}
		di, dj := p.distance(u, p.byID[in[i].From]), p.distance(u, p.byID[in[j].From])
		if di != dj {
			return di > dj
		}
		return in[i].From < in[j].From
	})
	done := 0.0
	for _, m := range in {
		if need-done <= eps {
			break
		}
		back := math.Min(need-done, m.CPU)
		p.shift(m, -back)
		done += back
	}
	return done
}

// ToMove is the CPU time a data center serving cpu ms/s at utilisation util
// moves to come down to target: cpu × (1 − target ÷ util).
func ToMove(cpu, util, target float64) float64 {
	if util <= target {
		return 0
	}
	return cpu * (1 - target/util)
}

// ToAccept is what a data center can take before it reaches its acceptable
// level: acceptable CPU time − current CPU time.
func ToAccept(capacity, cpu, acceptable float64) float64 {
	return math.Max(0, acceptable*capacity-cpu)
}

type dest struct {
	u       *Unit
	room    float64
	latency float64
}

// destinations are the units that may take load from u, nearest first:
// below their acceptable level, not withdrawn, and with none of their own
// load away (they revert first).
func (p *planner) destinations(u *Unit) []dest {
	away := map[string]bool{}
	for _, m := range p.moves {
		away[m.From] = true
	}
	var ds []dest
	for _, v := range p.units {
		if v == u || p.withdraw[v.Location] || away[v.ID()] || v.Capacity <= eps || p.stale(v) {
			continue
		}
		d := p.distance(u, v)
		if d < 0 {
			continue
		}
		room := ToAccept(v.Capacity, p.eff[v.ID()], p.lim[v.ID()].Acceptable)
		if room <= eps {
			continue
		}
		ds = append(ds, dest{v, room, d})
	}
	sort.SliceStable(ds, func(i, j int) bool {
		if ds[i].latency != ds[j].latency {
			return ds[i].latency < ds[j].latency
		}
		return ds[i].u.ID() < ds[j].u.ID()
	})
	return ds
}

// Portion is an amount of one plan's CPU time chosen to move.
type Portion struct {
	Plan Plan
	CPU  float64
}

// Select picks what to move: the cheapest plans first, all of a plan or
// the part of it that completes need. avail is each plan's CPU time still
// at home.
func Select(avail [numPlans]float64, need float64) []Portion {
	var out []Portion
	for pl := Free; pl < numPlans && need > eps; pl++ {
		take := math.Min(avail[pl], need)
		if take <= eps {
			continue
		}
		out = append(out, Portion{pl, take})
		need -= take
	}
	return out
}

// Destination is a unit that can take Room ms/s.
type Destination struct {
	ID   string
	Room float64
}

// Assignment is a portion of a plan sent to one destination.
type Assignment struct {
	Plan Plan
	To   string
	CPU  float64
}

// Assign places the portions on destinations given nearest first: the
// most important plan first, each destination filled to its room before
// the next. It returns what found no room.
func Assign(portions []Portion, dests []Destination) ([]Assignment, float64) {
	var out []Assignment
	rest := 0.0
	d := 0
	for i := len(portions) - 1; i >= 0; i-- {
		left := portions[i].CPU
		for left > eps && d < len(dests) {
			take := math.Min(left, dests[d].Room)
			if take > eps {
				out = append(out, Assignment{portions[i].Plan, dests[d].ID, take})
				dests[d].Room -= take
				left -= take
			}
			if dests[d].Room <= eps {
				d++
			}
		}
		rest += math.Max(0, left)
	}
	return out, rest
}

// moveOut moves need of u's own load to destinations and returns what it
// moved and what found no room.
func (p *planner) moveOut(u *Unit, need float64) (moved, rest float64) {
	if need <= eps {
		return 0, 0
	}
	var avail [numPlans]float64
	for pl := range avail {
		avail[pl] = u.Load[pl]
	}
	for _, m := range p.moves {
		if m.From == u.ID() {
			avail[m.Plan] -= m.CPU
		}
	}
	ds := p.destinations(u)
	dd := make([]Destination, len(ds))
	for i, d := range ds {
		dd[i] = Destination{d.u.ID(), d.room}
	}
	as, rest := Assign(Select(avail, need), dd)
	for _, a := range as {
		m := &Move{From: u.ID(), To: a.To, Plan: a.Plan}
		if old, ok := p.moves[m.key()]; ok {
			m = old
		} else {
			p.moves[m.key()] = m
			p.seq[m.key()] = len(p.seq)
		}
		p.shift(m, a.CPU)
		moved += a.CPU
	}
	return moved, rest
}

// SortMoves orders moves by source, plan (most important first) and
// destination.
func SortMoves(ms []Move) {
	sort.Slice(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.From != b.From {
			return a.From < b.From
		}
		if a.Plan != b.Plan {
			return a.Plan > b.Plan
		}
		return a.To < b.To
	})
}

// Diff returns what changed from prev to next: moves added, grown or
// shrunk first (so load-balancer changes land before routes move), then
// withdrawals and announcements.
func Diff(prev, next State) []Change {
	old := map[string]Move{}
	for _, m := range prev.Moves {
		old[m.key()] = m
	}
	var cs []Change
	seen := map[string]bool{}
	for _, m := range next.Moves {
		seen[m.key()] = true
		o, had := old[m.key()]
		switch {
		case !had:
			cs = append(cs, Change{Op: "move", Move: &m})
		case math.Abs(o.Fraction-m.Fraction) > 1e-6:
			op := "move"
			if m.Fraction < o.Fraction {
				op = "revert"
			}
			cs = append(cs, Change{Op: op, Move: &m, Was: o.Fraction})
		}
	}
	var gone []Move
	for _, m := range prev.Moves {
		if !seen[m.key()] {
			g := m
			g.Fraction, g.CPU = 0, 0
			gone = append(gone, g)
		}
	}
	SortMoves(gone)
	for i := range gone {
		cs = append(cs, Change{Op: "revert", Move: &gone[i], Was: old[gone[i].key()].Fraction})
	}
	cs = revertsFirst(cs)
	was, now := map[string]bool{}, map[string]bool{}
	for _, l := range prev.Withdrawn {
		was[l] = true
	}
	for _, l := range next.Withdrawn {
		now[l] = true
		if !was[l] {
			cs = append(cs, Change{Op: "withdraw", Location: l})
		}
	}
	for _, l := range prev.Withdrawn {
		if !now[l] {
			cs = append(cs, Change{Op: "announce", Location: l})
		}
	}
	return cs
}

// revertsFirst puts every revert of a unit's own moves before the first
// move into that unit: an actuator applying the list in order brings the
// unit's own traffic home before it sends others' there. Everything else
// keeps its order.
func revertsFirst(cs []Change) []Change {
	out := make([]Change, 0, len(cs))
	done := make([]bool, len(cs))
	for i, c := range cs {
		if done[i] {
			continue
		}
		if c.Op == "move" {
			for j := i + 1; j < len(cs); j++ {
				if !done[j] && cs[j].Op == "revert" && cs[j].Move.From == c.Move.To {
					out = append(out, cs[j])
					done[j] = true
				}
			}
		}
		out = append(out, c)
		done[i] = true
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func pct(f float64) string {
	return fmt.Sprintf("%.4g%%", math.Round(f*1e6)/1e4)
}

func num(f float64) string {
	return fmt.Sprintf("%.6g", math.Round(f*1000)/1000)
}
