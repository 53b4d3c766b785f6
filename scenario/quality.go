package scenario

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/quality"
	"github.com/outagewatch/outagewatch/obs"
)

// QualityConfig is the `quality:` section of a fixture: what probes measure,
// rendered as quality-json measurements (ingest/quality). Two kinds of
// probes:
//
//   - probe groups in a country's access networks ping a nearby target and
//     run a throughput test: latency_p50/p95 and bandwidth_p50 of each
//     network (asn:N) and of the country;
//   - path probes at the operator's sites ping destinations through each
//     transit: packet_loss per destination (path:1299@ams01>198.18.3.0/24)
//     and per transit.
//
// The YAML:
//
//	quality:
//	  start: 2025-04-21T00:00:00Z   # optional: the stream's own window inside the fixture's
//	  interval: 5m                  # one round of measurements per interval
//	  probes:
//	    - country: ES
//	      networks: [3352, 12479]   # src_asn of the probes
//	      rtt_ms: 22                # typical RTT at quiet hours; networks spread ±10 %
//	      jitter_ms: 2              # spread of single pings above it (half-normal)
//	      bandwidth_mbps: 90        # typical throughput (spread ±10 % per test)
//	      measurements: 2           # per network per interval
//	      pings: 5                  # RTT samples per measurement
//	      utc_offset: 2             # default: the fixture country's
//	      evening: {rtt: 0.3, bandwidth: 0.25}  # peak congestion at 21:00 local
//	      day_to_day: 0.2           # relative spread of the evening peak between days
//	  transits:
//	    - {asn: 1299, sites: [ams01, fra01], destinations: 40, sent: 20, loss: 0.002, evening_loss: 0.01}
//	  episodes:
//	    - name: blackout
//	      start: 2025-04-28T10:33:00Z
//	      end: 2025-04-28T20:00:00Z
//	      ramp_down: 5m               # reaching the full change
//	      ramp_up: 6h                 # back to normal after end
//	      targets: ["country:ES"]     # probe groups (country:CC, asn:N) or transits (transit:1299, transit:1299@ams01)
//	      rtt_factor: 1.8             # multiplies RTT
//	      bandwidth_factor: 0.6       # multiplies bandwidth
//	      loss: 0.3                   # loss ratio on the affected paths (or added to probes' pings)
//	      destinations: 0.85          # share of a transit's destinations affected (default all)
//
// Evening congestion is a smooth bump peaking at 21:00 local time and
// lasting from 18:00 to midnight, its height drawn afresh each day. Every
// path measures each interval at its own fixed offset, so an episode
// starting mid-bucket affects part of that bucket, as a real one would.
// Destinations are 198.18.i.0/24 (RFC 2544 benchmarking space), shared by
// every transit: each transit reaches the same origins, the first
// `destinations` of them. Keep record counts small (a few hundred
// measurements per interval at most) so fixtures replay in seconds.
type QualityConfig struct {
	Start    time.Time          `yaml:"start"`
	End      time.Time          `yaml:"end"`
	Interval detectors.Duration `yaml:"interval"`
	Probes   []ProbeGroup       `yaml:"probes"`
	Transits []TransitPaths     `yaml:"transits"`
	Episodes []QualityEpisode   `yaml:"episodes"`
}

// ProbeGroup is a set of probes in the access networks of one country.
type ProbeGroup struct {
	Country       string    `yaml:"country"`
	Networks      []uint32  `yaml:"networks"`
	RTTms         float64   `yaml:"rtt_ms"`
	JitterMs      float64   `yaml:"jitter_ms"`
	BandwidthMbps float64   `yaml:"bandwidth_mbps"`
	Loss          float64   `yaml:"loss"`
	Measurements  int       `yaml:"measurements"`
	Pings         int       `yaml:"pings"`
	UTCOffset     *float64  `yaml:"utc_offset"`
	Evening       Congested `yaml:"evening"`
	DayToDay      float64   `yaml:"day_to_day"`
}

// Congested is the height of the evening peak: RTT up and bandwidth down by
// these fractions, and loss added, at 21:00 local time.
type Congested struct {
	RTT       float64 `yaml:"rtt"`
	Bandwidth float64 `yaml:"bandwidth"`
	Loss      float64 `yaml:"loss"`
}

