package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/osrg/gobgp/v3/pkg/packet/mrt"
	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/ingest"
	bgpin "github.com/outagewatch/outagewatch/ingest/bgp"
	"github.com/outagewatch/outagewatch/obs"
)

// BGPConfig is the `bgp:` section of a fixture: what the route collectors
// see of the fixture's networks. Every collector has Peers full-feed peers,
// each carrying every network's prefixes; the networks announce everything
// at Start, and from then on the stream carries background churn (each peer
// re-announces one prefix over another path every bucket, so it is never
// silent, and now and then a network withdraws one prefix for a few
// minutes), the withdrawals and re-announcements of the episodes below, and
// of the fixture's events whose streams name "bgp" (their factor is the
// share of each target's prefixes still announced).
//
// Events that name no stream leave routing alone: a holiday or a blackout
// changes traffic, and whether it also withdraws prefixes is something the
// fixture says here.
//
// Each network gets its own /24 and its regions' /24s (the prefixes
// Spec.Map gives it, so flows, DNS and BGP agree on who owns an address),
// plus Prefixes IPv4 prefixes carved from a /18 of its own under
// 10.64.0.0/10 and PrefixesV6 IPv6 /36s under fd00::/16. Record counts stay
// small (one UPDATE per peer and change), so fixtures replay in seconds.
type BGPConfig struct {
	// Format is rislive (default) or mrt (BGP4MP MESSAGE_AS4 and
	// STATE_CHANGE_AS4 records, whole seconds, no collector name).
	Format string    `yaml:"format"`
	Start  time.Time `yaml:"start"`
	End    time.Time `yaml:"end"`
	// Collectors names the collectors (default rrc00, rrc01, rrc03) and
	// Peers is how many full-feed peers each has (default 3).
	Collectors []string `yaml:"collectors"`
	Peers      int      `yaml:"peers"`
	// Prefixes and PrefixesV6 are each network's prefixes besides its /24s
	// (defaults 8 and 4); Networks overrides them per network.
	Prefixes   int          `yaml:"prefixes"`
	PrefixesV6 int          `yaml:"prefixes_v6"`
	Networks   []BGPNetwork `yaml:"networks"`
	// Churn is the chance per network and bucket that it withdraws one
	// prefix for two to four minutes (default 0.02; negative for none).
	Churn    float64      `yaml:"churn"`
	Episodes []BGPEpisode `yaml:"episodes"`
}

// BGPNetwork overrides the prefix counts of one of the fixture's networks.
type BGPNetwork struct {
	ASN        uint32 `yaml:"asn"`
	Prefixes   int    `yaml:"prefixes"`
	PrefixesV6 int    `yaml:"prefixes_v6"`
}

// BGP episode kinds.
const (
	// EpisodeWithdraw withdraws Share of each target's prefixes (of each
	// family) over RampDown after Start, and re-announces them over RampUp
	// after End.
	EpisodeWithdraw = "withdraw"
	// EpisodeFlap withdraws Share of each target's prefixes for the first
	// half of every Period between Start and End and re-announces them for
	// the second: bursts of withdrawals and announcements.
	EpisodeFlap = "flap"
	// EpisodePeerReset takes peer Peer of Collector down at Start (a state
	// message, its routes gone) and back up at End, when it sends its whole
	// table again.
	EpisodePeerReset = "peer_reset"
	// EpisodeCollectorSilent makes Collector send nothing between Start and
	// End; its peers then catch up with what changed meanwhile.
	EpisodeCollectorSilent = "collector_silent"
)

// BGPEpisode is something that happens to routing.
type BGPEpisode struct {
	Name string `yaml:"name"`
	Kind string `yaml:"kind"` // default withdraw
	// Targets are entity patterns of networks: "asn:5089", "country:UG".
	Targets  []string           `yaml:"targets"`
	Start    time.Time          `yaml:"start"`
	End      time.Time          `yaml:"end"`
	Share    float64            `yaml:"share"`
	RampDown detectors.Duration `yaml:"ramp_down"`
	RampUp   detectors.Duration `yaml:"ramp_up"`
	// Period is a flap's cycle (default 10m).
	Period    detectors.Duration `yaml:"period"`
	Collector string             `yaml:"collector"`
	Peer      int                `yaml:"peer"`
}

func init() {
	RegisterSection("bgp", func(s *Spec, node *yaml.Node) (Renderer, error) {
		raw, err := yaml.Marshal(node)
		if err != nil {
			return nil, err
		}
		var c BGPConfig
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			return nil, err
		}
		return newBGPRenderer(s, &c)
	})
}

