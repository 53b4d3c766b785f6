package rib

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func testMap() *netmap.Map {
	m := netmap.New()
	m.Countries[64500] = "PT"
	m.Countries[64501] = "PT"
	m.Countries[64502] = "GB"
	return m
}

func peers(t *Table, n int) []PeerID {
	out := make([]PeerID, n)
	for i := range out {
		out[i] = t.Peer(PeerKey{Collector: "rrc00", Addr: netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)}), AS: uint32(65000 + i)})
	}
	return out
}

func announce(t *Table, p PeerID, at int64, origin uint32, prefixes ...string) {
	u := &Update{Peer: p, Time: at, Path: []uint32{65000, 3356, origin}, Origin: origin}
	for _, s := range prefixes {
		u.Announced = append(u.Announced, pfx(s))
	}
	t.Apply(u, nil)
}

// gauges collects EmitSpace output as "signal entity=value".
func gauges(t *Table, at int64) []string {
	var s obs.Slice
	t.EmitSpace(at, &s)
	out := make([]string, 0, len(s))
	for _, o := range s {
		if o.Time != at {
			panic("wrong time")
		}
		out = append(out, fmt.Sprintf("%s %s=%g", o.Signal, o.Entity, o.Value))
	}
	return out
}

func TestVisibilityAndSpace(t *testing.T) {
	tab := New(Config{Map: testMap()})
	ps := peers(tab, 4)
	// Every peer carries the same 10 background prefixes (full feeds)...
	var bg []string
	for i := 0; i < 10; i++ {
		bg = append(bg, fmt.Sprintf("10.%d.0.0/16", i))
	}
	for _, p := range ps {
		announce(tab, p, 1, 64502, bg...)
	}
	// ...a fifth peer carries only one: it is not a full feed.
	partial := tab.Peer(PeerKey{Collector: "rrc00", Addr: netip.MustParseAddr("192.0.2.99"), AS: 65099})
	announce(tab, partial, 1, 64501, "198.51.100.0/24", "2001:db8::/32")
	// 203.0.113.0/24 is seen by 2 of 4 full feeds (visible at share 0.5),
	// 198.51.100.0/24 only by the partial peer (not visible).
	announce(tab, ps[0], 2, 64500, "203.0.113.0/24", "2001:db8:1::/48", "203.0.113.128/25")
	announce(tab, ps[1], 2, 64500, "203.0.113.0/24", "2001:db8:1::/48")

	got := gauges(tab, 100)
	want := []string{
		"bgp_announced_v4 asn:64500=1",
		"bgp_announced_v6 asn:64500=1",
		"bgp_announced_v4 asn:64502=2560",
		"bgp_announced_v4 country:GB=2560",
		"bgp_announced_v4 country:PT=1",
		"bgp_announced_v6 country:PT=1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("gauges:\n got %q\nwant %q", got, want)
	}
	h := tab.Health()
	if len(h) != 5 || !h[0].FullFeed || h[4].FullFeed || h[4].Prefixes != 2 || h[0].Prefixes != 13 {
		t.Fatalf("health = %+v", h)
	}
	if asn, ok := tab.OriginAS(netip.MustParseAddr("203.0.113.200")); !ok || asn != 64500 {
		t.Fatalf("OriginAS(203.0.113.200) = %d, %v", asn, ok)
	}
	if _, ok := tab.OriginAS(netip.MustParseAddr("198.51.100.1")); ok {
		t.Fatal("a prefix only a partial feed carries must not be visible")
	}

	// A withdrawal by one of the two drops the prefix below 2 of 4 and is
	// counted for the origin it had.
	var s obs.Slice
	tab.Apply(&Update{Peer: ps[1], Time: 150, Withdrawn: []netip.Prefix{pfx("203.0.113.0/24"), pfx("192.0.2.0/24")}}, &s)
	wantW := []obs.Observation{
		{Time: 150, Signal: Withdrawals, Entity: "asn:64500", Value: 1},
		{Time: 150, Signal: Withdrawals, Entity: "country:PT", Value: 1},
	}
	if !slices.Equal(s, wantW) {
		t.Fatalf("withdrawal observations = %+v", s)
	}
	got = gauges(tab, 200)
	want = []string{
		"bgp_announced_v4 asn:64500=0",
		"bgp_announced_v6 asn:64500=1",
		"bgp_announced_v4 asn:64502=2560",
		"bgp_announced_v4 country:GB=2560",
		"bgp_announced_v4 country:PT=0",
		"bgp_announced_v6 country:PT=1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("after withdrawal:\n got %q\nwant %q", got, want)
	}
	// While the collectors are healthy, space that is gone reads 0, not
	// missing, bucket after bucket.
	if got = gauges(tab, 300); !slices.Equal(got, want) {
		t.Fatalf("third bucket:\n got %q\nwant %q", got, want)
	}

	// Two of four full feeds go down: the threshold becomes 1 of 2, and
	// ps[0] alone makes 64500's /24, /25 and /48 visible. The /25 inside the
	// /24 adds no space. No withdrawals are emitted.
	if n := tab.PeerDown(ps[1], 310); n != 11 {
		t.Fatalf("PeerDown cleared %d routes, want 11", n)
	}
	tab.PeerDown(ps[2], 320)
	got = gauges(tab, 400)
	want = []string{
		"bgp_announced_v4 asn:64500=1",
		"bgp_announced_v6 asn:64500=1",
		"bgp_announced_v4 asn:64502=2560",
		"bgp_announced_v4 country:GB=2560",
		"bgp_announced_v4 country:PT=1",
		"bgp_announced_v6 country:PT=1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("after peer down:\n got %q\nwant %q", got, want)
	}
	h = tab.Health()
	if h[1].Up || h[1].Resets != 1 || h[1].Prefixes != 0 || h[1].LastMessage != 310 {
		t.Fatalf("health of the reset peer = %+v", h[1])
	}
	// All peers down: no data rather than zeros.
	for _, p := range append(ps, partial) {
		tab.PeerDown(p, 500)
	}
	if got := gauges(tab, 600); len(got) != 0 {
		t.Fatalf("with every peer down EmitSpace gave %q", got)
	}
	if st := tab.Stats(); st.Prefixes != 0 || st.Paths != 0 || st.Visible != 0 || st.Routes != 0 {
		t.Fatalf("stats after every peer went down = %+v", st)
	}
}

