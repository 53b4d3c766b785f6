// Package rib is the BGP routing table of outagewatch (it lives in directory
// bgp; import it as rib). Decoders of RIS Live, MRT and BMP apply updates to
// it; it keeps, per peer (collector, peer address, peer AS), each prefix's AS
// path, and from the full-feed peers derives which prefixes are visible for
// which origin AS. That visibility drives three things: the announced-space
// gauges per origin AS and country that the prefix-withdrawal detector
// watches, the longest-prefix match that attributes client addresses to
// their AS (Table satisfies netmap.Map.Live), and per-peer health that lets a
// feed check tell a silent or reset collector peer from a real withdrawal.
//
// Memory is the constraint: a collector with 20 full-feed peers carries 20M
// routes. A route is one entry of a per-peer map from an interned prefix ID
// to an interned path ID (8 bytes of payload); prefixes and AS paths are
// stored once however many peers carry them.
package rib

import (
	"cmp"
	"encoding/binary"
	"math"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// Visibility is judged against thresholds of 1 % (IODA warns below 99 %
// of the moving median), so its history keeps ±0.1 %, twelve bits a
// bucket; the routing detectors look back hours (six-hour medians, a day
// of withdrawal counts), so a week of it is kept: 3 KB a series, less
// than the two weeks of seven-bit traffic history.
const (
	visibilityPrecision = 0.001
	visibilityHistory   = 7 * 24 * time.Hour
)

// Signals of the BGP feed.
var (
	// AnnouncedV4 is the IPv4 space visible for an origin AS or country, in
	// /24 equivalents.
	AnnouncedV4 = obs.Register(obs.SignalDef{Name: "bgp_announced_v4", Unit: "slash24", Feed: obs.FeedBGP, Agg: obs.Last,
		Precision: visibilityPrecision, History: visibilityHistory})
	// AnnouncedV6 is the IPv6 space visible for an origin AS or country, in
	// /48 equivalents.
	AnnouncedV6 = obs.Register(obs.SignalDef{Name: "bgp_announced_v6", Unit: "slash48", Feed: obs.FeedBGP, Agg: obs.Last,
		Precision: visibilityPrecision, History: visibilityHistory})
	// Withdrawals counts withdrawn prefixes by the origin they had.
	Withdrawals = obs.Register(obs.SignalDef{Name: "bgp_withdrawals", Unit: "prefixes", Feed: obs.FeedBGP, Agg: obs.Sum, ZeroWhenAbsent: true})
	// Announcements counts announced prefixes by origin.
	Announcements = obs.Register(obs.SignalDef{Name: "bgp_announcements", Unit: "prefixes", Feed: obs.FeedBGP, Agg: obs.Sum})
)

// Config tunes visibility. The zero value gives the defaults.
type Config struct {
	// Map gives the country of an origin AS for the per-country gauges.
	Map *netmap.Map
	// VisibleShare is the share of up full-feed peers that must carry a
	// prefix for it to count as visible for its origin (default 0.5).
	VisibleShare float64
	// FullFeedShare: a peer carrying at least this share of the largest up
	// peer's prefix count is a full-feed peer (default 0.5).
	FullFeedShare float64
	// FullFeedPrefixes, when positive, replaces FullFeedShare by an absolute
	// prefix count.
	FullFeedPrefixes int
}

// PeerKey names a BGP session as seen by a collector.
type PeerKey struct {
	Collector string
	Addr      netip.Addr
	AS        uint32
}

// PeerID is a small handle for a peer, valid for the table that issued it.
type PeerID uint32

// PeerHealth describes one peer for the feed-health check.
type PeerHealth struct {
	Peer PeerKey
	Up   bool
	// LastMessage is the event time (Unix ns) of the last record from it.
	LastMessage int64
	Prefixes    int
	FullFeed    bool
	// Resets counts the times its session went down.
	Resets int
}

// Update is one BGP UPDATE as the decoders hand it over.
type Update struct {
	Peer PeerID
	Time int64 // event time, Unix ns
	// Path is the AS path, neighbour first, AS_SETs flattened in place.
	Path []uint32
	// Origin is the origin AS, 0 when unknown (a path ending in an AS_SET
	// of several ASes, or an empty path).
	Origin    uint32
	Announced []netip.Prefix
	Withdrawn []netip.Prefix
}

type peer struct {
	key    PeerKey
	up     bool
	full   bool
	last   int64
	resets int
	routes map[uint32]uint32 // prefix ID → path ID
}

// pfxKey is a prefix as two address words, IPv4 in the top of hi.
type pfxKey struct {
	hi, lo uint64
	bits   uint8
	v6     bool
}

func keyOf(p netip.Prefix) pfxKey {
	p = p.Masked()
	a := p.Addr()
	if a.Is4() {
		b := a.As4()
		return pfxKey{hi: uint64(binary.BigEndian.Uint32(b[:])) << 32, bits: uint8(p.Bits())}
	}
	b := a.As16()
	return pfxKey{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:]), bits: uint8(p.Bits()), v6: true}
}

