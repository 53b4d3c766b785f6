package bgp

import (
	"bufio"
	"net/netip"
	"os"
	"slices"
	"testing"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

func TestRISLiveSample(t *testing.T) {
	m := netmap.New()
	m.Countries[268481] = "BR"
	tab := rib.New(rib.Config{Map: m})
	d := NewRISLive(tab)
	f, err := os.Open("testdata/ris-live-stream.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var reasons []string
	var sink obs.Slice
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		err := d.Decode(sc.Bytes(), &sink)
		if err != nil {
			reasons = append(reasons, ingest.Reason(err))
		} else {
			reasons = append(reasons, "")
		}
	}
	// UPDATE, PEER_STATE down, ris_error, OPEN, NOTIFICATION, KEEPALIVE,
	// and a KEEPALIVE cut short.
	if want := []string{"", "", "ris_error", "", "", "", "json"}; !slices.Equal(reasons, want) {
		t.Fatalf("reasons %q, want %q", reasons, want)
	}
	wantObs := obs.Slice{
		{Time: 1553627987890000000, Signal: rib.Announcements, Entity: "asn:268481", Value: 1},
		{Time: 1553627987890000000, Signal: rib.Announcements, Entity: "country:BR", Value: 1},
	}
	if !slices.Equal(sink, wantObs) {
		t.Fatalf("observations %+v", sink)
	}
	peer := tab.Peer(rib.PeerKey{Collector: "rrc00", Addr: netip.MustParseAddr("72.22.223.9"), AS: 11708})
	path, origin, ok := tab.Route(peer, netip.MustParsePrefix("45.161.192.0/23"))
	wantPath := []uint32{11708, 32097, 1299, 52320, 263009, 263009, 263009, 263009, 263009, 52993, 268481, 268481}
	if !ok || origin != 268481 || !slices.Equal(path, wantPath) {
		t.Fatalf("route = %v %d %v", path, origin, ok)
	}
	h := tab.Health()
	// rrc00 72.22.223.9 (update), rrc00 94.177.122.251 (OPEN),
	// rrc01 195.66.224.59 (down), rrc01 2001:7f8:4::73ab:1 (NOTIFICATION),
	// rrc03 80.249.210.89 (KEEPALIVE).
	if len(h) != 5 {
		t.Fatalf("health %+v", h)
	}
	if !h[0].Up || h[0].Prefixes != 1 || h[0].LastMessage != 1553627987890000000 {
		t.Fatalf("health of the updating peer %+v", h[0])
	}
	if h[2].Peer.Addr != netip.MustParseAddr("195.66.224.59") || h[2].Up {
		t.Fatalf("health of the peer that went down %+v", h[2])
	}
}

func TestRISLiveVariants(t *testing.T) {
	tab := rib.New(rib.Config{})
	d := NewRISLive(tab)
	var sink obs.Slice
	// Bare data object, numeric peer_asn, an AS_SET origin, IPv6.
	msg := `{"timestamp":1700000000.5,"peer":"2001:db8::1","peer_asn":64496,"host":"rrc21","type":"UPDATE","path":[64496,64497,[64498,64499]],"announcements":[{"next_hop":"2001:db8::1","prefixes":["2001:db8:100::/40"]}],"withdrawals":["2001:db8:200::/40"]}`
	if err := d.Decode([]byte(msg), &sink); err != nil {
		t.Fatal(err)
	}
	peer := tab.Peer(rib.PeerKey{Collector: "rrc21", Addr: netip.MustParseAddr("2001:db8::1"), AS: 64496})
	path, origin, ok := tab.Route(peer, netip.MustParsePrefix("2001:db8:100::/40"))
	if !ok || origin != 0 || !slices.Equal(path, []uint32{64496, 64497, 64498, 64499}) {
		t.Fatalf("route = %v %d %v", path, origin, ok)
	}
	if len(sink) != 0 {
		t.Fatalf("an unknown origin must not be counted: %+v", sink)
	}
	bad := map[string]string{
		`{"type":"ris_message","data":{"timestamp":1,"peer":"x","peer_asn":"1","type":"UPDATE"}}`:                                       "peer",
		`{"type":"ris_message","data":{"timestamp":1,"peer":"192.0.2.1","peer_asn":"-1","type":"UPDATE"}}`:                              "peer_asn",
		`{"type":"ris_message","data":{"timestamp":0,"peer":"192.0.2.1","peer_asn":"1","type":"UPDATE"}}`:                               "timestamp",
		`{"type":"ris_message","data":{"timestamp":1,"peer":"192.0.2.1","peer_asn":"1","type":"UPDATE","withdrawals":["300.0.0.0/8"]}}`: "prefix",
		`{"type":"ris_message","data":{"timestamp":1,"peer":"192.0.2.1","peer_asn":"1","type":"UPDATE","path":["x"]}}`:                  "path",
		`{"type":"ris_message","data":{"timestamp":1,"peer":"192.0.2.1","peer_asn":"1","type":"RIS_PEER_STATE","state":"weird"}}`:       "peer_state",
		`{"type":"ris_message","data":{"timestamp":1,"peer":"192.0.2.1","peer_asn":"1","type":"MYSTERY"}}`:                              "unknown_type",
		`{"type":"ris_message"}`: "missing_field",
		`[1,2]`:                  "json",
	}
	for in, want := range bad {
		if err := d.Decode([]byte(in), &sink); ingest.Reason(err) != want {
			t.Errorf("%s: reason %q (%v), want %q", in, ingest.Reason(err), err, want)
		}
	}
	if err := d.Decode([]byte(`{"type":"ris_subscribe_ok","data":{}}`), &sink); err != nil {
		t.Errorf("subscribe_ok: %v", err)
	}
}
