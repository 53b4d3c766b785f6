package quality

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
	qm "github.com/outagewatch/outagewatch/obs/quality"
)

const sample = `{"time": "2025-04-28T10:35:00Z", "probe": "lis01-p3", "site": "lis01", "src_asn": 3243, "country": "PT",
 "dst": "198.51.100.7", "dst_asn": 15169, "transit_asn": 1299, "rtt_ms": [21.9, 22.4], "sent": 10, "rcvd": 9,
 "bandwidth_mbps": 83.2}`

const sampleTime = 1745836500 * int64(1e9) // 2025-04-28T10:35:00Z

func decodeAll(t *testing.T, d ingest.Decoder, in string) obs.Slice {
	t.Helper()
	var out obs.Slice
	if err := d.Decode([]byte(in), &out); err != nil {
		t.Fatalf("Decode(%s): %v", in, err)
	}
	return out
}

func TestDecodeMeasurement(t *testing.T) {
	d := NewDecoder(nil)
	got := decodeAll(t, d, sample)
	var want obs.Slice
	add := func(sig obs.Signal, ent string, v float64, hash uint64) {
		want = append(want, obs.Observation{Time: sampleTime, Signal: sig, Entity: ent, Value: v, Hash: hash})
	}
	ents := []string{"asn:3243", "country:PT", "transit:1299@lis01"}
	for _, e := range ents {
		for _, sig := range []obs.Signal{qm.LatencyP50, qm.LatencyP95} {
			add(sig, e, 21.9, 0)
			add(sig, e, 22.4, 0)
		}
	}
	for _, e := range ents {
		add(qm.BandwidthP50, e, 83.2, 0)
	}
	for _, e := range append(ents, "path:1299@lis01>198.51.100.0/24") {
		add(qm.PacketLoss, e, 0.1, 10)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("observations:\n got %v\nwant %v", got, want)
	}
	if s := d.Stats(); s != (Stats{Measurements: 1, Observations: 19}) {
		t.Fatalf("stats %+v", s)
	}

	var m Measurement
	if err := d.Parse([]byte(sample), &m); err != nil {
		t.Fatal(err)
	}
	wantM := Measurement{Time: sampleTime, Probe: "lis01-p3", Site: "lis01", SrcASN: 3243, Country: "PT",
		Dst: netip.MustParseAddr("198.51.100.7"), DstASN: 15169, TransitASN: 1299, RTTms: []float64{21.9, 22.4},
		Sent: 10, Rcvd: 9, BandwidthMbps: 83.2, HasBandwidth: true}
	if !equalMeasurement(&m, &wantM) {
		t.Fatalf("Parse = %+v\nwant %+v", m, wantM)
	}
}

func equalMeasurement(a, b *Measurement) bool {
	type scalars struct {
		Time                       int64
		Probe, Site, Country       string
		Src, Dst                   netip.Addr
		SrcASN, DstASN, TransitASN uint32
		Sent, Rcvd                 uint32
		BandwidthMbps              float64
		HasBandwidth               bool
	}
	s := func(m *Measurement) scalars {
		return scalars{m.Time, m.Probe, m.Site, m.Country, m.Src, m.Dst, m.SrcASN, m.DstASN, m.TransitASN,
			m.Sent, m.Rcvd, m.BandwidthMbps, m.HasBandwidth}
	}
	return s(a) == s(b) && slices.Equal(a.RTTms, b.RTTms)
}