func (k pfxKey) prefix() netip.Prefix {
	if !k.v6 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(k.hi>>32))
		return netip.PrefixFrom(netip.AddrFrom4(b), int(k.bits))
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], k.hi)
	binary.BigEndian.PutUint64(b[8:], k.lo)
	return netip.PrefixFrom(netip.AddrFrom16(b), int(k.bits))
}

// size is the prefix's address space in the unit its family is counted in:
// IPv4 addresses, IPv6 /64s. Prefixes shorter than /8 (IPv4) or /16 (IPv6),
// and IPv6 longer than /64, count as nothing: they are default routes, leaks
// or host routes, never an origin's real space.
func (k pfxKey) size() uint64 {
	if !k.v6 {
		if k.bits < 8 || k.bits > 32 {
			return 0
		}
		return 1 << (32 - k.bits)
	}
	if k.bits < 16 || k.bits > 64 {
		return 0
	}
	return 1 << (64 - k.bits)
}

// originCount is how many up full-feed peers carry a prefix with one origin.
type originCount struct {
	origin  uint32
	count   uint32
	vis     bool
	counted bool // vis, and no visible prefix of the origin covers it
}

type prefixState struct {
	key  pfxKey
	refs uint32 // peers carrying the prefix, full-feed or not
	// first is the common case of one origin; further origins (MOAS) go
	// to Table.moas.
	first originCount
	// lpm is the origin stored for the prefix in the visible LPM, 0 none.
	lpm uint32
}

type pathEntry struct {
	key    string // the path as 4-byte big-endian ASNs, then the origin
	origin uint32
	refs   uint32
}

type space struct {
	v4, v6 uint64 // IPv4 addresses, IPv6 /64s
	// emitted4 and emitted6 say the family had space and is reported,
	// zero or not, until the entity has had none at all since zeroSince
	// for zeroRetention.
	emitted4, emitted6 bool
	zeroSince          int64
}

// zeroRetention is how long a network (or country) that withdrew all its
// routes keeps reporting a space of 0 while the collectors are healthy:
// as long as the visibility history, so a detector sees the zeros, not
// missing buckets it would skip, for as long as it remembers the space
// before. A network gone longer is forgotten.
const zeroRetention = int64(visibilityHistory)

// Table is the routing table. It is safe for concurrent use: decoders of
// other streams resolve origins (OriginAS) while the BGP decoders apply
// updates, so reads share a lock that updates take exclusively.
type Table struct {
	mu sync.RWMutex
	tableState
}

// tableState is everything a checkpoint restores, apart from the lock.
type tableState struct {
	cfg Config

	peers   []*peer
	peerIDs map[PeerKey]PeerID

	prefixes []prefixState
	pfxIDs   map[pfxKey]uint32
	freePfx  []uint32
	moas     map[uint32][]originCount

	paths     []pathEntry
	pathIDs   map[string]uint32
	freePaths []uint32
	scratch   []byte

	nFull    int  // up full-feed peers, as of the last refresh
	allDirty bool // visibility must be recomputed for every prefix

	origins   map[uint32]*space
	countries map[string]*space // emitted flags per country
	visible   netmap.Table[uint32]

	asn     obs.ASNCache
	country map[string]string
	o       obs.Observation
}

