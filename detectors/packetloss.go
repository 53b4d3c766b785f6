package detectors

import (
	"cmp"
	"encoding/gob"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/obs/quality"
)

// PacketLossName is the name rules use for the transit packet-loss detector.
const PacketLossName = "packet_loss"

func init() {
	Register(PacketLossName, func() Params { return DefaultPacketLoss() })
	// Findings carry these in Details, which the alert checkpoint gob-encodes.
	gob.Register(map[string]float64{})
	gob.Register(map[string]int{})
}

// Group-by modes of the packet-loss detector.
const (
	GroupByASN  = "asn"
	GroupBySite = "site"
)

// PacketLoss configures the transit packet-loss detector. It reads the
// packet_loss series of path entities ("path:1299@ams01>198.51.100.0/24",
// one per destination reached through a transit at a site) and judges the
// transit, not the destination: one lossy destination is that destination's
// problem, many lossy destinations at once through one transit is the
// transit's (Telia's backbone, AS1299, on 2019-06-20).
//
// A destination is lossy in a bucket when its loss is at least Threshold
// over at least MinPackets packets (fewer packets are no data: one lost
// ping of two is not 50 % loss). The transit fires once at least
// MinDestinations destinations have been lossy for For, and more than
// its usual share of lossy destinations explains by chance (usualBar),
// and resolves once fewer have been lossy for ResolveFor. A bucket in which none of the
// transit's paths was measured (the operator took the ports down, or the
// probes stopped) holds the state: no data is not recovery.
//
// GroupBy "asn" (the default) raises one alert per transit AS
// ("transit:1299") naming every site where it loses packets: a backbone
// failure is one incident however many sites see it, and destinations are
// counted once across sites. GroupBy "site" raises one per transit at a site
// ("transit:1299@ams01"), the unit at which a port shutdown acts. Details
// carry "destinations" (sorted, as an address sorts), "sites", "loss" per
// destination (the highest seen at any site), "site_destinations" (lossy
// destinations per site) and "destinations_judged" when firing, and
// "peak_lossy_destinations" of the episode when resolved.
type PacketLoss struct {
	// Threshold is the loss ratio at which a destination counts as lossy.
	Threshold float64 `yaml:"threshold"`
	// MinPackets is the fewest packets a destination's bucket needs.
	MinPackets int64 `yaml:"min_packets"`
	// MinDestinations is how many lossy destinations make the transit lossy.
	MinDestinations int `yaml:"min_destinations"`
	// For is how long the transit must be lossy before the alert fires;
	// ResolveFor how long it must not be before the alert resolves.
	For        Duration `yaml:"for"`
	ResolveFor Duration `yaml:"resolve_for"`
	// GroupBy is "asn" or "site".
	GroupBy string `yaml:"group_by"`
	// Noise is how many binomial standard deviations past its usual
	// share of lossy destinations a transit must be (usualBar); 0 judges
	// it against the usual share alone.
	Noise float64 `yaml:"noise"`
}

// DefaultPacketLoss returns the defaults that ship; Noise is the control
// limit countSigmas.
func DefaultPacketLoss() *PacketLoss {
	return &PacketLoss{Threshold: 0.1, MinPackets: 10, MinDestinations: 10,
		For: Duration(5 * 60e9), ResolveFor: Duration(15 * 60e9), GroupBy: GroupByASN,
		Noise: countSigmas}
}

// Validate checks the settings.
func (p *PacketLoss) Validate() error {
	switch {
	case !(p.Threshold > 0) || p.Threshold > 1:
		return errors.New("threshold: must be a loss ratio in (0, 1] (0.1 = 10 % of packets lost)")
	case p.MinPackets < 1:
		return errors.New("min_packets: must be at least 1")
	case p.MinDestinations < 1:
		return errors.New("min_destinations: must be at least 1")
	case p.For < 0 || p.ResolveFor < 0:
		return errors.New("for, resolve_for: must not be negative")
	case p.GroupBy != GroupByASN && p.GroupBy != GroupBySite:
		return fmt.Errorf("group_by: %q, want %s or %s", p.GroupBy, GroupByASN, GroupBySite)
	case !(p.Noise >= 0) || math.IsInf(p.Noise, 0):
		return errors.New("noise: must be a finite number of standard deviations, at least 0")
	}
	return nil
}

// Build returns the detector.
func (p *PacketLoss) Build(rule string) Detector {
	return &packetLoss{p: *p, rule: rule, states: map[string]*lossState{}}
}