func TestDecodeVariants(t *testing.T) {
	nm := netmap.New()
	nm.Origins.Insert(netip.MustParsePrefix("203.0.113.0/24"), 64500)
	nm.Origins.Insert(netip.MustParsePrefix("2001:db8::/32"), 64501)
	nm.Countries[64500] = "es"
	cases := []struct {
		name, in string
		want     []obs.Observation
	}{
		{"unix seconds, one rtt, netmap source",
			`{"time": 1745836500, "src": "203.0.113.9", "rtt_ms": 22.1}`,
			[]obs.Observation{
				{Time: sampleTime, Signal: qm.LatencyP50, Entity: "asn:64500", Value: 22.1},
				{Time: sampleTime, Signal: qm.LatencyP95, Entity: "asn:64500", Value: 22.1},
				{Time: sampleTime, Signal: qm.LatencyP50, Entity: "country:ES", Value: 22.1},
				{Time: sampleTime, Signal: qm.LatencyP95, Entity: "country:ES", Value: 22.1},
			}},
		{"fractional seconds, offset, IPv6 source without country, loss only",
			`{"time": "2025-04-28T12:35:00.25+02:00", "src": "2001:db8::1", "sent": 4, "rcvd": 1}`,
			[]obs.Observation{{Time: sampleTime + 25e7, Signal: qm.PacketLoss, Entity: "asn:64501", Value: 0.75, Hash: 4}}},
		{"unix fraction, src_asn wins over src, transit without site, path by dst_asn",
			`{"time": 1745836500.5, "src": "203.0.113.9", "src_asn": 3243, "transit_asn": 174, "dst_asn": 15169, "sent": 2, "rcvd": 2}`,
			[]obs.Observation{
				{Time: sampleTime + 5e8, Signal: qm.PacketLoss, Entity: "asn:3243", Value: 0, Hash: 2},
				{Time: sampleTime + 5e8, Signal: qm.PacketLoss, Entity: "transit:174", Value: 0, Hash: 2},
				{Time: sampleTime + 5e8, Signal: qm.PacketLoss, Entity: "path:174>as15169", Value: 0, Hash: 2},
			}},
		{"IPv6 destination, nulls, unknown nested fields, escaped probe, zero bandwidth",
			`{"time":"2025-04-28T10:35:00Z","probe":"p\u00e9\n","extra":{"a":[1,{"b":null}],"c":"\""},"src_asn":null,
			  "country":"pt","site":"lis01","transit_asn":1299,"dst":"2001:db8:7:1::9","sent":1,"rcvd":0,"bandwidth_mbps":0}`,
			[]obs.Observation{
				{Time: sampleTime, Signal: qm.BandwidthP50, Entity: "country:PT", Value: 0},
				{Time: sampleTime, Signal: qm.BandwidthP50, Entity: "transit:1299@lis01", Value: 0},
				{Time: sampleTime, Signal: qm.PacketLoss, Entity: "country:PT", Value: 1, Hash: 1},
				{Time: sampleTime, Signal: qm.PacketLoss, Entity: "transit:1299@lis01", Value: 1, Hash: 1},
				{Time: sampleTime, Signal: qm.PacketLoss, Entity: "path:1299@lis01>2001:db8:7::/48", Value: 1, Hash: 1},
			}},
	}
	for _, c := range cases {
		d := NewDecoder(nm)
		got := decodeAll(t, d, c.in)
		if !slices.Equal(got, obs.Slice(c.want)) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
		}
	}
	var m Measurement
	if err := NewDecoder(nil).Parse([]byte(cases[3].in), &m); err != nil || m.Probe != "pé\n" {
		t.Fatalf("escaped probe = %q, %v", m.Probe, err)
	}
}