// New returns an empty table.
func New(cfg Config) *Table {
	if cfg.VisibleShare <= 0 {
		cfg.VisibleShare = 0.5
	}
	if cfg.FullFeedShare <= 0 {
		cfg.FullFeedShare = 0.5
	}
	return &Table{tableState: tableState{
		cfg:       cfg,
		peerIDs:   map[PeerKey]PeerID{},
		pfxIDs:    map[pfxKey]uint32{},
		moas:      map[uint32][]originCount{},
		pathIDs:   map[string]uint32{},
		origins:   map[uint32]*space{},
		countries: map[string]*space{},
		asn:       obs.ASNCache{},
		country:   map[string]string{},
	}}
}

// Peer returns the handle of a peer, adding it (down, no routes) if new.
func (t *Table) Peer(k PeerKey) PeerID {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.peerIDs[k]; ok {
		return id
	}
	id := PeerID(len(t.peers))
	t.peers = append(t.peers, &peer{key: k, routes: map[uint32]uint32{}})
	t.peerIDs[k] = id
	return id
}

func (t *Table) peer(id PeerID) *peer {
	if int(id) >= len(t.peers) {
		return nil
	}
	return t.peers[id]
}

// Touch records that a message (a keepalive, say) came from the peer.
func (t *Table) Touch(id PeerID, at int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.touch(id, at)
}

func (t *Table) touch(id PeerID, at int64) {
	if p := t.peer(id); p != nil && at > p.last {
		p.last = at
	}
}

// PeerUp marks the session established.
func (t *Table) PeerUp(id PeerID, at int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peer(id)
	if p == nil {
		return
	}
	t.touch(id, at)
	p.up = true
}

// PeerDown marks the session down and clears its routes, returning how many
// it had. The routes vanish without counting as withdrawals: a collector
// session reset says nothing about the origins.
func (t *Table) PeerDown(id PeerID, at int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peer(id)
	if p == nil {
		return 0
	}
	t.touch(id, at)
	if p.up {
		p.resets++
	}
	p.up = false
	wasFull := p.full
	if wasFull {
		p.full = false
		t.nFull--
		// The threshold moved for every prefix, not only this peer's.
		t.allDirty = true
	}
	n := len(p.routes)
	for pid, path := range p.routes {
		if wasFull {
			t.addCount(pid, t.paths[path].origin, -1)
			t.recompute(pid)
		}
		t.dropRef(pid, path)
	}
	clear(p.routes)
	return n
}

// internPath returns the ID of (path, origin), taking a reference.
func (t *Table) internPath(path []uint32, origin uint32) uint32 {
	b := t.scratch[:0]
	for _, a := range path {
		b = binary.BigEndian.AppendUint32(b, a)
	}
	b = binary.BigEndian.AppendUint32(b, origin)
	t.scratch = b
	if id, ok := t.pathIDs[string(b)]; ok {
		t.paths[id].refs++
		return id
	}
	return t.addPath(string(b), origin, 1)
}

func (t *Table) addPath(key string, origin, refs uint32) uint32 {
	var id uint32
	if n := len(t.freePaths); n > 0 {
		id = t.freePaths[n-1]
		t.freePaths = t.freePaths[:n-1]
	} else {
		id = uint32(len(t.paths))
		t.paths = append(t.paths, pathEntry{})
	}
	t.paths[id] = pathEntry{key: key, origin: origin, refs: refs}
	t.pathIDs[key] = id
	return id
}

func (t *Table) releasePath(id uint32) {
	pe := &t.paths[id]
	pe.refs--
	if pe.refs == 0 {
		delete(t.pathIDs, pe.key)
		*pe = pathEntry{}
		t.freePaths = append(t.freePaths, id)
	}
}

func (t *Table) internPrefix(k pfxKey) uint32 {
	if id, ok := t.pfxIDs[k]; ok {
		return id
	}
	var id uint32
	if n := len(t.freePfx); n > 0 {
		id = t.freePfx[n-1]
		t.freePfx = t.freePfx[:n-1]
	} else {
		id = uint32(len(t.prefixes))
		t.prefixes = append(t.prefixes, prefixState{})
	}
	t.prefixes[id] = prefixState{key: k}
	t.pfxIDs[k] = id
	return id
}