type packetLoss struct {
	p      PacketLoss
	rule   string
	states map[string]*lossState // by alert entity
	// unjudgeable holds, as "signal entity", the transits this rule
	// cannot judge (see Unjudgeable), and why.
	unjudgeable unjudged[string]
}

// Grouped says that the alerts name transits, not the path series read.
func (d *packetLoss) Grouped() {}

// Unjudgeable lists, as "signal entity", the transits this rule cannot
// judge at its threshold: one measured through fewer destinations than
// min_destinations, which can never have that many lossy, or one whose
// usual share of lossy destinations, plus its binomial bar, is all of
// them.
func (d *packetLoss) Unjudgeable() []string {
	return slices.Sorted(maps.Keys(d.unjudgeable))
}

// lossState is one transit's state; exported fields are checkpointed.
type lossState struct {
	Run, Recovered int
	RunStart       int64
	Firing         bool
	FireStart      int64
	// Peak is the most lossy destinations seen in one bucket of the
	// current episode, for the resolve message.
	Peak int
	// Usual is the share of the transit's measured destinations that are
	// lossy in an ordinary bucket (an exponentially weighted mean over
	// about a day of buckets that did not fire), and Seen how many
	// buckets it holds (see usualBar).
	Usual float64
	Seen  int
}

// usualDay is the memory of lossState.Usual: a day, the longest cycle
// a path's background loss follows (evening queues).
const usualDay = int64(24 * 3600e9)

// usualBar is the number of lossy destinations out of judged that chance
// gives a transit whose paths lose packets as usual: the usual share
// q of them, plus k (the rule's noise) binomial standard deviations
// √(judged·q·(1−q)). A transit whose paths each drop a packet now and
// then has a few destinations past the threshold in every bucket (at 1 %
// background loss and 10 packets, one in ten); the more destinations it
// carries, the more of them, and ten at once is no longer news. A
// transit is judged once it has an hour of ordinary buckets, as a
// baseline needs min_history elsewhere: before, it has no usual to be
// judged against, and the bar is out of reach.
func (st *lossState) usualBar(judged int, w int64, k float64) float64 {
	if int64(st.Seen)*w < 3600e9 {
		return math.Inf(1)
	}
	n, q := float64(judged), st.Usual
	return n*q + k*math.Sqrt(n*q*(1-q))
}

// learnUsual adds an ordinary bucket's share of lossy destinations.
func (st *lossState) learnUsual(lossy, judged int, w int64) {
	if judged == 0 {
		return
	}
	share := float64(lossy) / float64(judged)
	alpha := max(float64(w)/float64(usualDay), 1/float64(st.Seen+1))
	st.Usual += (share - st.Usual) * alpha
	if st.Seen < math.MaxInt32 {
		st.Seen++
	}
}

// lossGroup is what one bucket says about one transit.
type lossGroup struct {
	entity     string
	signal     string
	judged     map[string]bool            // destinations measured
	lossy      map[string]float64         // destination → highest loss
	siteLossy  map[string]map[string]bool // site → lossy destinations
	lost, sent float64                    // over every judged path
}

func (d *packetLoss) Bucket(c *aggregate.Closed, pts []aggregate.Point, emit func(Finding)) {
	w := c.End - c.Start
	groups := map[string]*lossGroup{}
	var order []string
	for _, pt := range pts {
		tr, dest, ok := quality.ParsePathEntity(pt.Series.Entity)
		if !ok || pt.Missing || math.IsNaN(pt.Value) || pt.Count < d.p.MinPackets {
			continue
		}
		_, id, _ := strings.Cut(tr, ":")
		asn, site, _ := strings.Cut(id, "@")
		key := tr
		if d.p.GroupBy == GroupByASN {
			key = obs.KindTransit + ":" + asn
		}
		g := groups[key]
		if g == nil {
			g = &lossGroup{entity: key, signal: pt.Series.Signal.String(), judged: map[string]bool{}, lossy: map[string]float64{}, siteLossy: map[string]map[string]bool{}}
			groups[key] = g
			order = append(order, key)
		}
		g.judged[dest] = true
		g.lost += pt.Value * float64(pt.Count)
		g.sent += float64(pt.Count)
		if pt.Value >= d.p.Threshold {
			if prev, seen := g.lossy[dest]; !seen || pt.Value > prev {
				g.lossy[dest] = pt.Value
			}
			if g.siteLossy[site] == nil {
				g.siteLossy[site] = map[string]bool{}
			}
			g.siteLossy[site][dest] = true
		}
	}
	// Transits that were not measured at all hold their state.
	slices.Sort(order)
	forN, resolveN := d.p.For.buckets(w), d.p.ResolveFor.buckets(w)
	for _, key := range order {
		g := groups[key]
		st := stateOf(d.states, key)
		n := len(g.lossy)
		bar := st.usualBar(len(g.judged), w, d.p.Noise)
		why := judgeableNow
		switch judged := len(g.judged); {
		case judged < d.p.MinDestinations:
			why = unjudgeableCount
		case !math.IsInf(bar, 1) && bar >= float64(judged):
			why = unjudgeableLevel
		}
		d.unjudgeable.set(g.signal+" "+g.entity, why)
		if n >= d.p.MinDestinations && float64(n) > bar {
			if st.Run == 0 {
				st.RunStart = c.Start
			}
			if !st.Firing && st.Run == 0 {
				st.Peak = 0
			}
			st.Run++
			st.Recovered = 0
			st.Peak = max(st.Peak, n)
			if !st.Firing && st.Run >= forN {
				st.Firing, st.FireStart = true, st.RunStart
				emit(d.finding(Firing, c, g, st))
			}
			continue
		}
		st.Run = 0
		if !st.Firing {
			st.learnUsual(n, len(g.judged), w)
			continue
		}
		st.Recovered++
		if st.Recovered >= resolveN {
			st.Firing, st.Recovered = false, 0
			f := d.finding(Resolved, c, g, st)
			f.End = c.Start - int64(resolveN-1)*w
			emit(f)
		}
	}
}