// TransitPaths are the paths through one transit at the operator's sites.
type TransitPaths struct {
	ASN          uint32   `yaml:"asn"`
	Name         string   `yaml:"name"`
	Sites        []string `yaml:"sites"`
	Destinations int      `yaml:"destinations"`
	Sent         uint32   `yaml:"sent"`
	Loss         float64  `yaml:"loss"`
	EveningLoss  float64  `yaml:"evening_loss"`
	UTCOffset    float64  `yaml:"utc_offset"`
}

// QualityEpisode changes quality for its targets between Start and End.
type QualityEpisode struct {
	Name            string             `yaml:"name"`
	Start           time.Time          `yaml:"start"`
	End             time.Time          `yaml:"end"`
	RampDown        detectors.Duration `yaml:"ramp_down"`
	RampUp          detectors.Duration `yaml:"ramp_up"`
	Targets         []string           `yaml:"targets"`
	RTTFactor       float64            `yaml:"rtt_factor"`
	BandwidthFactor float64            `yaml:"bandwidth_factor"`
	Loss            float64            `yaml:"loss"`
	Destinations    float64            `yaml:"destinations"`
}

func init() {
	RegisterSection("quality", func(s *Spec, node *yaml.Node) (Renderer, error) {
		// Decode strictly: a misspelt key must not leave a default in force.
		raw, err := yaml.Marshal(node)
		if err != nil {
			return nil, err
		}
		var c QualityConfig
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			return nil, err
		}
		if err := c.validate(s); err != nil {
			return nil, err
		}
		return &qualityRenderer{c: c}, nil
	})
}

const maxDestinations = 512

func (c *QualityConfig) validate(s *Spec) error {
	if c.Start.IsZero() || c.Start.Before(s.Start) {
		c.Start = s.Start
	}
	if c.End.IsZero() || c.End.After(s.End) {
		c.End = s.End
	}
	if !c.End.After(c.Start) {
		return fmt.Errorf("start and end: want end after start, inside the fixture")
	}
	if c.Interval == 0 {
		c.Interval = detectors.Duration(Bucket)
	}
	if c.Interval < detectors.Duration(time.Minute) || c.Interval > detectors.Duration(time.Hour) {
		return fmt.Errorf("interval: %v, want between 1m and 1h", time.Duration(c.Interval))
	}
	if len(c.Probes) == 0 && len(c.Transits) == 0 {
		return fmt.Errorf("no probes and no transits")
	}
	for i := range c.Probes {
		g := &c.Probes[i]
		where := fmt.Sprintf("probes[%d] (%s)", i, g.Country)
		switch {
		case len(g.Country) != 2:
			return fmt.Errorf("%s: country: want a two-letter code", where)
		case len(g.Networks) == 0:
			return fmt.Errorf("%s: networks: list the probes' AS numbers", where)
		case !(g.RTTms > 0) || g.JitterMs < 0 || g.BandwidthMbps < 0:
			return fmt.Errorf("%s: want rtt_ms > 0, jitter_ms and bandwidth_mbps ≥ 0", where)
		case g.Loss < 0 || g.Loss > 1 || g.Evening.Loss < 0 || g.Evening.Loss > 1:
			return fmt.Errorf("%s: loss: want a ratio in [0, 1]", where)
		case g.Evening.RTT < 0 || g.Evening.Bandwidth < 0 || g.Evening.Bandwidth >= 1 || g.DayToDay < 0 || g.DayToDay > 1:
			return fmt.Errorf("%s: evening and day_to_day: want rtt ≥ 0, bandwidth in [0, 1), day_to_day in [0, 1]", where)
		}
		g.Country = strings.ToUpper(g.Country)
		if g.Measurements == 0 {
			g.Measurements = 2
		}
		if g.Pings == 0 {
			g.Pings = 5
		}
		if g.Measurements < 1 || g.Measurements > 20 || g.Pings < 1 || g.Pings > 50 {
			return fmt.Errorf("%s: want 1 to 20 measurements of 1 to 50 pings", where)
		}
		if g.UTCOffset == nil {
			off := s.Countries[g.Country].UTCOffset
			g.UTCOffset = &off
		}
	}
	for i := range c.Transits {
		tr := &c.Transits[i]
		where := fmt.Sprintf("transits[%d] (AS%d)", i, tr.ASN)
		switch {
		case tr.ASN == 0:
			return fmt.Errorf("%s: no asn", where)
		case len(tr.Sites) == 0:
			return fmt.Errorf("%s: sites: name the sites the transit is measured at", where)
		case tr.Destinations < 1 || tr.Destinations > maxDestinations:
			return fmt.Errorf("%s: destinations: want 1 to %d", where, maxDestinations)
		case tr.Loss < 0 || tr.Loss > 1 || tr.EveningLoss < 0 || tr.EveningLoss > 1:
			return fmt.Errorf("%s: loss and evening_loss: want ratios in [0, 1]", where)
		}
		for _, site := range tr.Sites {
			m := quality.Measurement{Time: 1, Site: site, Sent: 1}
			if err := m.Validate(); err != nil || site == "" {
				return fmt.Errorf("%s: site %q: want letters, digits, '-', '_', '.'", where, site)
			}
		}
		if tr.Sent == 0 {
			tr.Sent = 20
		}
	}
	for i, e := range c.Episodes {
		where := fmt.Sprintf("episodes[%d] %q", i, e.Name)
		switch {
		case !e.End.After(e.Start) || len(e.Targets) == 0:
			return fmt.Errorf("%s: want end after start and targets", where)
		case e.RTTFactor < 0 || e.BandwidthFactor < 0 || e.Loss < 0 || e.Loss > 1 || e.Destinations < 0 || e.Destinations > 1:
			return fmt.Errorf("%s: want rtt_factor, bandwidth_factor ≥ 0, loss and destinations in [0, 1]", where)
		}
		for _, t := range e.Targets {
			for _, p := range strings.Split(t, "&") {
				if _, err := path.Match(p, ""); err != nil || !strings.Contains(p, ":") {
					return fmt.Errorf("%s: target %q: want kind:pattern such as \"country:ES\" or \"transit:1299\"", where, t)
				}
			}
		}
		if e.Destinations == 0 {
			c.Episodes[i].Destinations = 1
		}
	}
	return nil
}