// setRoute makes pid carry path for peer p; the caller holds a reference
// to path, which the route takes over.
func (t *Table) setRoute(p *peer, pid, path uint32) {
	old, had := p.routes[pid]
	if had && old == path {
		t.releasePath(path) // the caller took a reference
		return
	}
	p.routes[pid] = path
	if !had {
		t.prefixes[pid].refs++
	}
	if p.full {
		if had {
			t.addCount(pid, t.paths[old].origin, -1)
		}
		t.addCount(pid, t.paths[path].origin, 1)
		t.recompute(pid)
	}
	if had {
		t.releasePath(old)
	}
}

// dropRef forgets that a peer carried pid with path; the caller removes the
// route from the peer's map.
func (t *Table) dropRef(pid, path uint32) {
	t.releasePath(path)
	st := &t.prefixes[pid]
	st.refs--
	if st.refs == 0 {
		t.freePrefix(pid)
	}
}

// removeRoute removes pid from p and returns the origin it had.
func (t *Table) removeRoute(p *peer, pid uint32) (uint32, bool) {
	path, ok := p.routes[pid]
	if !ok {
		return 0, false
	}
	origin := t.paths[path].origin
	delete(p.routes, pid)
	if p.full {
		t.addCount(pid, origin, -1)
		t.recompute(pid)
	}
	t.dropRef(pid, path)
	return origin, true
}

func (t *Table) freePrefix(pid uint32) {
	st := &t.prefixes[pid]
	// No peer carries it: clear whatever visibility is left (a peer-down
	// clears counts only at the next refresh).
	t.setVisible(pid, &st.first, false)
	for i := range t.moas[pid] {
		t.setVisible(pid, &t.moas[pid][i], false)
	}
	delete(t.moas, pid)
	if st.lpm != 0 {
		t.visible.Delete(st.key.prefix())
	}
	delete(t.pfxIDs, st.key)
	*st = prefixState{}
	t.freePfx = append(t.freePfx, pid)
}

// addCount adjusts the number of full-feed peers carrying pid with origin.
func (t *Table) addCount(pid, origin uint32, d int) {
	st := &t.prefixes[pid]
	if st.first.origin == origin || (st.first.count == 0 && !st.first.vis && d > 0 && len(t.moas[pid]) == 0) {
		st.first.origin = origin
		st.first.count = uint32(int(st.first.count) + d)
		return
	}
	m := t.moas[pid]
	for i := range m {
		if m[i].origin == origin {
			m[i].count = uint32(int(m[i].count) + d)
			return
		}
	}
	if d > 0 {
		t.moas[pid] = append(m, originCount{origin: origin, count: uint32(d)})
	}
}

func (t *Table) threshold() uint32 {
	th := math.Ceil(t.cfg.VisibleShare * float64(t.nFull))
	if th < 1 {
		th = 1
	}
	return uint32(th)
}

// recompute brings the visibility of pid in line with its counts.
func (t *Table) recompute(pid uint32) {
	st := &t.prefixes[pid]
	th := t.threshold()
	vis := func(c *originCount) bool { return t.nFull > 0 && c.origin != 0 && c.count >= th }
	t.setVisible(pid, &st.first, vis(&st.first))
	best := st.first
	if m, ok := t.moas[pid]; ok {
		out := m[:0]
		for i := range m {
			t.setVisible(pid, &m[i], vis(&m[i]))
			if m[i].count > 0 || m[i].vis {
				out = append(out, m[i])
			}
			if m[i].vis && (!best.vis || m[i].count > best.count || (m[i].count == best.count && m[i].origin < best.origin)) {
				best = m[i]
			}
		}
		// Keep the common single-origin case inline.
		if st.first.count == 0 && !st.first.vis && len(out) > 0 {
			st.first, out = out[0], out[1:]
		}
		if len(out) == 0 {
			delete(t.moas, pid)
		} else {
			t.moas[pid] = out
		}
	}
	want := uint32(0)
	if best.vis {
		want = best.origin
	}
	if want != st.lpm {
		if want == 0 {
			t.visible.Delete(st.key.prefix())
		} else {
			t.visible.Insert(st.key.prefix(), want)
		}
		st.lpm = want
	}
}