func (d *packetLoss) finding(status string, c *aggregate.Closed, g *lossGroup, st *lossState) Finding {
	dests := make([]string, 0, len(g.lossy))
	loss := make(map[string]float64, len(g.lossy))
	for dst, v := range g.lossy {
		dests = append(dests, dst)
		loss[dst] = round(v, 4)
	}
	slices.SortFunc(dests, compareDest)
	sites := make([]string, 0, len(g.siteLossy))
	perSite := make(map[string]int, len(g.siteLossy))
	for s, ds := range g.siteLossy {
		sites = append(sites, s)
		perSite[s] = len(ds)
	}
	slices.Sort(sites)
	overall := 0.0
	if g.sent > 0 {
		overall = g.lost / g.sent
	}
	name := g.entity
	if _, id, ok := strings.Cut(g.entity, ":"); ok {
		name = "AS" + id
	}
	f := Finding{Status: status, Detector: PacketLossName, Signal: quality.PacketLoss.String(), Entity: g.entity,
		Start: st.FireStart, At: c.End, Observed: round(overall, 4), Baseline: d.p.Threshold,
		BaselineMethod: "threshold", ChangePct: 0,
		Details: map[string]any{"destinations_judged": len(g.judged), "lossy_destinations": len(dests)}}
	if status == Firing {
		f.Details["destinations"], f.Details["sites"], f.Details["loss"], f.Details["site_destinations"] = dests, sites, loss, perSite
		f.Summary = fmt.Sprintf("packet loss through %s: %d of %d destinations at least %.0f%% lossy at %s; %.1f%% of packets lost",
			name, len(dests), len(g.judged), d.p.Threshold*100, strings.Join(sites, ", "), overall*100)
	} else {
		f.Details["peak_lossy_destinations"] = st.Peak
		f.Summary = fmt.Sprintf("packet loss through %s over: %d of %d destinations lossy (peak %d)",
			name, len(dests), len(g.judged), st.Peak)
	}
	return f
}

// compareDest orders destinations as their addresses sort (198.18.2.0/24
// before 198.18.10.0/24), then anything that is not a prefix by name.
func compareDest(a, b string) int {
	pa, ea := netip.ParsePrefix(a)
	pb, eb := netip.ParsePrefix(b)
	switch {
	case ea == nil && eb == nil:
		return cmp.Or(pa.Addr().Compare(pb.Addr()), cmp.Compare(pa.Bits(), pb.Bits()))
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	na, oka := asNumber(a)
	nb, okb := asNumber(b)
	if oka && okb {
		return cmp.Compare(na, nb)
	}
	return cmp.Compare(a, b)
}

func asNumber(s string) (uint64, bool) {
	rest, ok := strings.CutPrefix(s, "as")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 32)
	return n, err == nil
}

func (d *packetLoss) MarshalBinary() ([]byte, error) {
	return saveState(d.states)
}

func (d *packetLoss) UnmarshalBinary(b []byte) error {
	states := map[string]*lossState{}
	if err := loadState(b, &states, PacketLossName+" "+d.rule); err != nil {
		return err
	}
	d.states = states
	return nil
}
