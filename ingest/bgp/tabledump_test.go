package bgp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	gobgp "github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/packet/mrt"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// syntheticRIB builds a TABLE_DUMP_V2 dump with gobgp's mrt package: a
// PEER_INDEX_TABLE of nPeers, then one RIB record per prefix carried by
// every peer. Prefix i is 10.0.0.0/8 + i as a /24 for even i and an IPv6
// /48 for odd i; its origin is 64512 + i%1000 and peer p's path is
// [65000+p, 3356, origin].
func syntheticRIB(tb testing.TB, nPeers, nPrefixes int) [][]byte {
	const ts = 1700000000
	var peers []*mrt.Peer
	for p := 0; p < nPeers; p++ {
		peers = append(peers, mrt.NewPeer("192.0.2.1", fmt.Sprintf("198.51.100.%d", p+1), uint32(65000+p), true))
	}
	out := make([][]byte, 0, nPrefixes+1)
	add := func(st mrt.MRTSubTypeTableDumpv2, body mrt.Body) {
		m, err := mrt.NewMRTMessage(ts, mrt.TABLE_DUMPv2, st, body)
		if err != nil {
			tb.Fatal(err)
		}
		b, err := m.Serialize()
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	add(mrt.PEER_INDEX_TABLE, mrt.NewPeerIndexTable("192.0.2.1", "synthetic", peers))
	for i := 0; i < nPrefixes; i++ {
		origin := uint32(64512 + i%1000)
		var prefix gobgp.AddrPrefixInterface
		st := mrt.RIB_IPV4_UNICAST
		if i%2 == 0 {
			a := netip.AddrFrom4([4]byte{10 + byte(i>>17), byte(i >> 9), byte(i >> 1), 0})
			prefix = gobgp.NewIPAddrPrefix(24, a.String())
		} else {
			var b [16]byte
			b[0], b[1] = 0x2a, 0x0b
			binary.BigEndian.PutUint32(b[2:], uint32(i))
			prefix = gobgp.NewIPv6AddrPrefix(48, netip.AddrFrom16(b).String())
			st = mrt.RIB_IPV6_UNICAST
		}
		entries := make([]*mrt.RibEntry, 0, nPeers)
		for p := 0; p < nPeers; p++ {
			attrs := []gobgp.PathAttributeInterface{
				gobgp.NewPathAttributeOrigin(0),
				gobgp.NewPathAttributeAsPath([]gobgp.AsPathParamInterface{gobgp.NewAs4PathParam(gobgp.BGP_ASPATH_ATTR_TYPE_SEQ, []uint32{uint32(65000 + p), 3356, origin})}),
			}
			if st == mrt.RIB_IPV4_UNICAST {
				attrs = append(attrs, gobgp.NewPathAttributeNextHop(fmt.Sprintf("198.51.100.%d", p+1)))
			} else {
				attrs = append(attrs, gobgp.NewPathAttributeMpReachNLRI("2001:db8::1", []gobgp.AddrPrefixInterface{prefix}))
			}
			entries = append(entries, mrt.NewRibEntry(uint16(p), ts, 0, attrs, false))
		}
		add(st, mrt.NewRib(uint32(i), prefix, entries))
	}
	return out
}

func TestTableDump(t *testing.T) {
	recs := syntheticRIB(t, 4, 200)
	tab := rib.New(rib.Config{})
	d := NewMRT(tab, "rv2")
	var sink obs.Slice
	// A RIB record before any PEER_INDEX_TABLE cannot be attributed.
	if err := d.Decode(recs[1], &sink); ingest.Reason(err) != "no_peer_index" {
		t.Fatalf("RIB before index: %v", err)
	}
	for i, r := range recs {
		if err := d.Decode(r, &sink); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	st := tab.Stats()
	if st.Peers != 4 || st.Routes != 800 || st.Prefixes != 200 || st.Paths != 800 {
		t.Fatalf("stats %+v, want 4 peers, 800 routes, 200 prefixes, 800 distinct paths", st)
	}
	if len(sink) != 800 {
		t.Fatalf("%d announcement observations, want 800", len(sink))
	}
	tab.Refresh()
	// 100 IPv4 /24s and 100 IPv6 /48s, origins 64512..64711.
	if v4, v6 := tab.Space(64512); v4 != 1 || v6 != 0 {
		t.Fatalf("space of 64512 = %g, %g", v4, v6)
	}
	if v4, v6 := tab.Space(64513); v4 != 0 || v6 != 1 {
		t.Fatalf("space of 64513 = %g, %g", v4, v6)
	}
	if asn, ok := tab.OriginAS(netip.MustParseAddr("10.0.1.77")); !ok || asn != 64514 {
		t.Fatalf("OriginAS(10.0.1.77) = %d %v", asn, ok)
	}
	for _, h := range tab.Health() {
		if !h.Up || !h.FullFeed || h.Prefixes != 200 || h.LastMessage != 1700000000e9 {
			t.Fatalf("health %+v", h)
		}
	}
}

func TestMRTStateAndET(t *testing.T) {
	tab := rib.New(rib.Config{})
	d := NewMRT(tab, "c")
	var sink obs.Slice
	spec := &UpdateSpec{Time: 1700000000e9, Peer: netip.MustParseAddr("192.0.2.1"), PeerAS: 64496, Path: []uint32{64496, 64500}, Announced: prefixes("198.51.100.0/24")}
	rec, err := EncodeMRTUpdate(spec)
	if err != nil {
		t.Fatal(err)
	}
	// The same record as BGP4MP_ET: 4 bytes of microseconds after the header.
	et := append([]byte{}, rec[:12]...)
	binary.BigEndian.PutUint16(et[4:], uint16(mrt.BGP4MP_ET))
	binary.BigEndian.PutUint32(et[8:], binary.BigEndian.Uint32(rec[8:])+4)
	et = binary.BigEndian.AppendUint32(et, 250000)
	et = append(et, rec[12:]...)
	var at int64
	d.Trace = func(_ rib.PeerKey, u *rib.Update) { at = u.Time }
	if err := d.Decode(et, &sink); err != nil {
		t.Fatal(err)
	}
	if at != 1700000000_250000000 {
		t.Fatalf("ET time %d", at)
	}
	if ts, _ := MRTTime(et); ts != at {
		t.Fatalf("MRTTime = %d", ts)
	}
	sc := mrt.NewBGP4MPStateChange(64496, 12654, 0, "192.0.2.1", "192.0.2.254", true, mrt.ESTABLISHED, mrt.IDLE)
	m, _ := mrt.NewMRTMessage(1700000005, mrt.BGP4MP, mrt.STATE_CHANGE_AS4, sc)
	b, _ := m.Serialize()
	if err := d.Decode(b, &sink); err != nil {
		t.Fatal(err)
	}
	h := tab.Health()
	if len(h) != 1 || h[0].Up || h[0].Prefixes != 0 || h[0].Resets != 1 || h[0].LastMessage != 1700000005e9 {
		t.Fatalf("health after Established → Idle: %+v", h)
	}
	for in, reason := range map[string]string{
		"short":                  "truncated",
		string(rec[:len(rec)-1]): "truncated",
		string(append(rec[:4:4], 0, 12, 0, 0, 0, 0, 0, 0)):           "unsupported",
		string([]byte{0, 0, 0, 0, 0, 13, 0, 2, 0, 0, 0, 3, 1, 2, 3}): "table_dump",
	} {
		if err := d.Decode([]byte(in), &sink); ingest.Reason(err) != reason {
			t.Errorf("%q: reason %q (%v), want %q", in, ingest.Reason(err), err, reason)
		}
	}
}