func TestUnattributed(t *testing.T) {
	d := NewDecoder(netmap.New())
	out := decodeAll(t, d, `{"time": 1745836500, "src": "192.0.2.1", "rtt_ms": [5]}`)
	if len(out) != 0 || d.Stats() != (Stats{Measurements: 1, Unattributed: 1}) {
		t.Fatalf("out %v stats %+v", out, d.Stats())
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ in, reason string }{
		{``, "json"},
		{`[]`, "json"},
		{`{"time": 1745836500, "rtt_ms": 1`, "json"},
		{`{"time": 1745836500, "rtt_ms": 1} x`, "json"},
		{`{"time": 1745836500 "rtt_ms": 1}`, "json"},
		{`{"time": 1745836500, "rtt_ms": 01}`, "json"},
		{`{"time": 1745836500, "rtt_ms": [1,]}`, "json"},
		{`{"time": 1745836500, "rtt_ms": 1, "x": "a` + "\x01" + `"}`, "json"},
		{`{"time": 1745836500, "rtt_ms": 1, "x": tru}`, "json"},
		{`{"time": 1745836500, "rtt_ms": 1, "x": "a\x41"}`, "json"},
		{`{"time": 1745836500, "rtt_ms": 1, "x": "a\u12"}`, "json"},
		{`{"time": 1745836500, "rtt_ms": 1, "x": "a\n` + "\x01" + `"}`, "json"},
		{`{"time": 1745836500, "rtt_ms": 1, "x": "a\n`, "json"},
		{`{"time": 1745836500, "rtt_ms": 1, "x": ` + deep(40) + `}`, "json"},
		{`{"rtt_ms": 1}`, "missing_field"},
		{`{"time": null, "rtt_ms": 1}`, "missing_field"},
		{`{"time": 1745836500}`, "no_measurement"},
		{`{"time": 1745836500, "rtt_ms": []}`, "no_measurement"},
		{`{"time": 1745836500, "sent": 3}`, "missing_field"},
		{`{"time": 1745836500, "sent": 3, "rcvd": 4}`, "value_range"},
		{`{"time": 1745836500, "rtt_ms": -1}`, "value_range"},
		{`{"time": 1745836500, "rtt_ms": 1e999}`, "value_range"},
		{`{"time": 1745836500, "bandwidth_mbps": -2}`, "value_range"},
		{`{"time": 1745836500, "rtt_ms": "fast"}`, "field_type"},
		{`{"time": 1745836500, "rtt_ms": 1, "src_asn": 1.5}`, "field_type"},
		{`{"time": 1745836500, "rtt_ms": 1, "src_asn": 4294967296}`, "value_range"},
		{`{"time": 1745836500, "rtt_ms": 1, "sent": -1, "rcvd": 0}`, "field_type"},
		{`{"time": 1745836500000, "rtt_ms": 1}`, "time"},
		{`{"time": -5, "rtt_ms": 1}`, "time"},
		{`{"time": "2025-02-30T00:00:00Z", "rtt_ms": 1}`, "time"},
		{`{"time": "2025-04-28 10:35:00", "rtt_ms": 1}`, "time"},
		{`{"time": "2025-04-28T10:35:00", "rtt_ms": 1}`, "time"},
		{`{"time": true, "rtt_ms": 1}`, "field_type"},
		{`{"time": 1745836500, "rtt_ms": 1, "site": "lis>01"}`, "site"},
		{`{"time": 1745836500, "rtt_ms": 1, "country": "PRT"}`, "country"},
		{`{"time": 1745836500, "rtt_ms": 1, "dst": "198.51.100"}`, "address"},
		{`{"time": 1745836500, "rtt_ms": 1, "probe": "` + "\xff" + `"}`, "utf8"},
	}
	d := NewDecoder(nil)
	for _, c := range cases {
		var out obs.Slice
		err := d.Decode([]byte(c.in), &out)
		var ie *ingest.Error
		if !errors.As(err, &ie) || ie.Reason != c.reason {
			t.Errorf("Decode(%.80s) = %v, want reason %q", c.in, err, c.reason)
		}
		if len(out) != 0 {
			t.Errorf("Decode(%.80s) emitted %d observations with an error", c.in, len(out))
		}
	}
}

func deep(n int) string {
	return string(bytes.Repeat([]byte("["), n)) + string(bytes.Repeat([]byte("]"), n))
}

// atlasMap attributes the probes of testdata/ping-results.jsonl. The
// assignments are this test's own, chosen to group the probes by network;
// they are not an authoritative registry.
func atlasMap() *netmap.Map {
	nm := netmap.New()
	for p, asn := range map[string]uint32{
		"80.56.0.0/13": 33915, "62.195.0.0/16": 33915, "188.192.0.0/13": 20825, "109.190.0.0/16": 16276,
	} {
		nm.Origins.Insert(netip.MustParsePrefix(p), asn)
	}
	nm.Countries[33915], nm.Countries[20825], nm.Countries[16276] = "NL", "DE", "FR"
	return nm
}