func TestMOASAndPathChange(t *testing.T) {
	tab := New(Config{})
	ps := peers(tab, 3)
	for _, p := range ps {
		announce(tab, p, 1, 64502, "10.0.0.0/8")
	}
	announce(tab, ps[0], 2, 64500, "192.0.2.0/24")
	announce(tab, ps[1], 2, 64501, "192.0.2.0/24")
	announce(tab, ps[2], 2, 64501, "192.0.2.0/24")
	tab.Refresh()
	if v4, _ := tab.Space(64501); v4 != 1 {
		t.Fatalf("64501 space = %g, want 1", v4)
	}
	if v4, _ := tab.Space(64500); v4 != 0 {
		t.Fatalf("64500 (1 of 3 peers) space = %g, want 0", v4)
	}
	if asn, _ := tab.OriginAS(netip.MustParseAddr("192.0.2.1")); asn != 64501 {
		t.Fatalf("OriginAS = %d, want 64501", asn)
	}
	// The peers move to 64500: a path change, not a withdrawal.
	announce(tab, ps[1], 3, 64500, "192.0.2.0/24")
	if asn, _ := tab.OriginAS(netip.MustParseAddr("192.0.2.1")); asn != 64500 {
		t.Fatalf("OriginAS after the change = %d, want 64500", asn)
	}
	if v4, _ := tab.Space(64501); v4 != 0 {
		t.Fatalf("64501 space after the change = %g, want 0", v4)
	}
	path, origin, ok := tab.Route(ps[1], pfx("192.0.2.0/24"))
	if !ok || origin != 64500 || !slices.Equal(path, []uint32{65000, 3356, 64500}) {
		t.Fatalf("Route = %v %d %v", path, origin, ok)
	}
	if st := tab.Stats(); st.Paths != 3 || st.Prefixes != 2 || st.Routes != 6 {
		t.Fatalf("stats = %+v, want 3 paths (10/8's, and 64500's and 64501's /24), 2 prefixes, 6 routes", st)
	}
}

