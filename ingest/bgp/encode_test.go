package bgp

import (
	"net/netip"
	"slices"
	"testing"

	gobgp "github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/packet/bmp"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// roundTrip encodes spec, decodes it with a fresh table and checks that the
// decoder saw exactly the spec.
func roundTrip(t *testing.T, name string, spec *UpdateSpec, enc func(*UpdateSpec) ([]byte, error), dec func(*rib.Table) (ingest.Decoder, func(Trace)), wantTime int64) {
	t.Helper()
	b, err := enc(spec)
	if err != nil {
		t.Fatalf("%s: encode: %v", name, err)
	}
	tab := rib.New(rib.Config{})
	d, setTrace := dec(tab)
	var seen []rib.Update
	var keys []rib.PeerKey
	setTrace(func(k rib.PeerKey, u *rib.Update) {
		c := *u
		c.Path = slices.Clone(u.Path)
		c.Announced = slices.Clone(u.Announced)
		c.Withdrawn = slices.Clone(u.Withdrawn)
		seen = append(seen, c)
		keys = append(keys, k)
	})
	var sink obs.Slice
	if err := d.Decode(b, &sink); err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
	if len(seen) != 1 {
		t.Fatalf("%s: %d updates decoded", name, len(seen))
	}
	u := seen[0]
	if keys[0].Addr != spec.Peer || keys[0].AS != spec.PeerAS {
		t.Errorf("%s: peer %+v", name, keys[0])
	}
	if u.Time != wantTime {
		t.Errorf("%s: time %d, want %d", name, u.Time, wantTime)
	}
	if len(spec.Announced) > 0 && (!slices.Equal(u.Path, spec.Path) || u.Origin != spec.Path[len(spec.Path)-1]) {
		t.Errorf("%s: path %v origin %d, want %v", name, u.Path, u.Origin, spec.Path)
	}
	sortP := func(p []netip.Prefix) []netip.Prefix {
		p = slices.Clone(p)
		slices.SortFunc(p, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
		return p
	}
	if !slices.Equal(sortP(u.Announced), sortP(spec.Announced)) || !slices.Equal(sortP(u.Withdrawn), sortP(spec.Withdrawn)) {
		t.Errorf("%s: announced %v withdrawn %v, want %v %v", name, u.Announced, u.Withdrawn, spec.Announced, spec.Withdrawn)
	}
}

func TestEncodersRoundTrip(t *testing.T) {
	specs := []*UpdateSpec{
		{Time: 1745840000_123456789, Collector: "rrc18", Peer: netip.MustParseAddr("192.0.2.1"), PeerAS: 64496, Path: []uint32{64496, 3356, 4200000001},
			Announced: prefixes("198.51.100.0/24", "203.0.113.0/25", "2001:db8:1::/48"), Withdrawn: prefixes("192.0.2.0/24", "2001:db8:2::/48")},
		{Time: 1745840001_000000000, Collector: "rrc00", Peer: netip.MustParseAddr("2001:db8::7"), PeerAS: 64497, Path: []uint32{64497, 64511},
			Announced: prefixes("2001:db8:3::/48", "10.0.0.0/8"), NextHop: netip.MustParseAddr("192.0.2.9")},
		{Time: 1745840002_000000000, Collector: "rrc00", Peer: netip.MustParseAddr("192.0.2.2"), PeerAS: 64498, Withdrawn: prefixes("10.1.0.0/16")},
	}
	for i, s := range specs {
		roundTrip(t, "mrt", s, EncodeMRTUpdate, func(tab *rib.Table) (ingest.Decoder, func(Trace)) {
			d := NewMRT(tab, "")
			return d, func(tr Trace) { d.Trace = tr }
		}, s.Time/1e9*1e9)
		roundTrip(t, "rislive", s, EncodeRISLive, func(tab *rib.Table) (ingest.Decoder, func(Trace)) {
			d := NewRISLive(tab)
			return d, func(tr Trace) { d.Trace = tr }
		}, s.Time/1e7*1e7)
		if i == 0 {
			b, _ := EncodeRISLive(s)
			const want = `{"type":"ris_message","data":{"timestamp":1745840000.12,"peer":"192.0.2.1","peer_asn":"64496","id":"192.0.2.1-1745840000.12",`
			if string(b[:len(want)]) != want {
				t.Errorf("RIS Live line starts %s", b[:len(want)])
			}
		}
	}
	// An update larger than a BGP message cannot be encoded.
	var many []netip.Prefix
	for i := 0; i < 2000; i++ {
		many = append(many, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24))
	}
	if _, err := EncodeMRTUpdate(&UpdateSpec{Peer: netip.MustParseAddr("192.0.2.1"), PeerAS: 1, Path: []uint32{1}, Announced: many}); err == nil {
		t.Error("oversized update encoded")
	}
}

func bmpBytes(t testing.TB, m *bmp.BMPMessage) []byte {
	b, err := m.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func bmpUpdate(t testing.TB, ts float64, peer string, as uint32, spec *UpdateSpec) []byte {
	msg, err := spec.bgpUpdate()
	if err != nil {
		t.Fatal(err)
	}
	ph := bmp.NewBMPPeerHeader(bmp.BMP_PEER_TYPE_GLOBAL, 0, 0, peer, as, "192.0.2.254", ts)
	return bmpBytes(t, bmp.NewBMPRouteMonitoring(*ph, msg))
}

func TestBMP(t *testing.T) {
	tab := rib.New(rib.Config{})
	d := NewBMP(tab, "edge1")
	var sink obs.Slice
	ph := bmp.NewBMPPeerHeader(bmp.BMP_PEER_TYPE_GLOBAL, 0, 0, "192.0.2.1", 64496, "192.0.2.1", 1700000000)
	open := gobgp.NewBGPOpenMessage(64496, 90, "192.0.2.1", nil)
	up := bmpBytes(t, bmp.NewBMPPeerUpNotification(*ph, "192.0.2.254", 179, 40000, open, open))
	if err := d.Decode(up, &sink); err != nil {
		t.Fatalf("peer up: %v", err)
	}
	upd := bmpUpdate(t, 1700000001.5, "192.0.2.1", 64496, &UpdateSpec{Peer: netip.MustParseAddr("192.0.2.1"), Path: []uint32{64496, 64500},
		Announced: prefixes("198.51.100.0/24", "2001:db8::/32")})
	if err := d.Decode(upd, &sink); err != nil {
		t.Fatalf("route monitoring: %v", err)
	}
	want := obs.Slice{{Time: 1700000001_500000000, Signal: rib.Announcements, Entity: "asn:64500", Value: 2}}
	if !slices.Equal(sink, want) {
		t.Fatalf("observations %+v", sink)
	}
	h := tab.Health()
	if len(h) != 1 || h[0].Peer != (rib.PeerKey{Collector: "edge1", Addr: netip.MustParseAddr("192.0.2.1"), AS: 64496}) || !h[0].Up || h[0].Prefixes != 2 {
		t.Fatalf("health %+v", h)
	}
	ph.Timestamp = 1700000009
	down := bmpBytes(t, bmp.NewBMPPeerDownNotification(*ph, bmp.BMP_PEER_DOWN_REASON_REMOTE_NO_NOTIFICATION, nil, nil))
	if err := d.Decode(down, &sink); err != nil {
		t.Fatalf("peer down: %v", err)
	}
	h = tab.Health()
	if h[0].Up || h[0].Prefixes != 0 || h[0].Resets != 1 || h[0].LastMessage != 1700000009e9 {
		t.Fatalf("health after peer down %+v", h)
	}
	init := bmpBytes(t, bmp.NewBMPInitiation([]bmp.BMPInfoTLVInterface{bmp.NewBMPInfoTLVString(bmp.BMP_INIT_TLV_TYPE_SYS_NAME, "edge1")}))
	if err := d.Decode(init, &sink); err != nil {
		t.Fatalf("initiation: %v", err)
	}
	for in, reason := range map[string]string{
		"\x03\x00":                     "truncated",
		"\x02\x00\x00\x00\x06\x00":     "bmp_version",
		"\x03\x00\x00\x00\xff\x00":     "truncated",
		"\x03\x00\x00\x00\x06\x09":     "bmp",
		string(upd[:len(upd)-3]):       "truncated",
		string(append(up[:6:6], 0, 1)): "truncated",
	} {
		if err := d.Decode([]byte(in), &sink); ingest.Reason(err) != reason {
			t.Errorf("%q: reason %q (%v), want %q", in, ingest.Reason(err), err, reason)
		}
	}
}