func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestAtlasRecordedResults(t *testing.T) {
	lines := readLines(t, "testdata/ping-results.jsonl")
	if len(lines) != 8 {
		t.Fatalf("%d lines, want 8", len(lines))
	}
	d := NewAtlasDecoder(atlasMap())
	var all obs.Slice
	per := make([]obs.Slice, len(lines))
	for i, l := range lines {
		if err := d.Decode(l, &per[i]); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		all = append(all, per[i]...)
	}
	// Line 1: three packets sent, two timeouts ({"x":"*"}), one answer.
	t1 := int64(1378271710) * 1e9
	want1 := obs.Slice{
		{Time: t1, Signal: qm.LatencyP50, Entity: "asn:33915", Value: 27.300999999999998},
		{Time: t1, Signal: qm.LatencyP95, Entity: "asn:33915", Value: 27.300999999999998},
		{Time: t1, Signal: qm.LatencyP50, Entity: "country:NL", Value: 27.300999999999998},
		{Time: t1, Signal: qm.LatencyP95, Entity: "country:NL", Value: 27.300999999999998},
		{Time: t1, Signal: qm.LatencyP50, Entity: "probe:202>62.2.16.0/24", Value: 27.300999999999998},
		{Time: t1, Signal: qm.LatencyP95, Entity: "probe:202>62.2.16.0/24", Value: 27.300999999999998},
		{Time: t1, Signal: qm.LatencyMin, Entity: "probe:202>62.2.16.0/24", Value: 27.300999999999998},
		{Time: t1, Signal: qm.PacketLoss, Entity: "asn:33915", Value: 2.0 / 3, Hash: 3},
		{Time: t1, Signal: qm.PacketLoss, Entity: "country:NL", Value: 2.0 / 3, Hash: 3},
		{Time: t1, Signal: qm.PacketLoss, Entity: "probe:202>62.2.16.0/24", Value: 2.0 / 3, Hash: 3},
	}
	if !slices.Equal(per[0], want1) {
		t.Errorf("line 1:\n got %v\nwant %v", per[0], want1)
	}
	// Line 7: one packet sent, none answered; the two RTTs are duplicate
	// replies and must not count as latency.
	t7 := int64(1394745831) * 1e9
	want7 := obs.Slice{
		{Time: t7, Signal: qm.PacketLoss, Entity: "asn:33915", Value: 1, Hash: 1},
		{Time: t7, Signal: qm.PacketLoss, Entity: "country:NL", Value: 1, Hash: 1},
		{Time: t7, Signal: qm.PacketLoss, Entity: "probe:202>62.2.16.0/24", Value: 1, Hash: 1},
	}
	if !slices.Equal(per[6], want7) {
		t.Errorf("line 7:\n got %v\nwant %v", per[6], want7)
	}
	// Per entity, the RTT samples in file order and the bucket results.
	rtts := map[string][]float64{}
	accs := map[[2]string]obs.Accumulator{}
	for i := range all {
		o := &all[i]
		if o.Signal == qm.LatencyP50 {
			rtts[o.Entity] = append(rtts[o.Entity], o.Value)
		}
		k := [2]string{o.Signal.String(), o.Entity}
		if accs[k] == nil {
			accs[k] = o.Signal.Def().NewAccumulator()
		}
		accs[k].Add(o)
	}
	wantRTT := map[string][]float64{
		"asn:33915": {27.300999999999998, 40.234000000000002, 34.747999999999998, 35.679000000000002,
			36.741, 36.659999999999997, 36.423999999999999},
		"asn:20825": {45.939, 48.927, 48.990000000000002, 63.213000000000001, 47.941000000000003,
			60.268000000000001, 70.265, 54.584, 52.875},
		"asn:16276": {27.768000000000001},
	}
	for e, w := range wantRTT {
		if !slices.Equal(rtts[e], w) {
			t.Errorf("%s RTTs %v, want %v", e, rtts[e], w)
		}
	}
	// Each probe's own series: probe 202 towards 62.2.16.12 and .24 is one
	// series (destinations are taken by /24), the same samples as its AS
	// 33915 here, since it is the only probe of that network.
	if !slices.Equal(rtts["probe:202>62.2.16.0/24"], wantRTT["asn:33915"]) {
		t.Errorf("probe 202 RTTs %v, want %v", rtts["probe:202>62.2.16.0/24"], wantRTT["asn:33915"])
	}
	if len(all) != 143 {
		t.Errorf("%d observations, want 143 (17 RTTs × 3 entities × 2 signals + 17 probe minima + 8 results × 3 loss)", len(all))
	}
	result := func(sig, ent string) (float64, int64) { return accs[[2]string{sig, ent}].Result() }
	for _, c := range []struct {
		sig, ent string
		v        float64
		n        int64
	}{
		{"packet_loss", "asn:33915", 0.3, 10}, // lost 2+0+0+1 of 3+3+3+1
		{"packet_loss", "country:NL", 0.3, 10},
		{"packet_loss", "asn:20825", 0, 9},
		{"packet_loss", "asn:16276", 0.5, 2}, // line 6: sent 2, rcvd 1
		{"latency_p50", "asn:16276", 27.768000000000001, 1},
		{"latency_p95", "country:FR", 27.768000000000001, 1},
		// A probe's lowest RTT, and none for a network or a country.
		{"latency_min", "probe:202>62.2.16.0/24", 27.300999999999998, 7},
	} {
		if v, n := result(c.sig, c.ent); v != c.v || n != c.n {
			t.Errorf("%s %s = %v (n=%d), want %v (n=%d)", c.sig, c.ent, v, n, c.v, c.n)
		}
	}
	// Seven NL samples: the exact median is 36.424, and the sketch keeps
	// it to within 1 %.
	if v, n := result("latency_p50", "country:NL"); n != 7 || math.Abs(v-36.424) > 0.36424 {
		t.Errorf("NL median %v (n=%d), want 36.424 ± 1 %% from 7 samples", v, n)
	}
	if accs[[2]string{"latency_min", "asn:33915"}] != nil || accs[[2]string{"latency_min", "country:NL"}] != nil {
		t.Error("a lowest RTT for a network or a country, which has no single path")
	}
	if s := d.Stats(); s != (Stats{Measurements: 8, Observations: 143}) {
		t.Errorf("stats %+v", s)
	}
}