// Peer ASes of the rendered collectors (large transits and IXP members, as
// the full-feed peers of real collectors are) and the upstreams in the
// rendered paths.
var (
	bgpPeerASes  = []uint32{1299, 3356, 6939, 174, 2914, 3257, 6762, 6453, 9002, 1273, 3491, 6830}
	bgpTransitAS = []uint32{3356, 1299, 174, 6762}
)

type bgpNet struct {
	asn          uint32
	ents         []string
	v4, v6       []int // prefix indices
	perm4, perm6 []int // withdrawal order
	churn        int   // prefix withdrawn by churn, -1 none
	churnUntil   time.Time
}

type bgpPeer struct {
	coll   int
	addr   netip.Addr
	as     uint32
	offset time.Duration
	up     bool
	view   []bool // prefixes this peer announces
}

type bgpRenderer struct {
	c        BGPConfig
	prefixes []netip.Prefix
	owner    []int // network index of each prefix
	nets     []bgpNet
	peers    []bgpPeer
	events   []Event // the fixture's events that name bgp
}

func newBGPRenderer(s *Spec, c *BGPConfig) (*bgpRenderer, error) {
	switch c.Format {
	case "":
		c.Format = bgpin.FormatRISLive
	case bgpin.FormatRISLive, bgpin.FormatMRT:
	default:
		return nil, fmt.Errorf("format: %q, want %s or %s", c.Format, bgpin.FormatRISLive, bgpin.FormatMRT)
	}
	if c.Start.IsZero() {
		c.Start = s.Start
	}
	if c.End.IsZero() {
		c.End = s.End
	}
	if !c.End.After(c.Start) {
		return nil, fmt.Errorf("start and end: want end after start")
	}
	if len(c.Collectors) == 0 {
		c.Collectors = []string{"rrc00", "rrc01", "rrc03"}
	}
	if c.Peers == 0 {
		c.Peers = 3
	}
	if c.Peers < 1 || len(c.Collectors)*c.Peers > 60 {
		return nil, fmt.Errorf("peers: want at least 1 per collector and at most 60 in all")
	}
	if c.Prefixes == 0 {
		c.Prefixes = 8
	}
	if c.PrefixesV6 == 0 {
		c.PrefixesV6 = 4
	}
	if c.Churn == 0 {
		c.Churn = 0.02
	}
	if len(s.Networks) == 0 || len(s.Networks) > 250 {
		return nil, fmt.Errorf("networks: the fixture needs between 1 and 250 networks")
	}
	counts := map[uint32][2]int{}
	for i, n := range c.Networks {
		if !slices.ContainsFunc(s.Networks, func(x Network) bool { return x.ASN == n.ASN }) {
			return nil, fmt.Errorf("networks[%d]: AS%d is not under the fixture's networks", i, n.ASN)
		}
		counts[n.ASN] = [2]int{n.Prefixes, n.PrefixesV6}
	}
	r := &bgpRenderer{c: *c}
	for i := range s.Networks {
		nw := &s.Networks[i]
		n4, n6 := c.Prefixes, c.PrefixesV6
		if o, ok := counts[nw.ASN]; ok {
			n4, n6 = cmpOr(o[0], n4), cmpOr(o[1], n6)
		}
		if n4 < 0 || n4 > 64 || n6 < 0 || n6 > 16 {
			return nil, fmt.Errorf("AS%d: prefixes must be in [0, 64] and prefixes_v6 in [0, 16]", nw.ASN)
		}
		bn := bgpNet{asn: nw.ASN, ents: []string{obs.ASN(nw.ASN), obs.Country(nw.Country)}, churn: -1}
		add4 := func(p netip.Prefix) {
			bn.v4 = append(bn.v4, len(r.prefixes))
			r.prefixes = append(r.prefixes, p)
			r.owner = append(r.owner, i)
		}
		add4(networkPrefix(i))
		for j := range nw.Regions {
			add4(regionPrefix(i, j))
		}
		for k := 0; k < n4; k++ {
			add4(blockPrefix(i, k, n4))
		}
		for k := 0; k < n6; k++ {
			bn.v6 = append(bn.v6, len(r.prefixes))
			r.prefixes = append(r.prefixes, v6Prefix(i, k))
			r.owner = append(r.owner, i)
		}
		r.nets = append(r.nets, bn)
	}
	for ci := range c.Collectors {
		for p := 0; p < c.Peers; p++ {
			k := ci*c.Peers + p
			r.peers = append(r.peers, bgpPeer{
				coll: ci, addr: netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + k)}),
				as:     bgpPeerASes[k%len(bgpPeerASes)],
				offset: time.Duration(k) * 1700 * time.Millisecond, view: make([]bool, len(r.prefixes)),
			})
		}
	}
	for i := range c.Episodes {
		e := &r.c.Episodes[i]
		if e.Kind == "" {
			e.Kind = EpisodeWithdraw
		}
		if !e.End.After(e.Start) {
			return nil, fmt.Errorf("episodes[%d] %q: want end after start", i, e.Name)
		}
		switch e.Kind {
		case EpisodeWithdraw, EpisodeFlap:
			if e.Share <= 0 || e.Share > 1 || len(e.Targets) == 0 {
				return nil, fmt.Errorf("episodes[%d] %q: want targets and a share in (0, 1]", i, e.Name)
			}
			if e.Period == 0 {
				e.Period = detectors.Duration(10 * time.Minute)
			}
			if e.Period < detectors.Duration(2*time.Minute) {
				return nil, fmt.Errorf("episodes[%d] %q: period must be at least 2m", i, e.Name)
			}
		case EpisodePeerReset, EpisodeCollectorSilent:
			if !slices.Contains(c.Collectors, e.Collector) {
				return nil, fmt.Errorf("episodes[%d] %q: collector %q is not one of %v", i, e.Name, e.Collector, c.Collectors)
			}
			if e.Peer < 0 || e.Peer >= c.Peers {
				return nil, fmt.Errorf("episodes[%d] %q: peer must be in [0, %d)", i, e.Name, c.Peers)
			}
		default:
			return nil, fmt.Errorf("episodes[%d] %q: kind %q, want withdraw, flap, peer_reset or collector_silent", i, e.Name, e.Kind)
		}
	}
	for _, e := range s.Events {
		if slices.Contains(e.Streams, bgpin.Stream) {
			r.events = append(r.events, e)
		}
	}
	return r, nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// blockPrefix is the k-th of n equal prefixes of network i's /18 under