// setVisible records that pid is (or no longer is) visible for c.origin and
// keeps the origin's space a count of addresses, not of prefixes: a prefix
// is counted only while no visible prefix of the same origin covers it
// (c.counted), so a /24 announced inside its origin's /16 adds nothing, and
// withdrawing it takes nothing away.
func (t *Table) setVisible(pid uint32, c *originCount, v bool) {
	if c.vis == v {
		return
	}
	c.vis = v
	k := t.prefixes[pid].key
	origin := c.origin
	if k.size() == 0 || origin == 0 {
		return
	}
	p := k.prefix()
	if v {
		if t.coveredFor(p, origin) {
			return
		}
		c.counted = true
		t.addSpace(origin, k, true)
		t.visible.Subnets(p, func(q netip.Prefix, _ uint32) bool {
			if e := t.visibleEntry(q, origin); e != nil && e.counted {
				e.counted = false
				t.addSpace(origin, keyOf(q), false)
			}
			return true
		})
		return
	}
	if !c.counted {
		return
	}
	c.counted = false
	t.addSpace(origin, k, false)
	t.visible.Subnets(p, func(q netip.Prefix, _ uint32) bool {
		if e := t.visibleEntry(q, origin); e != nil && !e.counted && !t.coveredFor(q, origin) {
			e.counted = true
			t.addSpace(origin, keyOf(q), true)
		}
		return true
	})
}

// visibleEntry returns q's entry for origin if q is visible for it and
// has countable space.
func (t *Table) visibleEntry(q netip.Prefix, origin uint32) *originCount {
	k := keyOf(q)
	if k.size() == 0 {
		return nil
	}
	pid, ok := t.pfxIDs[k]
	if !ok {
		return nil
	}
	if st := &t.prefixes[pid]; st.first.origin == origin && st.first.vis {
		return &st.first
	}
	m := t.moas[pid]
	for i := range m {
		if m[i].origin == origin && m[i].vis {
			return &m[i]
		}
	}
	return nil
}

// coveredFor reports whether a shorter visible prefix of origin contains p.
func (t *Table) coveredFor(p netip.Prefix, origin uint32) bool {
	covered := false
	t.visible.Supernets(p, func(q netip.Prefix, _ uint32) bool {
		covered = t.visibleEntry(q, origin) != nil
		return !covered
	})
	return covered
}

func (t *Table) addSpace(origin uint32, k pfxKey, add bool) {
	s := t.origins[origin]
	if s == nil {
		s = &space{}
		t.origins[origin] = s
	}
	sz := k.size()
	switch {
	case !k.v6 && add:
		s.v4 += sz
	case !k.v6:
		s.v4 -= sz
	case add:
		s.v6 += sz
	default:
		s.v6 -= sz
	}
}

// Apply applies one update and emits bgp_withdrawals and bgp_announcements
// for the origins concerned.
func (t *Table) Apply(u *Update, sink obs.Sink) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peer(u.Peer)
	if p == nil {
		return
	}
	if u.Time > p.last {
		p.last = u.Time
	}
	// Only an established session sends updates.
	p.up = true
	var runOrigin uint32
	run := 0
	for _, w := range u.Withdrawn {
		if !w.IsValid() {
			continue
		}
		pid, ok := t.pfxIDs[keyOf(w)]
		if !ok {
			continue
		}
		origin, ok := t.removeRoute(p, pid)
		if !ok || origin == 0 {
			continue
		}
		if origin != runOrigin && run > 0 {
			t.emitCount(Withdrawals, u.Time, runOrigin, run, sink)
			run = 0
		}
		runOrigin = origin
		run++
	}
	if run > 0 {
		t.emitCount(Withdrawals, u.Time, runOrigin, run, sink)
	}
	n := 0
	for _, a := range u.Announced {
		if !a.IsValid() {
			continue
		}
		pid := t.internPrefix(keyOf(a))
		t.setRoute(p, pid, t.internPath(u.Path, u.Origin))
		n++
	}
	if n > 0 && u.Origin != 0 {
		t.emitCount(Announcements, u.Time, u.Origin, n, sink)
	}
}