func TestAtlasEdgeCases(t *testing.T) {
	nm := atlasMap()
	cases := []struct {
		name, in string
		want     obs.Slice
		empty    bool
	}{
		{"no sent/rcvd: counted from result; src_addr when no from; boolean dup",
			`{"type":"ping","af":4,"timestamp":1378271710,"src_addr":"80.56.1.1",
			  "result":[{"x":"*"},{"rtt":10},{"rtt":11,"dup":true},{"error":"sendto failed"},{"rtt":12,"dup":0}]}`,
			obs.Slice{
				{Time: 1378271710e9, Signal: qm.LatencyP50, Entity: "asn:33915", Value: 10},
				{Time: 1378271710e9, Signal: qm.LatencyP50, Entity: "asn:33915", Value: 12},
				{Time: 1378271710e9, Signal: qm.LatencyP95, Entity: "asn:33915", Value: 10},
				{Time: 1378271710e9, Signal: qm.LatencyP95, Entity: "asn:33915", Value: 12},
				{Time: 1378271710e9, Signal: qm.LatencyP50, Entity: "country:NL", Value: 10},
				{Time: 1378271710e9, Signal: qm.LatencyP50, Entity: "country:NL", Value: 12},
				{Time: 1378271710e9, Signal: qm.LatencyP95, Entity: "country:NL", Value: 10},
				{Time: 1378271710e9, Signal: qm.LatencyP95, Entity: "country:NL", Value: 12},
				{Time: 1378271710e9, Signal: qm.PacketLoss, Entity: "asn:33915", Value: 1.0 / 3, Hash: 3},
				{Time: 1378271710e9, Signal: qm.PacketLoss, Entity: "country:NL", Value: 1.0 / 3, Hash: 3},
			}, false},
		{"nothing sent", `{"type":"ping","timestamp":1378271710,"from":"80.56.1.1","sent":0,"rcvd":0,"result":[{"error":"dns resolution failed"}]}`,
			nil, true},
		// RIPE Atlas writes "from": "" for a probe without a public
		// address in the family measured: the result still counts for the
		// probe's own series, and for no network.
		{"from empty: the probe's own series", `{"type":"ping","af":6,"prb_id":82,"timestamp":1378271710,"from":"","src_addr":"",
			  "dst_addr":"2001:6b0:e:3::1","sent":2,"rcvd":1,"result":[{"rtt":30.5},{"x":"*"}]}`,
			obs.Slice{
				{Time: 1378271710e9, Signal: qm.LatencyP50, Entity: "probe:82>2001:6b0:e::/48", Value: 30.5},
				{Time: 1378271710e9, Signal: qm.LatencyP95, Entity: "probe:82>2001:6b0:e::/48", Value: 30.5},
				{Time: 1378271710e9, Signal: qm.LatencyMin, Entity: "probe:82>2001:6b0:e::/48", Value: 30.5},
				{Time: 1378271710e9, Signal: qm.PacketLoss, Entity: "probe:82>2001:6b0:e::/48", Value: 0.5, Hash: 2},
			}, false},
	}
	for _, c := range cases {
		d := NewAtlasDecoder(nm)
		var out obs.Slice
		if err := d.Decode([]byte(c.in), &out); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(out, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, out, c.want)
		}
		if (d.Stats().Empty == 1) != c.empty {
			t.Errorf("%s: stats %+v", c.name, d.Stats())
		}
	}
	errs := []struct{ in, reason string }{
		{`{"type":"sslcert","timestamp":1378271710,"sent":1,"rcvd":1}`, "type"},
		{`{"type":"ping","af":5,"timestamp":1378271710,"sent":1,"rcvd":1}`, "value_range"},
		{`{"type":"ping","from":"80.56.1.1","sent":1,"rcvd":1}`, "missing_field"},
		{`{"timestamp":1378271710,"sent":1}`, "missing_field"},
		{`{"timestamp":1378271710,"sent":1,"rcvd":2}`, "value_range"},
		{`{"timestamp":1378271710,"result":[{"rtt":-1}]}`, "value_range"},
		{`{"timestamp":1378271710,"result":[{"rtt":"1"}]}`, "field_type"},
		{`{"timestamp":1378271710,"result":["*"]}`, "field_type"},
		{`{"timestamp":1378271710,"result":{"rtt":1}}`, "field_type"},
		{`{"timestamp":1378271710,"result":[{"rtt":1}`, "json"},
		{`{"timestamp":1378271710,"from":"not-an-ip","sent":1,"rcvd":1}`, "address"},
	}
	d := NewAtlasDecoder(nm)
	for _, c := range errs {
		var out obs.Slice
		err := d.Decode([]byte(c.in), &out)
		if ingest.Reason(err) != c.reason || len(out) != 0 {
			t.Errorf("Decode(%.80s) = %v (%d obs), want reason %q", c.in, err, len(out), c.reason)
		}
	}
}

