package bgp

import (
	"net/netip"
	"slices"
	"testing"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

// The three formats of one pipeline share one table, which answers the
// pipeline's origin lookups and emits its gauges before each bucket closes.
func TestRegisteredFormatsShareTheTable(t *testing.T) {
	m := netmap.New()
	m.Countries[64500] = "PT"
	var hooks []func(start, end int64, sink obs.Sink)
	env := &ingest.Env{Map: m, BeforeClose: func(h func(start, end int64, sink obs.Sink)) { hooks = append(hooks, h) }}
	decs := map[string]ingest.Decoder{}
	for _, f := range []string{FormatRISLive, FormatMRT, FormatBMP} {
		d, err := ingest.NewDecoder(Stream, f, env)
		if err != nil {
			t.Fatal(err)
		}
		decs[f] = d
	}
	if len(hooks) != 1 {
		t.Fatalf("%d bucket hooks registered, want 1", len(hooks))
	}
	tab := SharedTable(env)
	if m.Live != tab {
		t.Fatal("the table is not the map's live origin source")
	}
	spec := &UpdateSpec{Time: 1700000000e9, Collector: "rrc00", Peer: netip.MustParseAddr("192.0.2.1"), PeerAS: 64496, Path: []uint32{64496, 64500}, Announced: prefixes("198.51.100.0/24")}
	line, _ := EncodeRISLive(spec)
	var sink obs.Slice
	if err := decs[FormatRISLive].Decode(line, &sink); err != nil {
		t.Fatal(err)
	}
	spec.Peer = netip.MustParseAddr("192.0.2.2")
	rec, _ := EncodeMRTUpdate(spec)
	if err := decs[FormatMRT].Decode(rec, &sink); err != nil {
		t.Fatal(err)
	}
	if st := tab.Stats(); st.Peers != 2 || st.Routes != 2 {
		t.Fatalf("stats %+v", st)
	}
	sink = sink[:0]
	hooks[0](1700000000e9, 1700000300e9, &sink)
	want := obs.Slice{
		{Time: 1700000300e9 - 1, Signal: rib.AnnouncedV4, Entity: "asn:64500", Value: 1},
		{Time: 1700000300e9 - 1, Signal: rib.AnnouncedV4, Entity: "country:PT", Value: 1},
		// One full-feed peer alive per collector; MRT names none.
		{Time: 1700000300e9 - 1, Signal: FullFeedPeers, Entity: "feed:bgp@unnamed", Value: 1},
		{Time: 1700000300e9 - 1, Signal: FullFeedPeers, Entity: "feed:bgp@rrc00", Value: 1},
	}
	if !slices.Equal(sink, want) {
		t.Fatalf("gauges %+v", sink)
	}
	if asn, ok := m.OriginAS(netip.MustParseAddr("198.51.100.7")); !ok || asn != 64500 {
		t.Fatalf("Map.OriginAS = %d %v", asn, ok)
	}
	// A quarter of an hour later neither peer has said anything: silent.
	sink = sink[:0]
	hooks[0](1700000900e9, 1700001200e9, &sink)
	if len(sink) != 4 || sink[2].Value != 0 || sink[3].Value != 0 {
		t.Fatalf("gauges of silent peers %+v", sink)
	}
	for _, name := range []string{"bgp_announced_v4", "bgp_announced_v6", "bgp_withdrawals", "bgp_announcements", "bgp_full_feed_peers"} {
		if _, ok := obs.Lookup(name); !ok {
			t.Errorf("signal %s not registered", name)
		}
	}
}