func (t *Table) emitCount(sig obs.Signal, at int64, origin uint32, n int, sink obs.Sink) {
	if sink == nil {
		return
	}
	t.o = obs.Observation{Time: at, Signal: sig, Entity: t.asn.Entity(origin), Value: float64(n)}
	sink.Observe(&t.o)
	if cc := t.cfg.Map.Country(origin); cc != "" {
		t.o = obs.Observation{Time: at, Signal: sig, Entity: t.countryEntity(cc), Value: float64(n)}
		sink.Observe(&t.o)
	}
}

func (t *Table) countryEntity(cc string) string {
	if e, ok := t.country[cc]; ok {
		return e
	}
	e := obs.Country(cc)
	t.country[cc] = e
	return e
}

// Refresh re-evaluates which peers are full-feed and, if that changed the
// set, the visibility of every prefix. EmitSpace calls it; call it after
// loading a RIB dump to make OriginAS answer before the first bucket closes.
// Full-feed status is only re-evaluated here, once a bucket, so that a peer
// hovering at the threshold cannot make every update walk its table.
func (t *Table) Refresh() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refresh()
}

func (t *Table) refresh() {
	largest := 0
	for _, p := range t.peers {
		if p.up && len(p.routes) > largest {
			largest = len(p.routes)
		}
	}
	need := int(math.Ceil(t.cfg.FullFeedShare * float64(largest)))
	if t.cfg.FullFeedPrefixes > 0 {
		need = t.cfg.FullFeedPrefixes
	}
	if need < 1 {
		need = 1
	}
	for _, p := range t.peers {
		full := p.up && len(p.routes) >= need
		if full == p.full {
			continue
		}
		p.full = full
		d := -1
		if full {
			d = 1
		}
		t.nFull += d
		for pid, path := range p.routes {
			t.addCount(pid, t.paths[path].origin, d)
		}
		t.allDirty = true
	}
	if t.allDirty {
		t.allDirty = false
		for pid := range t.prefixes {
			if t.prefixes[pid].refs > 0 {
				t.recompute(uint32(pid))
			}
		}
	}
}

// EmitSpace emits, for event time at, the announced IPv4 and IPv6 space of
// every origin AS and country with visible space, and zeros for those
// that had space and lost it (for zeroRetention). With no full-feed peer up nothing is emitted: the feed
// is down, which is not the same as every origin withdrawing. The sink is
// called with the table locked: it must not call back into the table. The cost is
// one pass over the origins, not over the routes.
func (t *Table) EmitSpace(at int64, sink obs.Sink) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refresh()
	if t.nFull == 0 {
		return
	}
	asns := make([]uint32, 0, len(t.origins))
	for a := range t.origins {
		asns = append(asns, a)
	}
	slices.Sort(asns)
	byCountry := map[string]*space{}
	for _, a := range asns {
		s := t.origins[a]
		e := t.asn.Entity(a)
		t.emitSpace(at, e, s, sink)
		if cc := t.cfg.Map.Country(a); cc != "" {
			c := byCountry[cc]
			if c == nil {
				c = &space{}
				byCountry[cc] = c
			}
			c.v4 += s.v4
			c.v6 += s.v6
		}
		if s.v4 == 0 && s.v6 == 0 && !s.emitted4 && !s.emitted6 {
			delete(t.origins, a)
		}
	}
	for cc, c := range t.countries {
		if byCountry[cc] == nil {
			byCountry[cc] = &space{}
		}
		byCountry[cc].emitted4, byCountry[cc].emitted6, byCountry[cc].zeroSince = c.emitted4, c.emitted6, c.zeroSince
	}
	ccs := make([]string, 0, len(byCountry))
	for cc := range byCountry {
		ccs = append(ccs, cc)
	}
	slices.Sort(ccs)
	for _, cc := range ccs {
		c := byCountry[cc]
		t.emitSpace(at, t.countryEntity(cc), c, sink)
		if c.emitted4 || c.emitted6 {
			t.countries[cc] = &space{emitted4: c.emitted4, emitted6: c.emitted6, zeroSince: c.zeroSince}
		} else {
			delete(t.countries, cc)
		}
	}
}

