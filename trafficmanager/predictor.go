package trafficmanager

import (
	"fmt"
	"sort"
	"strings"
)

// Predictor learns the failover matrix from what withdrawals did: each
// time a location's routes are withdrawn (a drain, a planned withdrawal or
// the error trigger), the load reports of the tick before and the tick
// after say where its traffic went. Once a location has After
// observations, its learnt row replaces the hand-written one.
type Predictor struct {
	// After is the observations of a location's withdrawals that make its
	// learnt row replace the topology's; 0 never replaces. Three is the
	// default the commands use: one observation is one incident's noise,
	// and averaging three halves its spread (1/√3 ≈ 0.58).
	After int

	obs     []Withdrawal
	prev    map[string]float64 // each location's measured load at the last tick
	prevOut map[string]bool    // the locations withdrawn at the last tick
	used    map[string]int     // observations behind each row last applied
}

// locationLoads sums each location's measured load (Served), or its own
// load where nothing was measured.
func locationLoads(in Input) map[string]float64 {
	out := map[string]float64{}
	for i := range in.Units {
		u := &in.Units[i]
		if u.ServedKnown {
			out[u.Location] += u.Served
		} else {
			out[u.Location] += u.own()
		}
	}
	return out
}

// Observe takes a tick's input (its load reports) and the locations the
// plan in force withdraws. A location withdrawn since the last tick is
// recorded with the last tick's loads as before and this one's as after.
// When several locations changed at once (withdrawn or announced), their
// gains cannot be told apart and nothing is recorded.
func (p *Predictor) Observe(in Input, withdrawn []string) {
	now := locationLoads(in)
	out := map[string]bool{}
	for _, l := range withdrawn {
		out[l] = true
	}
	if p.prev != nil {
		var fresh []string
		changed := 0
		for l := range now {
			if out[l] != p.prevOut[l] {
				changed++
				if out[l] {
					fresh = append(fresh, l)
				}
			}
		}
		if len(fresh) == 1 && changed == 1 && p.prev[fresh[0]] > 0 {
			w := Withdrawal{Location: fresh[0], Load: p.prev[fresh[0]], Before: map[string]float64{}, After: map[string]float64{}}
			for l, v := range now {
				if l != w.Location && !out[l] {
					w.Before[l], w.After[l] = p.prev[l], v
				}
			}
			p.Record(w)
		}
	}
	p.prev, p.prevOut = now, out
}

// Record adds one observed withdrawal.
func (p *Predictor) Record(w Withdrawal) { p.obs = append(p.obs, w) }

// Observations returns the withdrawals recorded, per location.
func (p *Predictor) Observations() map[string]int {
	n := map[string]int{}
	for _, w := range p.obs {
		n[w.Location]++
	}
	return n
}

// Matrix returns the learnt rows of the locations with at least After
// observations.
func (p *Predictor) Matrix() map[string]map[string]float64 {
	if p.After <= 0 {
		return nil
	}
	n := p.Observations()
	out := map[string]map[string]float64{}
	for l, row := range LearnFailover(p.obs) {
		if n[l] >= p.After {
			out[l] = row
		}
	}
	return out
}

// Apply returns in with the learnt rows in place of the topology's, and a
// note for each row that replaced the topology's since the last call.
func (p *Predictor) Apply(in Input) (Input, []string) {
	m := p.Matrix()
	if len(m) == 0 {
		return in, nil
	}
	if p.used == nil {
		p.used = map[string]int{}
	}
	n := p.Observations()
	fo := make(map[string]map[string]float64, len(in.Failover)+len(m))
	for l, row := range in.Failover {
		fo[l] = row
	}
	var notes []string
	for _, l := range sortedKeys(m) {
		fo[l] = m[l]
		if p.used[l] != n[l] {
			p.used[l] = n[l]
			var parts []string
			for _, to := range sortedKeys(m[l]) {
				parts = append(parts, fmt.Sprintf("%s %s", to, pct(m[l][to])))
			}
			notes = append(notes, fmt.Sprintf("%s: failover learnt from %d withdrawals replaces the topology's: %s", l, n[l], strings.Join(parts, ", ")))
		}
	}
	in.Failover = fo
	return in, notes
}

// Overload is a location predicted above its maximum.
type Overload struct {
	Location string  `json:"location"`
	Util     float64 `json:"util"`
	Max      float64 `json:"max"`
}

// Prediction is what losing one location would do, before any shedding.
type Prediction struct {
	Location string `json:"location"`
	// First lists the neighbours its own failover row alone would push
	// above their maximum.
	First []Overload `json:"first"`
	// Fails lists the locations the cascade pushes past their capacity:
	// they cannot serve, and their traffic follows their own rows in turn.
	Fails []string `json:"fails,omitempty"`
	// Cascade lists the locations above their maximum once the cascade
	// has settled.
	Cascade []Overload `json:"cascade"`
	// Notes are what the planner says when the location is drained: the
	// load it could not place after shedding pre-emptively.
	Notes []string `json:"notes,omitempty"`
}

// Overloads reports whether the loss overloads anyone.
func (p Prediction) Overloads() bool { return len(p.First) > 0 || len(p.Cascade) > 0 }

// Predict sweeps every location of in: "what if it went offline". Each
// location's own load lands by the failover matrix; the first layer is its
// row alone, the cascade follows the rows of every location pushed past
// its capacity (100 %) until none is. A location's maximum is its units'
// maximum weighted by capacity.
func Predict(in Input) []Prediction {
	own, capa, maxu := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for i := range in.Units {
		u := &in.Units[i]
		lim, _ := u.Limits()
		own[u.Location] += u.own()
		capa[u.Location] += u.Capacity
		maxu[u.Location] += lim.Max * u.Capacity
	}
	served := func(gone map[string]bool) map[string]float64 {
		s := map[string]float64{}
		for l := range own {
			if !gone[l] {
				s[l] += own[l]
			}
		}
		for w := range gone {
			land, _, _ := Landing(in.Failover, gone, w)
			for to, sh := range land {
				s[to] += own[w] * sh
			}
		}
		return s
	}
	over := func(s map[string]float64, gone map[string]bool) []Overload {
		var out []Overload
		for _, l := range sortedKeys(s) {
			if gone[l] || capa[l] <= eps {
				continue
			}
			if u, m := s[l]/capa[l], maxu[l]/capa[l]; u > m+eps {
				out = append(out, Overload{l, u, m})
			}
		}
		return out
	}
	var out []Prediction
	for _, l := range sortedKeys(own) {
		pr := Prediction{Location: l}
		gone := map[string]bool{l: true}
		pr.First = over(served(gone), gone)
		for {
			s := served(gone)
			added := false
			for _, n := range sortedKeys(s) {
				if !gone[n] && s[n] > capa[n]+eps {
					gone[n] = true
					pr.Fails = append(pr.Fails, n)
					added = true
				}
			}
			if !added {
				pr.Cascade = over(s, gone)
				break
			}
		}
		drained := in
		drained.Units = append([]Unit(nil), in.Units...)
		for i := range drained.Units {
			if drained.Units[i].Location == l {
				drained.Units[i].Capacity = 0
			}
		}
		drained.MaxWithdrawn = max(drained.MaxWithdrawn, 1)
		for _, n := range Tick(drained, State{}).Notes {
			if strings.Contains(n, "found no destination") || strings.Contains(n, "cannot move") {
				pr.Notes = append(pr.Notes, n)
			}
		}
		out = append(out, pr)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Location < out[j].Location })
	return out
}