func TestAbsoluteFullFeed(t *testing.T) {
	tab := New(Config{FullFeedPrefixes: 3})
	ps := peers(tab, 2)
	announce(tab, ps[0], 1, 64500, "192.0.2.0/24", "198.51.100.0/24")
	announce(tab, ps[1], 1, 64500, "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
	tab.Refresh()
	h := tab.Health()
	if h[0].FullFeed || !h[1].FullFeed {
		t.Fatalf("health = %+v", h)
	}
	if v4, _ := tab.Space(64500); v4 != 3 {
		t.Fatalf("space = %g, want 3 (one full feed carries all three)", v4)
	}
}

// bruteSpace recomputes per-origin space from the routes alone.
func bruteSpace(tab *Table) map[uint32][2]uint64 {
	largest := 0
	for _, p := range tab.peers {
		if p.up && len(p.routes) > largest {
			largest = len(p.routes)
		}
	}
	counts := map[pfxKey]map[uint32]int{}
	nFull := 0
	for _, p := range tab.peers {
		if !p.up || len(p.routes) == 0 || float64(len(p.routes)) < 0.5*float64(largest) {
			continue
		}
		nFull++
		for pid, path := range p.routes {
			k := tab.prefixes[pid].key
			if counts[k] == nil {
				counts[k] = map[uint32]int{}
			}
			counts[k][tab.paths[path].origin]++
		}
	}
	// Per origin, the visible prefixes; space is their union.
	vis := map[uint32][]pfxKey{}
	for k, m := range counts {
		for o, c := range m {
			if o != 0 && k.size() > 0 && float64(c) >= 0.5*float64(nFull) {
				vis[o] = append(vis[o], k)
			}
		}
	}
	out := map[uint32][2]uint64{}
	for o, ks := range vis {
		s := out[o]
	next:
		for _, k := range ks {
			for _, a := range ks {
				if a.bits < k.bits && a.v6 == k.v6 && a.prefix().Contains(k.prefix().Addr()) {
					continue next
				}
			}
			if k.v6 {
				s[1] += k.size()
			} else {
				s[0] += k.size()
			}
		}
		out[o] = s
	}
	return out
}

func TestRandomOpsMatchRecomputation(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tab := New(Config{Map: testMap()})
	ps := peers(tab, 6)
	var prefixes []netip.Prefix
	for i := 0; i < 60; i++ {
		// Nested on purpose: a /16 of one origin covers the longer ones.
		prefixes = append(prefixes, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i / 8), byte(i % 8 * 32), 0}), 16+r.IntN(9)).Masked())
		prefixes = append(prefixes, netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i)}), 32+r.IntN(17)).Masked())
	}
	for step := 0; step < 4000; step++ {
		p := ps[r.IntN(len(ps))]
		switch x := r.IntN(100); {
		case x < 1:
			tab.PeerDown(p, int64(step))
		case x < 60:
			u := &Update{Peer: p, Time: int64(step), Origin: uint32(64500 + r.IntN(3))}
			u.Path = []uint32{65000, u.Origin}
			for i := r.IntN(4); i >= 0; i-- {
				u.Announced = append(u.Announced, prefixes[r.IntN(len(prefixes))])
			}
			tab.Apply(u, nil)
		default:
			u := &Update{Peer: p, Time: int64(step)}
			for i := r.IntN(4); i >= 0; i-- {
				u.Withdrawn = append(u.Withdrawn, prefixes[r.IntN(len(prefixes))])
			}
			tab.Apply(u, nil)
		}
		if step%97 == 0 {
			tab.Refresh()
			want := bruteSpace(tab)
			for o := uint32(64500); o < 64503; o++ {
				s := tab.origins[o]
				var got [2]uint64
				if s != nil {
					got = [2]uint64{s.v4, s.v6}
				}
				if got != want[o] {
					t.Fatalf("step %d origin %d: space %v, recomputed %v", step, o, got, want[o])
				}
			}
			// The checkpoint restores the same state and the same bytes.
			b, _ := tab.MarshalBinary()
			back := New(Config{Map: testMap()})
			if err := back.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			b2, _ := back.MarshalBinary()
			if !bytes.Equal(b, b2) {
				t.Fatalf("step %d: checkpoint not stable across a round trip", step)
			}
			for o := uint32(64500); o < 64503; o++ {
				v4a, v6a := tab.Space(o)
				v4b, v6b := back.Space(o)
				if v4a != v4b || v6a != v6b {
					t.Fatalf("step %d: restored space of %d = %g/%g, want %g/%g", step, o, v4b, v6b, v4a, v6a)
				}
			}
			for _, pr := range prefixes {
				a1, ok1 := tab.OriginAS(pr.Addr())
				a2, ok2 := back.OriginAS(pr.Addr())
				if a1 != a2 || ok1 != ok2 {
					t.Fatalf("step %d: restored OriginAS(%s) = %d, want %d", step, pr.Addr(), a2, a1)
				}
			}
			if !slices.Equal(tab.Health(), back.Health()) {
				t.Fatalf("step %d: restored health differs", step)
			}
		}
	}
}

