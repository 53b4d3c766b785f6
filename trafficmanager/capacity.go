package trafficmanager

import "fmt"

// Offer is CPU time a location can take before it reaches its acceptable
// level.
type Offer struct {
	Location  string  `json:"dc"`
	LatencyMs float64 `json:"latency_ms"`
	Room      float64 `json:"room_ms"`
}

// CapacityAnswer answers "can dc take need more ms/s of CPU time?".
type CapacityAnswer struct {
	DC   string  `json:"dc"`
	Need float64 `json:"need_ms"`
	// OK says dc itself can take it.
	OK   bool    `json:"ok"`
	Room float64 `json:"room_ms"`
	// Nearest lists, when dc cannot, the nearest locations that can take
	// part of it, in latency order, until need is covered.
	Nearest []Offer `json:"nearest,omitempty"`
	// Short is what even the nearest locations cannot cover.
	Short float64 `json:"short_ms,omitempty"`
}

// Capacity answers a placement question against the plan in force, as a
// service placing a new workload would ask. A location that has load of its
// own away, or is withdrawn, offers nothing: it must take its own back
// first.
func Capacity(in Input, st State, dc string, need float64) (CapacityAnswer, error) {
	p := newPlanner(in)
	known := false
	for _, u := range p.units {
		known = known || u.Location == dc
	}
	if !known {
		return CapacityAnswer{}, fmt.Errorf("unknown data center %q", dc)
	}
	if need < 0 {
		return CapacityAnswer{}, fmt.Errorf("need %g: want >= 0", need)
	}
	for _, l := range st.Withdrawn {
		p.withdraw[l] = true
	}
	for _, m := range st.Moves {
		if p.byID[m.From] != nil && p.byID[m.To] != nil {
			mm := m
			p.moves[m.key()] = &mm
		}
	}
	p.load(false)
	away := map[string]bool{}
	for _, m := range p.moves {
		away[p.byID[m.From].Location] = true
	}
	room := map[string]float64{}
	for _, u := range p.units {
		if !p.withdraw[u.Location] && !away[u.Location] && !p.stale(u) {
			room[u.Location] += ToAccept(u.Capacity, p.eff[u.ID()], p.lim[u.ID()].Acceptable)
		}
	}
	a := CapacityAnswer{DC: dc, Need: need, Room: room[dc]}
	if a.Room >= need {
		a.OK = true
		return a, nil
	}
	var offers []Offer
	var src *Unit
	for _, u := range p.units {
		if u.Location == dc {
			src = u
			break
		}
	}
	for _, l := range sortedKeys(room) {
		if l == dc || room[l] <= eps {
			continue
		}
		var to *Unit
		for _, u := range p.units {
			if u.Location == l {
				to = u
				break
			}
		}
		if d := p.distance(src, to); d >= 0 {
			offers = append(offers, Offer{l, d, room[l]})
		}
	}
	sortOffers(offers)
	left := need
	for _, o := range offers {
		if left <= eps {
			break
		}
		a.Nearest = append(a.Nearest, o)
		left -= o.Room
	}
	if left > eps {
		a.Short = left
	}
	return a, nil
}

func sortOffers(os []Offer) {
	for i := 1; i < len(os); i++ {
		for j := i; j > 0 && (os[j].LatencyMs < os[j-1].LatencyMs || os[j].LatencyMs == os[j-1].LatencyMs && os[j].Location < os[j-1].Location); j-- {
			os[j], os[j-1] = os[j-1], os[j]
		}
	}
}

// Served is what each unit serves under the plan st (its moves and
// withdrawals, with the failover inflow of the withdrawn locations), ms
// per second: the load a view of the plan in force colours by.
func Served(in Input, st State) map[string]float64 {
	p := newPlanner(in)
	for _, l := range st.Withdrawn {
		p.withdraw[l] = true
	}
	var ms []Move
	for _, m := range st.Moves {
		if p.byID[m.From] != nil && p.byID[m.To] != nil && m.Plan >= 0 && m.Plan < numPlans {
			ms = append(ms, m)
		}
	}
	q := p.sub(ms)
	out := map[string]float64{}
	for _, u := range p.units {
		if !p.withdraw[u.Location] {
			out[u.ID()] = q.eff[u.ID()]
		}
	}
	return out
}

// Stale reports whether u's load report is past in's age limit.
func (in Input) Stale(u *Unit) bool { return in.MaxAge > 0 && u.ReportAge > in.MaxAge }
