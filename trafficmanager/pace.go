package trafficmanager

import (
	"fmt"
	"math"
	"sort"
)

// step moves the plan in force (prev.Moves) towards target by at most
// Input.Pace of each source's own traffic: reductions first (load coming
// home, or leaving a destination that lost capacity; the farthest first,
// as reverts go), then new and growing
// moves in the order the planner made them, the most important traffic to
// the nearest destination first, so that the steps fill destinations as the
// whole plan would. A unit whose previous step has not shown in its load
// reports waits: no move into or out of it changes. It returns the moves
// in force after the step, the steps now pending, and the units waiting.
func (p *planner) step(prev State, target []Move) (applied []Move, pending []Pending, waiting []string) {
	wait := map[string]bool{}
	for _, pd := range prev.Pending {
		u := p.byID[pd.Unit]
		if u == nil || !u.ServedKnown || p.withdraw[u.Location] {
			continue
		}
		if math.Abs(u.Served-pd.Expect) > math.Abs(pd.Expect-pd.Before)/2+eps {
			wait[pd.Unit] = true
			waiting = append(waiting, pd.Unit)
			pending = append(pending, pd)
			p.notes = append(p.notes, fmt.Sprintf("%s: next step waits: it serves %s ms/s, the last step expects %s (from %s)", pd.Unit, num(u.Served), num(pd.Expect), num(pd.Before)))
		}
	}
	old := map[string]Move{}
	var kept []Move
	for _, m := range prev.Moves {
		from, to := p.byID[m.From], p.byID[m.To]
		if from == nil || to == nil || p.withdraw[from.Location] || p.withdraw[to.Location] || m.Plan < 0 || m.Plan >= numPlans {
			continue // a withdrawal is not paced: the location is gone
		}
		m.CPU = m.Fraction * from.Load[m.Plan]
		old[m.key()] = m
		kept = append(kept, m)
	}
	tgt := map[string]Move{}
	for _, m := range target {
		tgt[m.key()] = m
	}
	type item struct {
		m     Move
		delta float64
		seq   int
	}
	bySrc := map[string][]item{}
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range tgt {
		keys[k] = true
	}
	for k := range keys {
		o, had := old[k]
		t, want := tgt[k]
		m := t
		if !want {
			m = o
		}
		seq, ok := p.seq[k]
		if !ok {
			seq = len(p.seq) // gone from the plan: after every move it made
		}
		var d float64
		switch {
		case had && want:
			d = t.CPU - o.CPU
		case want:
			d = t.CPU
		default:
			d = -o.CPU
		}
		bySrc[m.From] = append(bySrc[m.From], item{m, d, seq})
	}
	out := map[string]Move{}
	for k, o := range old {
		out[k] = o
	}
	for _, src := range sortedKeys(bySrc) {
		its := bySrc[src]
		from := p.byID[src]
		sort.Slice(its, func(i, j int) bool {
			ri, rj := its[i].delta < 0, its[j].delta < 0
			if ri != rj {
				return ri
			}
			if ri {
				// Reductions as revert brings load home: the farthest
				// first, then the most important plan.
				di, dj := p.distance(from, p.byID[its[i].m.To]), p.distance(from, p.byID[its[j].m.To])
				if di != dj {
					return di > dj
				}
				if its[i].m.Plan != its[j].m.Plan {
					return its[i].m.Plan > its[j].m.Plan
				}
			}
			if its[i].seq != its[j].seq {
				return its[i].seq < its[j].seq
			}
			return its[i].m.key() < its[j].m.key()
		})
		budget := p.in.Pace * p.byID[src].own()
		for _, it := range its {
			if math.Abs(it.delta) <= eps || wait[it.m.From] || wait[it.m.To] || budget <= eps {
				continue
			}
			take := math.Copysign(math.Min(math.Abs(it.delta), budget), it.delta)
			budget -= math.Abs(take)
			m := out[it.m.key()]
			m.From, m.To, m.Plan = it.m.From, it.m.To, it.m.Plan
			m.CPU += take
			if load := p.byID[m.From].Load[m.Plan]; load > 0 {
				m.Fraction = m.CPU / load
			}
			if math.Abs(take-it.delta) <= eps {
				if t, ok := tgt[it.m.key()]; ok {
					m.Fraction, m.CPU = t.Fraction, t.CPU // exactly the target, no float dust
				}
			}
			out[it.m.key()] = m
		}
	}
	for _, m := range out {
		if m.CPU > eps && m.Fraction > eps {
			applied = append(applied, m)
		}
	}
	SortMoves(applied)
	before, after := p.sub(kept), p.sub(applied)
	for _, u := range p.units {
		id := u.ID()
		if wait[id] || p.withdraw[u.Location] {
			continue
		}
		if math.Abs(after.eff[id]-before.eff[id]) > 1e-6 {
			pending = append(pending, Pending{Unit: id, Before: before.eff[id], Expect: after.eff[id]})
		}
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].Unit < pending[j].Unit })
	return applied, pending, waiting
}
