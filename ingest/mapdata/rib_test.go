package mapdata

import (
	"bytes"
	"compress/gzip"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	gobgp "github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/packet/mrt"

	"github.com/outagewatch/outagewatch/netmap"
)

// ribRecords builds a small TABLE_DUMP_V2 dump with gobgp's mrt package:
// three peers; 192.0.2.0/24 seen with origin 64500 by two peers and 64501
// by one; 2001:db8::/32 originated by 64502; 198.51.100.0/24 ending in an
// AS_SET (no origin).
func ribRecords(t testing.TB) [][]byte {
	const ts = 1700000000
	var out [][]byte
	add := func(st mrt.MRTSubTypeTableDumpv2, body mrt.Body) {
		m, err := mrt.NewMRTMessage(ts, mrt.TABLE_DUMPv2, st, body)
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Serialize()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	peers := []*mrt.Peer{
		mrt.NewPeer("192.0.2.1", "203.0.113.1", 65001, true),
		mrt.NewPeer("192.0.2.1", "203.0.113.2", 65002, true),
		mrt.NewPeer("192.0.2.1", "203.0.113.3", 65003, true),
	}
	add(mrt.PEER_INDEX_TABLE, mrt.NewPeerIndexTable("192.0.2.1", "test", peers))
	entry := func(peer int, typ uint8, path []uint32, v6 gobgp.AddrPrefixInterface) *mrt.RibEntry {
		params := []gobgp.AsPathParamInterface{gobgp.NewAs4PathParam(gobgp.BGP_ASPATH_ATTR_TYPE_SEQ, path[:len(path)-1])}
		params = append(params, gobgp.NewAs4PathParam(typ, path[len(path)-1:]))
		attrs := []gobgp.PathAttributeInterface{gobgp.NewPathAttributeOrigin(0), gobgp.NewPathAttributeAsPath(params)}
		if v6 == nil {
			attrs = append(attrs, gobgp.NewPathAttributeNextHop("203.0.113.1"))
		} else {
			attrs = append(attrs, gobgp.NewPathAttributeMpReachNLRI("2001:db8::1", []gobgp.AddrPrefixInterface{v6}))
		}
		return mrt.NewRibEntry(uint16(peer), ts, 0, attrs, false)
	}
	seq := uint8(gobgp.BGP_ASPATH_ATTR_TYPE_SEQ)
	add(mrt.RIB_IPV4_UNICAST, mrt.NewRib(0, gobgp.NewIPAddrPrefix(24, "192.0.2.0"), []*mrt.RibEntry{
		entry(0, seq, []uint32{65001, 3356, 64500}, nil),
		entry(1, seq, []uint32{65002, 1299, 64501}, nil),
		entry(2, seq, []uint32{65003, 64500}, nil),
	}))
	v6 := gobgp.NewIPv6AddrPrefix(32, "2001:db8::")
	add(mrt.RIB_IPV6_UNICAST, mrt.NewRib(1, v6, []*mrt.RibEntry{entry(0, seq, []uint32{65001, 64502}, v6)}))
	add(mrt.RIB_IPV4_UNICAST, mrt.NewRib(2, gobgp.NewIPAddrPrefix(24, "198.51.100.0"), []*mrt.RibEntry{
		entry(0, gobgp.BGP_ASPATH_ATTR_TYPE_SET, []uint32{65001, 64503}, nil),
	}))
	return out
}

func TestReadRIB(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, r := range ribRecords(t) {
		zw.Write(r)
	}
	zw.Close()
	file := filepath.Join(t.TempDir(), "rib.test.gz")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	m := netmap.New()
	st, err := ReadRIB(file, m)
	if err != nil {
		t.Fatal(err)
	}
	if st.Lines != 3 || st.Skipped != 0 || st.Origins != 2 {
		t.Fatalf("%+v", st)
	}
	for p, want := range map[string]uint32{"192.0.2.0/24": 64500, "2001:db8::/32": 64502} {
		if got, _ := m.Origins.Get(netip.MustParsePrefix(p)); got != want {
			t.Errorf("%s: origin %d, want %d", p, got, want)
		}
	}
	if _, ok := m.Origins.Get(netip.MustParsePrefix("198.51.100.0/24")); ok {
		t.Error("a path ending in an AS_SET gave an origin")
	}
}