func TestCheckpointRejectsGarbage(t *testing.T) {
	tab := New(Config{})
	ps := peers(tab, 2)
	announce(tab, ps[0], 1, 64500, "192.0.2.0/24", "2001:db8::/32")
	b, _ := tab.MarshalBinary()
	for i := 0; i < len(b); i++ {
		if err := New(Config{}).UnmarshalBinary(b[:i]); err == nil {
			t.Fatalf("truncated checkpoint of %d/%d bytes accepted", i, len(b))
		}
	}
	if err := New(Config{}).UnmarshalBinary(append(b, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

// A network that withdraws every route reports 0 while the collectors are
// up, for as long as the history remembers its space, then is forgotten;
// with no full feed up it reports nothing (no data).
func TestWithdrawnEverythingReadsZero(t *testing.T) {
	tab := New(Config{Map: testMap()})
	ps := peers(tab, 2)
	for _, p := range ps {
		announce(tab, p, 1, 64502, "10.0.0.0/16")
		announce(tab, p, 1, 64500, "2001:db8:1::/48")
	}
	gauges(tab, 5)
	for _, p := range ps {
		tab.Apply(&Update{Peer: p, Time: 10, Withdrawn: []netip.Prefix{pfx("2001:db8:1::/48")}}, nil)
	}
	want := []string{
		"bgp_announced_v6 asn:64500=0",
		"bgp_announced_v4 asn:64502=256",
		"bgp_announced_v4 country:GB=256",
		"bgp_announced_v6 country:PT=0",
	}
	for _, at := range []int64{100, 200, 100 + zeroRetention - 1} {
		if got := gauges(tab, at); !slices.Equal(got, want) {
			t.Fatalf("at %d:\n got %q\nwant %q", at, got, want)
		}
	}
	// The last zero, then forgotten.
	if got := gauges(tab, 100+zeroRetention); !slices.Equal(got, want) {
		t.Fatalf("at retention:\n got %q\nwant %q", got, want)
	}
	want = []string{"bgp_announced_v4 asn:64502=256", "bgp_announced_v4 country:GB=256"}
	if got := gauges(tab, 200+zeroRetention); !slices.Equal(got, want) {
		t.Fatalf("after retention:\n got %q\nwant %q", got, want)
	}
}
