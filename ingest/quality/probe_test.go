package quality

import (
	qm "github.com/outagewatch/outagewatch/obs/quality"
	"testing"

	"github.com/outagewatch/outagewatch/netmap"
)

// A measurement of one probe towards one destination, not through a named
// transit, gets a probe entity beside its network's and country's; one
// through a transit is already its path series; a probe name that cannot be
// part of an entity gets none.
func TestProbeEntities(t *testing.T) {
	d := NewDecoder(netmap.New())
	cases := []struct {
		in   string
		want []string // entities of packet_loss, in order
	}{
		{`{"time": 1745836500, "probe": "lis-fibre-3", "src_asn": 3243, "country": "PT", "dst": "193.0.14.129", "sent": 10, "rcvd": 9}`,
			[]string{"asn:3243", "country:PT", "probe:lis-fibre-3>193.0.14.0/24"}},
		{`{"time": 1745836500, "probe": "lis-fibre-3", "dst_asn": 15169, "sent": 10, "rcvd": 10}`,
			[]string{"probe:lis-fibre-3>as15169"}},
		{`{"time": 1745836500, "probe": "lis01-paths", "site": "lis01", "transit_asn": 1299, "dst": "198.51.100.7", "sent": 10, "rcvd": 10}`,
			[]string{"transit:1299@lis01", "path:1299@lis01>198.51.100.0/24"}},
		{`{"time": 1745836500, "probe": "p>1", "src_asn": 3243, "dst": "2001:db8:7::1", "sent": 10, "rcvd": 10}`,
			[]string{"asn:3243"}},
		{`{"time": 1745836500, "probe": "lis-fibre-3", "src_asn": 3243, "sent": 10, "rcvd": 10}`,
			[]string{"asn:3243"}},
	}
	for _, c := range cases {
		var got []string
		for _, o := range decodeAll(t, d, c.in) {
			if o.Signal == qm.PacketLoss {
				got = append(got, o.Entity)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.in, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s:\n got %v\nwant %v", c.in, got, c.want)
				break
			}
		}
	}
	if e, ok := qm.ProbeEntity("6001", "193.0.14.129"); !ok || e != "probe:6001>193.0.14.0/24" {
		t.Errorf("ProbeEntity = %q %v", e, ok)
	}
	if _, ok := qm.ProbeEntity("a:b", "193.0.14.129"); ok {
		t.Error("a probe name with ':' accepted")
	}
}