type qualityRenderer struct{ c QualityConfig }

func (*qualityRenderer) Stream() string { return quality.Stream }

// progress is how far episode e has taken effect at t: 0 before, 1 in full.
func (e *QualityEpisode) progress(t time.Time) float64 {
	ev := Event{Start: e.Start, End: e.End, RampDown: e.RampDown, RampUp: e.RampUp, Factor: 0}
	return 1 - ev.factorAt(t)
}

func (e *QualityEpisode) matches(ents []string) bool {
	return (&Event{Targets: e.Targets}).matches(ents)
}

// bump is the evening congestion shape: 1 at 21:00 local, 0 before 18:00
// and after midnight.
func bump(t time.Time, offset float64) float64 {
	lt := t.Add(time.Duration(offset * float64(time.Hour)))
	h := float64(lt.Hour()) + float64(lt.Minute())/60 + float64(lt.Second())/3600
	if h < 18 {
		return 0
	}
	x := math.Cos(math.Pi * (h - 21) / 6)
	return x * x
}

// pathProbe is one destination through one transit at one site.
type pathProbe struct {
	tr     *TransitPaths
	site   string
	dst    netip.Addr
	idx    int
	offset time.Duration
	ents   []string
}

type pending struct {
	t int64
	m quality.Measurement
}

func destAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, byte(18 + i/256), byte(i % 256), 1})
}

