// Package tmfeed turns data-center load reports (the dcload stream) into
// Traffic Manager ticks: per tick window, the latest report of each data
// center or section gives its capacity and its load per plan, and the
// reports' p95 SLI against CPU make the history the maximum threshold is
// learnt from. It keeps the planner pure: the planner sees only the
// Input this package builds.
package tmfeed

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/ingest/dcload"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

// Feed collects reports into ticks.
type Feed struct {
	// Width of a tick window. Default 5m.
	Width time.Duration
	// Learn, if set, learns each unit's maximum threshold from its
	// history; nil keeps the topology's.
	Learn *trafficmanager.LearnConfig
	// History is the samples kept per unit. Default 2016 (a week of
	// five-minute reports).
	History int
	// LearnEvery refits after this many ticks (default 12, an hour of
	// five-minute ticks): a threshold drifts over days, and a fit over a
	// week of samples costs more than a tick should.
	LearnEvery int
	ticks      int

	topo   *trafficmanager.Scenario
	start  trafficmanager.Input
	byDC   map[string]int // report dc name → unit index in start
	cur    int64          // current window start, Unix ns; 0 before the first report
	latest map[int]dcload.Load
	errs   map[int]float64 // each unit's last edge error share
	first  int64           // the first window's start: when silence starts counting
	hist   map[int][]trafficmanager.Sample
	learnt map[int]*trafficmanager.Learnt
}

// DCName is the dcload name of a unit: its ID with "/" written "." (dcload
// names allow no slash), so section s1 of IAD reports as "IAD.s1".
func DCName(unitID string) string { return strings.ReplaceAll(unitID, "/", ".") }

// New returns a feed for the topology of a scenario (its units, thresholds,
// latencies and failover matrix; its ticks are ignored).
func New(topo *trafficmanager.Scenario) *Feed {
	start, _ := topo.Inputs()
	f := &Feed{Width: 5 * time.Minute, History: 2016, LearnEvery: 12, topo: topo, start: start, byDC: map[string]int{},
		latest: map[int]dcload.Load{}, errs: map[int]float64{}, hist: map[int][]trafficmanager.Sample{}, learnt: map[int]*trafficmanager.Learnt{}}
	for i := range start.Units {
		f.byDC[DCName(start.Units[i].ID())] = i
	}
	return f
}

// Tick is the planner input for one closed window.
type Tick struct {
	At    time.Time // the window's end
	Input trafficmanager.Input
}

// Add takes one report. A report that opens a new window closes the
// current one, whose tick is returned. A report for an unknown data
// center, or older than the current window, is an error and changes
// nothing.
func (f *Feed) Add(l dcload.Load) (*Tick, error) {
	i, ok := f.byDC[l.DC]
	if !ok {
		return nil, fmt.Errorf("dc %q is not in the topology", l.DC)
	}
	w := l.Time - l.Time%int64(f.Width)
	if f.cur != 0 && w < f.cur {
		return nil, fmt.Errorf("dc %s: report at %s is older than the open window %s", l.DC,
			time.Unix(0, l.Time).UTC().Format(time.RFC3339), time.Unix(0, f.cur).UTC().Format(time.RFC3339))
	}
	var closed *Tick
	if f.cur != 0 && w > f.cur {
		closed = f.close()
	}
	f.cur = w
	if f.first == 0 {
		f.first = w
	}
	f.latest[i] = l
	if !math.IsNaN(l.ErrShare) {
		f.errs[i] = l.ErrShare
	}
	if !math.IsNaN(l.CPUUtil) && !math.IsNaN(l.SLIp95ms) {
		h := append(f.hist[i], trafficmanager.Sample{CPU: l.CPUUtil, SLI: l.SLIp95ms})
		if len(h) > f.History {
			h = h[len(h)-f.History:]
		}
		f.hist[i] = h
	}
	return closed, nil
}

// Flush closes the open window, if any.
func (f *Feed) Flush() *Tick {
	if f.cur == 0 {
		return nil
	}
	t := f.close()
	f.cur = 0
	return t
}

// close builds the input of the current window: a unit without a report
// keeps its last known values (missing is not zero), and its report's age
// at the window's end, measured from the first window for a unit that
// never reported, lets the planner tell a silent unit from a quiet one.
// The CPU time a report of this window measured is what paced moves wait
// on; the last edge error share stands until another arrives.
func (f *Feed) close() *Tick {
	in := f.start
	in.Units = append([]trafficmanager.Unit(nil), f.start.Units...)
	end := f.cur + int64(f.Width)
	for i := range in.Units {
		u := &in.Units[i]
		since := f.first
		if l, ok := f.latest[i]; ok {
			since = l.Time
			if l.Time >= f.cur && !math.IsNaN(l.CPUms) {
				u.Served, u.ServedKnown = l.CPUms, true
			}
		}
		u.ReportAge = time.Duration(end - since)
		u.ErrorRate = f.errs[i]
		if l, ok := f.latest[i]; ok {
			if !math.IsNaN(l.CPUms) && !math.IsNaN(l.CPUUtil) && l.CPUUtil > 0 {
				u.Capacity = l.CPUms / l.CPUUtil
			}
			for p := range dcload.NumPlans {
				if v := l.PlanCPUms[p]; !math.IsNaN(v) {
					u.Load[p] = v
				}
			}
		}
		if f.Learn != nil {
			if f.learnt[i] == nil || f.ticks%max(1, f.LearnEvery) == 0 {
				cfg := *f.Learn
				if u.Thresholds.SLO > 0 {
					cfg.SLO = u.Thresholds.SLO // the unit's own SLO
				}
				l := trafficmanager.LearnMax(f.hist[i], cfg)
				f.learnt[i] = &l
			}
			u.Learnt = f.learnt[i]
		}
	}
	f.ticks++
	// The next window starts from what this one knew.
	f.start = in
	f.start.Units = append([]trafficmanager.Unit(nil), in.Units...)
	for i := range f.start.Units {
		f.start.Units[i].Learnt = nil
		f.start.Units[i].ServedKnown = false
	}
	return &Tick{At: time.Unix(0, end).UTC(), Input: in}
}

// Learnt returns each unit's last learnt threshold, by unit ID.
func (f *Feed) Learnt() map[string]trafficmanager.Learnt {
	out := map[string]trafficmanager.Learnt{}
	ids := make([]int, 0, len(f.learnt))
	for i := range f.learnt {
		ids = append(ids, i)
	}
	sort.Ints(ids)
	for _, i := range ids {
		out[f.start.Units[i].ID()] = *f.learnt[i]
	}
	return out
}