// 10.64.0.0/10.
func blockPrefix(i, k, n int) netip.Prefix {
	b := 18 + bits.Len(uint(n-1))
	base := uint32(10)<<24 | uint32(64)<<16 + uint32(i)<<14 + uint32(k)<<(32-b)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(base >> 24), byte(base >> 16), byte(base >> 8), byte(base)}), b)
}

// v6Prefix is the k-th /36 of network i under fd00::/16.
func v6Prefix(i, k int) netip.Prefix {
	var a [16]byte
	a[0], a[2], a[3], a[4] = 0xfd, byte(i>>8), byte(i), byte(k<<4)
	return netip.PrefixFrom(netip.AddrFrom16(a), 36)
}

// BGPPrefixes returns the prefixes the bgp section gives each network, by
// AS number, in announcement order: tests and the map file use them.
func (s *Spec) BGPPrefixes() (map[uint32][]netip.Prefix, error) {
	node, ok := s.Sections["bgp"]
	if !ok {
		node = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	rr, err := sections["bgp"](s, &node)
	if err != nil {
		return nil, err
	}
	r := rr.(*bgpRenderer)
	out := map[uint32][]netip.Prefix{}
	for i, p := range r.prefixes {
		asn := r.nets[r.owner[i]].asn
		out[asn] = append(out[asn], p)
	}
	return out, nil
}

func (r *bgpRenderer) Stream() string { return bgpin.Stream }

// visible is the share of a network's prefixes that its episodes and
// events leave announced at t.
func (r *bgpRenderer) visible(n *bgpNet, t time.Time) float64 {
	v := 1.0
	for i := range r.c.Episodes {
		e := &r.c.Episodes[i]
		ev := Event{Targets: e.Targets}
		if (e.Kind != EpisodeWithdraw && e.Kind != EpisodeFlap) || !ev.matches(n.ents) {
			continue
		}
		switch e.Kind {
		case EpisodeWithdraw:
			ev = Event{Start: e.Start, End: e.End, RampDown: e.RampDown, RampUp: e.RampUp, Factor: 1 - e.Share}
			v *= ev.factorAt(t)
		case EpisodeFlap:
			if !t.Before(e.Start) && t.Before(e.End) && t.Sub(e.Start)%time.Duration(e.Period) < time.Duration(e.Period)/2 {
				v *= 1 - e.Share
			}
		}
	}
	for i := range r.events {
		if r.events[i].matches(n.ents) {
			v *= r.events[i].factorAt(t)
		}
	}
	return v
}

// peerState says whether peer p is down (reset) or silent at t.
func (r *bgpRenderer) peerState(p int, t time.Time) (down, silent bool) {
	pr := &r.peers[p]
	for i := range r.c.Episodes {
		e := &r.c.Episodes[i]
		if t.Before(e.Start) || !t.Before(e.End) || e.Collector != r.c.Collectors[pr.coll] {
			continue
		}
		switch e.Kind {
		case EpisodePeerReset:
			down = down || p-pr.coll*r.c.Peers == e.Peer
		case EpisodeCollectorSilent:
			silent = true
		}
	}
	return down, silent
}

// Render simulates the collectors minute by minute: the announced set each
// network wants, each live peer's view of it, and the messages that bring
// the views in line.
func (r *bgpRenderer) Render(s *Spec, emit func(*ingest.Record)) error {
	rng := rand.New(rand.NewPCG(s.Seed, 0x626770))
	for i := range r.nets {
		n := &r.nets[i]
		n.perm4 = shuffled(rng, n.v4)
		n.perm6 = shuffled(rng, n.v6)
	}
	want := make([]bool, len(r.prefixes))
	const tick = time.Minute
	start := r.c.Start.Truncate(tick)
	for t := start; t.Before(r.c.End); t = t.Add(tick) {
		bucketStart := t.Sub(start)%Bucket == 0
		for i := range r.nets {
			n := &r.nets[i]
			if n.churn >= 0 && !t.Before(n.churnUntil) {
				n.churn = -1
			}
			v := r.visible(n, t)
			for _, p := range n.v4 {
				want[p] = true
			}
			for _, p := range n.v6 {
				want[p] = true
			}
			for _, x := range [2][]int{n.perm4, n.perm6} {
				k := int(math.Round(float64(len(x)) * (1 - v)))
				for _, p := range x[:k] {
					want[p] = false
				}
			}
			if bucketStart && n.churn < 0 && r.c.Churn > 0 && rng.Float64() < r.c.Churn {
				all := append(slices.Clone(n.v4), n.v6...)
				if p := all[rng.IntN(len(all))]; want[p] {
					n.churn, n.churnUntil = p, t.Add(time.Duration(2+rng.IntN(3))*tick)
				}
			}
			if n.churn >= 0 {
				want[n.churn] = false
			}
		}
		bucketIdx := int(t.Sub(start) / Bucket)
		for pi := range r.peers {
			pr := &r.peers[pi]
			at := t.Add(pr.offset)
			down, silent := r.peerState(pi, t)
			if silent {
				continue
			}
			if pr.up && down {
				if err := r.emitState(emit, pr, at, false); err != nil {
					return err
				}
				pr.up = false
				clear(pr.view)
				continue
			}
			if down {
				continue
			}
			if !pr.up {
				if t != start {
					if err := r.emitState(emit, pr, at, true); err != nil {
						return err
					}
				}
				pr.up = true
			}
			if err := r.sync(emit, pr, want, at, bucketIdx); err != nil {
				return err
			}
			// Once a bucket, mid-way, the peer moves one of its routes to
			// another upstream: background announcements, and proof of life.
			if t.Sub(start)%Bucket == 2*tick {
				if err := r.keepalive(emit, pr, pi, bucketIdx, at); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func shuffled(rng *rand.Rand, xs []int) []int {
	out := slices.Clone(xs)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// path is the AS path a peer has for a network; alt picks the other
// upstream.
func (r *bgpRenderer) path(pr *bgpPeer, net int, alt bool) []uint32 {
	k := net
	if alt {
		k++
	}
	tr := bgpTransitAS[k%len(bgpTransitAS)]
	if tr == pr.as {
		tr = bgpTransitAS[(k+1)%len(bgpTransitAS)]
	}
	return []uint32{pr.as, tr, r.nets[net].asn}
}

// maxPerUpdate keeps every rendered UPDATE well under 4,096 bytes.
const maxPerUpdate = 150

// sync sends the withdrawals and announcements that bring pr's view to want.
func (r *bgpRenderer) sync(emit func(*ingest.Record), pr *bgpPeer, want []bool, at time.Time, bucketIdx int) error {
	var wd []netip.Prefix
	ann := map[int][]netip.Prefix{}
	for p, w := range want {
		switch {
		case pr.view[p] && !w:
			wd = append(wd, r.prefixes[p])
		case !pr.view[p] && w:
			ann[r.owner[p]] = append(ann[r.owner[p]], r.prefixes[p])
		}
		pr.view[p] = w
	}
	for len(wd) > 0 {
		k := min(len(wd), maxPerUpdate)
		if err := r.emitUpdate(emit, pr, at, nil, nil, wd[:k]); err != nil {
			return err
		}
		wd = wd[k:]
	}
	for net := range r.nets {
		ps := ann[net]
		for len(ps) > 0 {
			k := min(len(ps), maxPerUpdate)
			if err := r.emitUpdate(emit, pr, at, r.path(pr, net, bucketIdx%2 == 1), ps[:k], nil); err != nil {
				return err
			}
			ps = ps[k:]
		}
	}
	return nil
}

// keepalive re-announces one route the peer carries over the other
// upstream.
func (r *bgpRenderer) keepalive(emit func(*ingest.Record), pr *bgpPeer, pi, bucketIdx int, at time.Time) error {
	n := len(r.prefixes)
	for k := 0; k < n; k++ {
		p := (bucketIdx*7 + pi + k) % n
		if pr.view[p] {
			return r.emitUpdate(emit, pr, at.Add(time.Second), r.path(pr, r.owner[p], bucketIdx%2 == 0), []netip.Prefix{r.prefixes[p]}, nil)
		}
	}
	return nil
}

func (r *bgpRenderer) emitUpdate(emit func(*ingest.Record), pr *bgpPeer, at time.Time, path []uint32, ann, wd []netip.Prefix) error {
	spec := &bgpin.UpdateSpec{Time: at.UnixNano(), Collector: r.c.Collectors[pr.coll], Peer: pr.addr, PeerAS: pr.as,
		Path: path, Announced: ann, Withdrawn: wd}
	var b []byte
	var err error
	rec := &ingest.Record{Stream: bgpin.Stream, Format: r.c.Format}
	if r.c.Format == bgpin.FormatMRT {
		spec.Time = at.Truncate(time.Second).UnixNano()
		b, err = bgpin.EncodeMRTUpdate(spec)
	} else {
		spec.Time = at.Truncate(10 * time.Millisecond).UnixNano()
		b, err = bgpin.EncodeRISLive(spec)
	}
	if err != nil {
		return fmt.Errorf("render BGP update: %w", err)
	}
	rec.Time, rec.Value = spec.Time, b
	emit(rec)
	return nil
}

// risPeerState is a RIS Live RIS_PEER_STATE message.
type risPeerState struct {
	Type string `json:"type"`
	Data struct {
		Timestamp json.Number `json:"timestamp"`
		Peer      string      `json:"peer"`
		PeerASN   string      `json:"peer_asn"`
		ID        string      `json:"id"`
		Host      string      `json:"host"`
		Type      string      `json:"type"`
		State     string      `json:"state"`
	} `json:"data"`
}

// emitState sends a session going down or coming back: RIS Live's
// RIS_PEER_STATE, or an MRT BGP4MP state change (Established → Idle, or
// OpenConfirm → Established).
func (r *bgpRenderer) emitState(emit func(*ingest.Record), pr *bgpPeer, at time.Time, up bool) error {
	rec := &ingest.Record{Stream: bgpin.Stream, Format: r.c.Format}
	if r.c.Format == bgpin.FormatMRT {
		at = at.Truncate(time.Second)
		from, to := mrt.ESTABLISHED, mrt.IDLE
		if up {
			from, to = mrt.OPENCONFIRM, mrt.ESTABLISHED
		}
		body := mrt.NewBGP4MPStateChange(pr.as, 12654, 0, pr.addr.String(), "0.0.0.0", true, from, to)
		m, err := mrt.NewMRTMessage(uint32(at.Unix()), mrt.BGP4MP, mrt.STATE_CHANGE_AS4, body)
		if err != nil {
			return fmt.Errorf("render BGP state change: %w", err)
		}
		if rec.Value, err = m.Serialize(); err != nil {
			return fmt.Errorf("render BGP state change: %w", err)
		}
		rec.Time = at.UnixNano()
		emit(rec)
		return nil
	}
	at = at.Truncate(10 * time.Millisecond)
	cs := at.UnixNano() / 1e7
	ts := fmt.Sprintf("%d.%02d", cs/100, cs%100)
	var m risPeerState
	m.Type = "ris_message"
	m.Data.Timestamp = json.Number(ts)
	m.Data.Peer, m.Data.PeerASN = pr.addr.String(), strconv.FormatUint(uint64(pr.as), 10)
	m.Data.ID, m.Data.Host, m.Data.Type = pr.addr.String()+"-"+ts, r.c.Collectors[pr.coll], "RIS_PEER_STATE"
	m.Data.State = "down"
	if up {
		m.Data.State = "connected"
	}
	b, err := json.Marshal(&m)
	if err != nil {
		return err
	}
	rec.Time, rec.Value = at.UnixNano(), b
	emit(rec)
	return nil
}
