package detectors

import (
	"errors"
	"fmt"
	"math"

	"github.com/outagewatch/outagewatch/aggregate"
)

// BGPPeersName is the name rules use for the collector-health detector.
const BGPPeersName = "bgp_peers"

func init() { Register(BGPPeersName, func() Params { return DefaultBGPPeers() }) }

// BGPPeers configures the collector-health detector. It reads the number
// of full-feed peers that each BGP collector has up and talking
// (bgp_full_feed_peers, one series per collector) and raises one
// feed-health alert per collector when that number falls under what the
// collector had in the last Window: a session reset, a peer that stopped
// sending, a collector gone silent. The routing table already keeps such
// faults out of the announced space, so no withdrawal alert fires for
// them; this detector makes sure the operator still hears of them, once.
//
// It fires as soon as a bucket shows fewer peers (the gauge is a count,
// there is no noise to wait out) and resolves when the count is back, or
// when the lower count has held for Window and so become the collector's
// normal (a peer that was decommissioned).
type BGPPeers struct {
	// Window is how far back the collector's normal peer count looks.
	Window Duration `yaml:"window"`
	// MinLost is how many peers must be missing to fire.
	MinLost int `yaml:"min_lost"`
	// MinHistory is how much history a collector needs before it is judged.
	MinHistory Duration `yaml:"min_history"`
}

// DefaultBGPPeers returns the defaults that ship.
func DefaultBGPPeers() *BGPPeers {
	return &BGPPeers{Window: Duration(24 * 3600e9), MinLost: 1, MinHistory: Duration(30 * 60e9)}
}

// Validate checks the settings.
func (p *BGPPeers) Validate() error {
	switch {
	case p.MinHistory <= 0:
		return errors.New("min_history: must be positive")
	case p.Window < p.MinHistory:
		return errors.New("window: must be at least min_history")
	case p.MinLost < 1:
		return errors.New("min_lost: must be at least 1")
	}
	return nil
}

// Build returns the detector.
func (p *BGPPeers) Build(rule string) Detector {
	return &bgpPeers{p: *p, rule: rule, states: map[string]*peersState{}}
}

type bgpPeers struct {
	p       BGPPeers
	rule    string
	states  map[string]*peersState // by entity
	scratch []float64
}

// peersState is one collector's state; exported fields are checkpointed.
type peersState struct {
	Firing bool
	Start  int64
	// Normal is the count the alert fired against, Low the fewest seen.
	Normal, Low float64
	Recent      evidenceLog
}

func (d *bgpPeers) Bucket(c *aggregate.Closed, pts []aggregate.Point, emit func(Finding)) {
	w := c.End - c.Start
	for _, pt := range pts {
		e := pt.Series.Entity
		st := stateOf(d.states, e)
		if pt.Missing {
			// The routing table emits these gauges every bucket once it
			// exists: missing means the pipeline itself has no BGP input,
			// which the pipeline's own feed check reports.
			st.Recent.add(Evidence{Time: c.Start, Value: math.NaN()})
			continue
		}
		vs, ok := recentHistory(&pt.Series.Hist, c.Start, w, pt.Series.Spacing(), d.p.Window, d.p.MinHistory, nil, &d.scratch)
		if !ok {
			st.Recent.add(Evidence{Time: c.Start, Value: pt.Value})
			continue
		}
		normal := 0.0
		for _, v := range vs {
			normal = max(normal, math.Round(v))
		}
		v := math.Round(pt.Value)
		st.Recent.add(Evidence{Time: c.Start, Value: v, Baseline: normal})
		lost := normal - v
		switch {
		case !st.Firing && lost >= float64(d.p.MinLost):
			st.Firing, st.Start, st.Normal, st.Low = true, c.Start, normal, v
			emit(d.finding(Firing, c, pt.Series.Signal.String(), e, st, v))
		case st.Firing && v >= st.Normal, st.Firing && lost < float64(d.p.MinLost):
			// Back to the count it fired against, or the lower count has
			// become the collector's normal.
			f := d.finding(Resolved, c, pt.Series.Signal.String(), e, st, v)
			f.End = c.Start
			emit(f)
			*st = peersState{Recent: st.Recent}
		case st.Firing:
			st.Low = min(st.Low, v)
		}
	}
}

func (d *bgpPeers) finding(status string, c *aggregate.Closed, sig, entity string, st *peersState, v float64) Finding {
	f := Finding{Status: status, Detector: "feed_health", Signal: sig, Entity: entity,
		Start: st.Start, At: c.End, Observed: v, Baseline: st.Normal, BaselineMethod: "max_recent",
		ChangePct: changePct(v, st.Normal), Evidence: append([]Evidence(nil), st.Recent...),
		Details: map[string]any{"peers_lost": st.Normal - v, "fewest_peers": st.Low}}
	if status == Firing {
		f.Summary = fmt.Sprintf("%s: %.0f of its %.0f full-feed BGP peers up and talking; routes from the others are not counted, so this is a feed fault, not a withdrawal",
			entity, v, st.Normal)
	} else {
		f.Summary = fmt.Sprintf("%s: %.0f full-feed BGP peers up and talking again (fewest %.0f)", entity, v, st.Low)
	}
	return f
}

func (d *bgpPeers) MarshalBinary() ([]byte, error) {
	return saveState(d.states)
}

func (d *bgpPeers) UnmarshalBinary(b []byte) error {
	states := map[string]*peersState{}
	if err := loadState(b, &states, BGPPeersName+" "+d.rule); err != nil {
		return err
	}
	d.states = states
	return nil
}
