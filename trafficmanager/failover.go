package trafficmanager

import "sort"

// Withdrawal is what was seen when a location's anycast routes were
// withdrawn: its load just before, and every other location's load before
// and after (with nothing else changing in between, ideally one tick
// apart).
type Withdrawal struct {
	Location string
	Load     float64
	Before   map[string]float64
	After    map[string]float64
}

// LearnFailover estimates the failover matrix from past withdrawals: the
// share of a withdrawn location's load that each other location gained,
// averaged over the withdrawals of that location. A location that lost
// load counts as gaining none (noise, or its own moves), and shares that
// add up to more than one are scaled down to one, since a location cannot
// send away more than it had.
func LearnFailover(ws []Withdrawal) map[string]map[string]float64 {
	sum := map[string]map[string]float64{}
	count := map[string]int{}
	for _, w := range ws {
		if w.Load <= 0 {
			continue
		}
		count[w.Location]++
		if sum[w.Location] == nil {
			sum[w.Location] = map[string]float64{}
		}
		row := map[string]float64{}
		total := 0.0
		for loc, after := range w.After {
			if loc == w.Location {
				continue
			}
			gain := after - w.Before[loc]
			if gain > 0 {
				row[loc] = gain / w.Load
				total += row[loc]
			}
		}
		for loc, v := range row {
			if total > 1 {
				v /= total
			}
			sum[w.Location][loc] += v
		}
	}
	out := map[string]map[string]float64{}
	locs := make([]string, 0, len(sum))
	for l := range sum {
		locs = append(locs, l)
	}
	sort.Strings(locs)
	for _, l := range locs {
		out[l] = map[string]float64{}
		for to, v := range sum[l] {
			out[l][to] = v / float64(count[l])
		}
	}
	return out
}
