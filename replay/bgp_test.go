package replay_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	flowpb "github.com/netsampler/goflow2/v2/pb"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/flows"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
)

// The routing side of the Uganda shutdown, exactly: the country's space at
// the first withdrawals (13:30), every Ugandan network's at the shutdown,
// bursts from MTN and the country, all resolved as the routes return on
// the 18th.
func TestUgandaRoutingAlertsExactly(t *testing.T) {
	_, events, st := replayFixture(t, "../fixtures/uganda-2021-01-13.yaml")
	if st.Records["bgp/rislive"] == 0 || len(st.DecodeErrors) != 0 {
		t.Fatalf("records %v errors %v", st.Records, st.DecodeErrors)
	}
	var got []string
	for _, ev := range events {
		if strings.HasPrefix(ev.Signal, "bgp_") {
			got = append(got, strings.Join([]string{string(ev.Status), ev.Detector, ev.Signal, ev.Entity, ev.At.Format("01-02T15:04")}, " "))
		}
	}
	want := []string{
		"firing prefix_withdrawal bgp_announced_v4 country:UG 01-13T13:35",
		"firing prefix_withdrawal bgp_announced_v6 country:UG 01-13T13:35",
		"firing prefix_withdrawal bgp_announced_v4 asn:20294 01-13T17:05",
		"firing prefix_withdrawal bgp_announced_v4 asn:21491 01-13T17:05",
		"firing prefix_withdrawal bgp_announced_v4 asn:36977 01-13T17:05",
		"firing prefix_withdrawal bgp_announced_v4 asn:37063 01-13T17:05",
		"firing prefix_withdrawal bgp_announced_v6 asn:20294 01-13T17:05",
		"firing prefix_withdrawal bgp_announced_v6 asn:21491 01-13T17:05",
		"firing prefix_withdrawal bgp_announced_v6 asn:36977 01-13T17:05",
		"firing prefix_withdrawal bgp_announced_v6 asn:37063 01-13T17:05",
		"firing withdrawal_burst bgp_withdrawals asn:20294 01-13T17:05",
		"firing withdrawal_burst bgp_withdrawals country:UG 01-13T17:05",
		"resolved prefix_withdrawal bgp_announced_v6 asn:20294 01-18T09:20",
		"resolved prefix_withdrawal bgp_announced_v6 asn:21491 01-18T09:20",
		"resolved prefix_withdrawal bgp_announced_v6 asn:36977 01-18T09:20",
		"resolved prefix_withdrawal bgp_announced_v6 asn:37063 01-18T09:20",
		"resolved withdrawal_burst bgp_withdrawals asn:20294 01-18T09:20",
		"resolved prefix_withdrawal bgp_announced_v4 asn:20294 01-18T09:30",
		"resolved prefix_withdrawal bgp_announced_v4 asn:21491 01-18T09:35",
		"resolved prefix_withdrawal bgp_announced_v4 asn:36977 01-18T09:35",
		"resolved prefix_withdrawal bgp_announced_v4 asn:37063 01-18T09:35",
		"resolved prefix_withdrawal bgp_announced_v6 country:UG 01-18T09:55",
		"resolved withdrawal_burst bgp_withdrawals country:UG 01-18T09:55",
		"resolved prefix_withdrawal bgp_announced_v4 country:UG 01-18T10:05",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("routing alerts:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

const asLessDoc = `
name: as-less-flows
start: 2024-05-14T00:00:00Z
end: 2024-05-14T04:00:00Z
seed: 11
local_asns: [64500]
countries:
  GB: {peak: 1e9}
networks:
  - {asn: 5089, country: GB, share: 0.5}
  - {asn: 2856, country: GB, share: 0.5}
flows: {disabled: true}
bgp:
  collectors: [rrc00]
  peers: 2
  churn: -1
  episodes:
    - {name: all of AS5089 withdrawn, targets: ["asn:5089"], start: 2024-05-14T02:00:00Z, end: 2024-05-14T03:00:00Z, share: 1}
`

// Flow records without AS numbers (a router that exports none) are
// attributed through the routing table that the BGP input fills: to the
// address's origin while the prefix is announced, to nobody while it is
// withdrawn. The address is outside the fixture's mapping file, so only
// the table can attribute it.
func TestASLessFlowsAttributedThroughTheTable(t *testing.T) {
	spec, err := scenario.Parse("as-less.yaml", []byte(asLessDoc))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := spec.BGPPrefixes()
	if err != nil {
		t.Fatal(err)
	}
	block := ps[5089][3] // one of AS5089's own prefixes, not in the map
	if asn, _ := spec.Map().OriginAS(block.Addr().Next()); asn != 0 {
		t.Fatalf("%s is in the mapping file (AS%d)", block, asn)
	}
	var recs []*ingest.Record
	for ts := spec.Start; ts.Before(spec.End); ts = ts.Add(time.Minute) {
		at := ts.Add(30 * time.Second)
		b, err := flows.AppendDelimited(nil, &flowpb.FlowMessage{
			Type: flowpb.FlowMessage_SFLOW_5, TimeReceivedNs: uint64(at.UnixNano()), SamplingRate: 1, Bytes: 1000, Packets: 1,
			SrcAddr: []byte{192, 0, 2, 10}, DstAddr: block.Addr().Next().AsSlice(), SrcAs: 64500, DstAs: 0, Etype: 0x800, Proto: 6,
		})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &ingest.Record{Stream: "flows", Format: "goflow2-pb", Time: at.UnixNano(), Value: b})
	}
	run := func(withBGP bool) *aggregate.Series {
		srcs := []replay.Source{replay.NewSliceSource("flows", slices.Clone(recs))}
		if withBGP {
			bgp, err := replay.RenderSpec(spec)
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(bgp, srcs...)
		}
		p, err := pipeline.New(pipeline.Config{Map: spec.Map(), LocalASNs: spec.LocalASNs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := replay.Run(p, srcs, nil); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); len(st.DecodeErrors) != 0 {
			t.Fatalf("decode errors %v", st.DecodeErrors)
		}
		return p.Aggregator().Series(aggregate.Key{Signal: obs.TrafficBytes, Entity: "asn:5089"})
	}
	if s := run(false); s != nil {
		t.Fatal("AS-less flows attributed without a routing table")
	}
	s := run(true)
	if s == nil {
		t.Fatal("AS-less flows not attributed through the routing table")
	}
	// The table answers once its peers count as full-feed, at the first
	// bucket close (00:06, one allowed lateness after the bucket's end):
	// from then on every record is attributed, except while the prefix is
	// withdrawn. Routing updates reach the table as the bucket they fall in
	// closes, so flows see the withdrawal (and the return) from the bucket
	// after it. Values are read back from the history, within its ±2 %.
	t0 := spec.Start.UnixNano()
	const w = int64(300e9)
	for b := int64(1); b < 47; b++ {
		v, ok := s.Hist.Get(t0 + b*w)
		want := 5000.0
		switch {
		case b == 1:
			want = 4000 // 00:06:30 to 00:09:30
		case b == 25:
			// The withdrawal reaches the table when bucket 24 closes, one
			// allowed lateness after its end: the 02:05:30 record still
			// went to AS5089.
			want = 1000
		case b == 37:
			// Likewise the return: the 03:05:30 record found no route.
			want = 4000
		case b > 25 && b < 37:
			// Attributed to nobody: the flows feed then observed nothing
			// at all, so the bucket reads no data rather than zero.
			if ok {
				t.Fatalf("bucket %d (withdrawn): %v bytes attributed", b, v)
			}
			continue
		}
		if !ok || v < want*0.98 || v > want*1.02 {
			t.Fatalf("bucket %d: %v bytes (held %v), want %v", b, v, ok, want)
		}
	}
	if _, ok := s.Hist.Get(t0); ok {
		t.Fatal("bucket 0 attributed before the table had a full-feed peer")
	}
}