// Render writes the measurements of every interval, in time order.
func (r *qualityRenderer) Render(s *Spec, emit func(*ingest.Record)) error {
	c := &r.c
	rng := rand.New(rand.NewPCG(s.Seed, 0x7175616c697479))
	interval := time.Duration(c.Interval)
	days := int(c.End.Sub(c.Start)/(24*time.Hour)) + 2
	// Per group: each network's offset from the group's typical RTT, and
	// each day's evening peak.
	netRTT := make([][]float64, len(c.Probes))
	names := make([][]string, len(c.Probes))
	evening := make([][]float64, len(c.Probes))
	for i := range c.Probes {
		g := &c.Probes[i]
		for _, asn := range g.Networks {
			netRTT[i] = append(netRTT[i], 1+0.1*(2*rng.Float64()-1))
			for k := range g.Measurements {
				names[i] = append(names[i], fmt.Sprintf("%s-as%d-%d", strings.ToLower(g.Country), asn, k))
			}
		}
		for range days {
			evening[i] = append(evening[i], max(0, 1+g.DayToDay*rng.NormFloat64()))
		}
	}
	// Which destinations each episode affects: a seeded choice per
	// (episode, transit), the same at every site.
	affected := map[[2]int]map[int]bool{}
	var paths []pathProbe
	for ti := range c.Transits {
		tr := &c.Transits[ti]
		for ei := range c.Episodes {
			e := &c.Episodes[ei]
			perm := rng.Perm(tr.Destinations)
			n := int(math.Ceil(e.Destinations * float64(tr.Destinations)))
			set := map[int]bool{}
			for _, d := range perm[:n] {
				set[d] = true
			}
			affected[[2]int{ei, ti}] = set
		}
		for _, site := range tr.Sites {
			for d := 0; d < tr.Destinations; d++ {
				paths = append(paths, pathProbe{tr: tr, site: site, dst: destAddr(d), idx: d,
					offset: time.Duration(rng.Float64() * float64(interval)),
					ents:   []string{obs.Transit(tr.ASN, site), obs.Transit(tr.ASN, "")}})
			}
		}
	}
	tIndex := make(map[*TransitPaths]int, len(c.Transits))
	for i := range c.Transits {
		tIndex[&c.Transits[i]] = i
	}
	var batch []pending
	var buf []byte
	for t := c.Start.Truncate(interval); t.Before(c.End); t = t.Add(interval) {
		if t.Before(c.Start) {
			continue
		}
		batch = batch[:0]
		day := int(t.Sub(c.Start) / (24 * time.Hour))
		for gi := range c.Probes {
			g := &c.Probes[gi]
			for ni, asn := range g.Networks {
				ents := []string{obs.Country(g.Country), obs.ASN(asn)}
				for k := 0; k < g.Measurements; k++ {
					at := t.Add(time.Duration((float64(k) + 0.5 + 0.8*(rng.Float64()-0.5)) / float64(g.Measurements) * float64(interval)))
					peak := bump(at, *g.UTCOffset) * evening[gi][min(day, days-1)]
					rttF, bwF, loss := 1+g.Evening.RTT*peak, 1-g.Evening.Bandwidth*peak, g.Loss+g.Evening.Loss*peak
					for ei := range c.Episodes {
						e := &c.Episodes[ei]
						if !e.matches(ents) {
							continue
						}
						p := e.progress(at)
						if e.RTTFactor > 0 {
							rttF *= 1 + (e.RTTFactor-1)*p
						}
						if e.BandwidthFactor > 0 {
							bwF *= 1 + (e.BandwidthFactor-1)*p
						}
						loss += e.Loss * p
					}
					m := quality.Measurement{Time: at.UnixNano(), Probe: names[gi][ni*g.Measurements+k],
						SrcASN: asn, Country: g.Country, Sent: uint32(g.Pings)}
					base := g.RTTms * netRTT[gi][ni] * rttF
					for range g.Pings {
						if rng.Float64() < loss {
							continue
						}
						m.RTTms = append(m.RTTms, math.Round((base+g.JitterMs*math.Abs(rng.NormFloat64()))*1000)/1000)
					}
					m.Rcvd = uint32(len(m.RTTms))
					if g.BandwidthMbps > 0 {
						m.BandwidthMbps = math.Round(g.BandwidthMbps*bwF*max(0.05, 1+0.1*rng.NormFloat64())*100) / 100
						m.HasBandwidth = true
					}
					batch = append(batch, pending{m.Time, m})
				}
			}
		}
		for pi := range paths {
			p := &paths[pi]
			at := t.Add(p.offset)
			tr := p.tr
			loss := tr.Loss + tr.EveningLoss*bump(at, tr.UTCOffset)
			for ei := range c.Episodes {
				e := &c.Episodes[ei]
				if e.Loss == 0 || !e.matches(p.ents) || !affected[[2]int{ei, tIndex[tr]}][p.idx] {
					continue
				}
				loss = max(loss, e.Loss*e.progress(at))
			}
			var lost uint32
			for range tr.Sent {
				if rng.Float64() < loss {
					lost++
				}
			}
			batch = append(batch, pending{at.UnixNano(), quality.Measurement{Time: at.UnixNano(),
				Probe: p.site + "-paths", Site: p.site, TransitASN: tr.ASN, Dst: p.dst, Sent: tr.Sent, Rcvd: tr.Sent - lost}})
		}
		slices.SortStableFunc(batch, func(a, b pending) int { return cmp.Compare(a.t, b.t) })
		for i := range batch {
			m := &batch[i].m
			if m.Time >= c.End.UnixNano() {
				continue
			}
			if err := m.Validate(); err != nil {
				return fmt.Errorf("render quality measurement: %w", err)
			}
			buf = quality.AppendJSON(buf[:0], m)
			emit(&ingest.Record{Stream: quality.Stream, Format: quality.FormatJSON, Time: m.Time, Value: append([]byte(nil), buf...)})
		}
	}
	return nil
}