func TestAppendJSONRoundTrip(t *testing.T) {
	ms := []Measurement{
		{Time: sampleTime + 123456789, Probe: "lis01-p3 \"quoted\" \\ \x01 é", Site: "lis01",
			Src: netip.MustParseAddr("203.0.113.9"), SrcASN: 3243, Country: "PT",
			Dst: netip.MustParseAddr("2001:db8::7"), DstASN: 15169, TransitASN: 1299,
			RTTms: []float64{21.9, 1e-7, 22.4, 123456.789}, Sent: 10, Rcvd: 9, BandwidthMbps: 83.2, HasBandwidth: true},
		{Time: 1e9, RTTms: []float64{0}},
		{Time: sampleTime, Sent: 5, Rcvd: 0},
		{Time: sampleTime, BandwidthMbps: 0, HasBandwidth: true},
	}
	d := NewDecoder(nil)
	for i := range ms {
		b := AppendJSON(nil, &ms[i])
		var back Measurement
		if err := d.Parse(b, &back); err != nil {
			t.Fatalf("%d: Parse(%s): %v", i, b, err)
		}
		if !equalMeasurement(&back, &ms[i]) {
			t.Errorf("%d: %s\n got %+v\nwant %+v", i, b, back, ms[i])
		}
	}
	if got := string(AppendJSON(nil, &ms[1])); got != `{"time":"1970-01-01T00:00:01Z","rtt_ms":0}` {
		t.Errorf("AppendJSON = %s", got)
	}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = AppendJSON(buf[:0], &ms[0]) }); n != 0 {
		t.Errorf("AppendJSON allocates %v times", n)
	}
}