func (t *Table) emitSpace(at int64, entity string, s *space, sink obs.Sink) {
	if s.v4 > 0 || s.emitted4 {
		t.o = obs.Observation{Time: at, Signal: AnnouncedV4, Entity: entity, Value: float64(s.v4) / 256}
		sink.Observe(&t.o)
		s.emitted4 = true
	}
	if s.v6 > 0 || s.emitted6 {
		t.o = obs.Observation{Time: at, Signal: AnnouncedV6, Entity: entity, Value: float64(s.v6) / 65536}
		sink.Observe(&t.o)
		s.emitted6 = true
	}
	if s.v4 > 0 || s.v6 > 0 {
		s.zeroSince = 0
		return
	}
	if s.zeroSince == 0 {
		s.zeroSince = at
	}
	if at-s.zeroSince >= zeroRetention {
		s.emitted4, s.emitted6 = false, false
	}
}

// OriginAS returns the origin AS of the longest visible prefix containing a.
func (t *Table) OriginAS(a netip.Addr) (uint32, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.visible.Lookup(a)
}

// Visible returns the number of prefixes visible for some origin.
func (t *Table) Visible() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.visible.Len()
}

// Route returns the AS path and origin a peer has for exactly prefix p.
func (t *Table) Route(id PeerID, pfx netip.Prefix) (path []uint32, origin uint32, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	p := t.peer(id)
	if p == nil || !pfx.IsValid() {
		return nil, 0, false
	}
	pid, ok := t.pfxIDs[keyOf(pfx)]
	if !ok {
		return nil, 0, false
	}
	pathID, ok := p.routes[pid]
	if !ok {
		return nil, 0, false
	}
	pe := &t.paths[pathID]
	k := pe.key[:len(pe.key)-4]
	path = make([]uint32, len(k)/4)
	for i := range path {
		path[i] = binary.BigEndian.Uint32([]byte(k[4*i : 4*i+4]))
	}
	return path, pe.origin, true
}

// Space returns the address space visible for an origin AS, overlapping
// prefixes counted once: IPv4 in /24s, IPv6 in /48s, as of the last
// refresh or update.
func (t *Table) Space(asn uint32) (v4, v6 float64) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if s := t.origins[asn]; s != nil {
		return float64(s.v4) / 256, float64(s.v6) / 65536
	}
	return 0, 0
}

// Health describes every peer, sorted by collector, address and AS.
func (t *Table) Health() []PeerHealth {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]PeerHealth, 0, len(t.peers))
	for _, p := range t.peers {
		out = append(out, PeerHealth{Peer: p.key, Up: p.up, LastMessage: p.last, Prefixes: len(p.routes), FullFeed: p.full, Resets: p.resets})
	}
	slices.SortFunc(out, func(a, b PeerHealth) int {
		return cmp.Or(cmp.Compare(a.Peer.Collector, b.Peer.Collector), a.Peer.Addr.Compare(b.Peer.Addr), cmp.Compare(a.Peer.AS, b.Peer.AS))
	})
	return out
}

// Stats are the table's sizes, for metrics and memory accounting.
type Stats struct {
	Peers, Routes, Prefixes, Paths, Visible int
}

// Stats returns the table's sizes.
func (t *Table) Stats() Stats {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := Stats{Peers: len(t.peers), Prefixes: len(t.pfxIDs), Paths: len(t.pathIDs), Visible: t.visible.Len()}
	for _, p := range t.peers {
		s.Routes += len(p.routes)
	}
	return s
}

// PeerKey returns the key of a peer handle.
func (t *Table) PeerKey(id PeerID) PeerKey {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if p := t.peer(id); p != nil {
		return p.key
	}
	return PeerKey{}
}