// The decoder's cached names are the ones obs/quality's qm.PathEntity builds.
func TestCachedPathEntity(t *testing.T) {
	ents := newEntities()
	s := ents.siteNamed("lis01")
	if got := s.pathEntity(1299, netip.MustParseAddr("198.51.100.7"), 0); got != qm.PathEntity(1299, "lis01", "198.51.100.7") {
		t.Errorf("cached path %q", got)
	}
	if got := s.pathEntity(1299, netip.Addr{}, 15169); got != qm.PathEntity(1299, "lis01", "as15169") {
		t.Errorf("cached path %q", got)
	}
}

func TestDecodeDoesNotAllocateWhenWarm(t *testing.T) {
	d := NewDecoder(nil)
	in := []byte(sample)
	var sink obs.SinkFunc = func(*obs.Observation) {}
	if err := d.Decode(in, sink); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = d.Decode(in, sink) }); n != 0 {
		t.Fatalf("warm Decode allocates %v times", n)
	}
	a := NewAtlasDecoder(atlasMap())
	lines := readLines(t, "testdata/ping-results.jsonl")
	for _, l := range lines {
		_ = a.Decode(l, sink)
	}
	if n := testing.AllocsPerRun(100, func() { _ = a.Decode(lines[1], sink) }); n != 0 {
		t.Fatalf("warm Atlas Decode allocates %v times", n)
	}
}

func TestRFC3339AgainstTime(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for range 20000 {
		want := time.Unix(r.Int64N(9e9), r.Int64N(1e9)).UTC()
		b := want.AppendFormat(nil, time.RFC3339Nano)
		got, err := parseRFC3339(b)
		if err != nil || got != want.UnixNano() {
			t.Fatalf("parseRFC3339(%s) = %d, %v; want %d", b, got, err, want.UnixNano())
		}
		zoned := want.In(time.FixedZone("", -(r.IntN(24*60)-12*60)*60)).AppendFormat(nil, time.RFC3339Nano)
		if got, err := parseRFC3339(zoned); err != nil || got != want.UnixNano() {
			t.Fatalf("parseRFC3339(%s) = %d, %v; want %d", zoned, got, err, want.UnixNano())
		}
	}
	for in, ok := range map[string]bool{
		"2024-02-29T00:00:00Z": true, "2023-02-29T00:00:00Z": false, "2100-02-29T00:00:00Z": false,
		"2000-02-29T00:00:00Z": true, "2025-04-31T00:00:00Z": false, "2025-12-31T23:59:59.999999999999Z": true,
		"2025-04-28T24:00:00Z": false, "2025-04-28T10:35:00.Z": false, "2025-04-28T10:35:00+0200": false,
		"1969-12-31T23:59:59Z": false, "2025-04-28t10:35:00z": true,
	} {
		if _, err := parseRFC3339([]byte(in)); (err == nil) != ok {
			t.Errorf("parseRFC3339(%s): err %v, want ok=%v", in, err, ok)
		}
	}
}

func TestExactFloatMatchesStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	check := func(tok string) {
		t.Helper()
		want, err := strconv.ParseFloat(tok, 64)
		if err != nil {
			t.Fatalf("%s: %v", tok, err)
		}
		if got, ok := exactFloat([]byte(tok)); ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("exactFloat(%s) = %v, strconv says %v", tok, got, want)
		}
	}
	for _, tok := range []string{"0", "-0", "0.1", "22.4", "27.300999999999998", "123456789012345", "0.000000000000000000001",
		"1234567890123456", "1e5", "-0.0", "999999999999999.9"} {
		check(tok)
	}
	for range 200_000 {
		mant := r.Uint64N(1 << 50)
		s := strconv.FormatUint(mant, 10)
		if k := r.IntN(len(s) + 3); k > 0 {
			for len(s) < k+1 {
				s = "0" + s
			}
			s = s[:len(s)-k] + "." + s[len(s)-k:]
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		check(s)
	}
}

func TestFractionalUnixSecondsAreExact(t *testing.T) {
	d := NewDecoder(nil)
	for in, want := range map[string]int64{
		`{"time": 1745836500.123456789, "rtt_ms": 1}`:     sampleTime + 123456789,
		`{"time": 1745836500.25, "rtt_ms": 1}`:            sampleTime + 250000000,
		`{"time": 1745836500.1234567891234, "rtt_ms": 1}`: sampleTime + 123456789,
		`{"time": 1.7458365e9, "rtt_ms": 1}`:              sampleTime,
	} {
		var m Measurement
		if err := d.Parse([]byte(in), &m); err != nil || m.Time != want {
			t.Errorf("%s: time %d, %v; want %d", in, m.Time, err, want)
		}
	}
}

// A traceroute result is read for the series a ping towards its
// destination makes: its last hop's packets, those the destination
// answered with their RTT, the rest lost, wherever dst_addr and type stand
// in the object; a last hop that is not the destination is all loss, and
// a hop with no packets leaves the one before as the last.
func TestAtlasTracerouteAsPing(t *testing.T) {
	const head = `{"fw":4790,"lts":12,"timestamp":1480000000,"prb_id":202,"msm_id":5001,"from":"80.56.151.3","af":4,"proto":"ICMP",`
	hop1 := `{"hop":1,"result":[{"from":"192.168.1.1","ttl":64,"size":76,"rtt":1.2},{"from":"192.168.1.1","ttl":64,"size":76,"rtt":1.1},{"x":"*"}]}`
	for _, c := range []struct{ name, traceroute, ping string }{
		{"reached",
			head + `"result":[` + hop1 + `,{"hop":2,"result":[{"from":"62.2.16.12","ttl":56,"rtt":30.25},{"x":"*"},{"from":"62.2.16.12","ttl":56,"rtt":29.5},{"from":"62.2.16.12","rtt":29.9,"dup":1}]},{"hop":3}],"dst_addr":"62.2.16.12","type":"traceroute"}`,
			head + `"type":"ping","dst_addr":"62.2.16.12","sent":3,"rcvd":2,"result":[{"rtt":30.25},{"x":"*"},{"rtt":29.5}]}`},
		{"not reached",
			head + `"type":"traceroute","dst_addr":"62.2.16.12","result":[` + hop1 + `,{"hop":2,"result":[{"from":"10.0.0.1","rtt":9},{"from":"10.0.0.1","rtt":9.1},{"x":"*"}]},{"hop":255,"result":[]}]}`,
			head + `"type":"ping","dst_addr":"62.2.16.12","sent":3,"rcvd":0,"result":[{"x":"*"},{"x":"*"},{"x":"*"}]}`},
		{"last hop timed out",
			head + `"type":"traceroute","dst_addr":"62.2.16.12","result":[` + hop1 + `,{"hop":255,"result":[{"x":"*"},{"x":"*"},{"x":"*"}]}]}`,
			head + `"type":"ping","dst_addr":"62.2.16.12","sent":3,"rcvd":0,"result":[{"x":"*"},{"x":"*"},{"x":"*"}]}`},
	} {
		var got, want obs.Slice
		if err := NewAtlasDecoder(atlasMap()).Decode([]byte(c.traceroute), &got); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := NewAtlasDecoder(atlasMap()).Decode([]byte(c.ping), &want); err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v (the ping)", c.name, got, want)
		}
	}
}
