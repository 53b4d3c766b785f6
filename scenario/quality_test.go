package scenario

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/quality"
	"github.com/outagewatch/outagewatch/obs"
)

const qualitySpec = `
name: q
start: 2024-10-07T00:00:00Z
end: 2024-10-08T00:00:00Z
seed: 7
quality:
  start: 2024-10-07T06:00:00Z
  probes:
    - {country: gb, utc_offset: 1, networks: [2856, 5089], rtt_ms: 15, jitter_ms: 1, bandwidth_mbps: 80, evening: {rtt: 0.5, bandwidth: 0.4}, measurements: 3, pings: 4}
  transits:
    - {asn: 1299, sites: [ams01, lon01], destinations: 10, sent: 20}
    - {asn: 174, sites: [ams01], destinations: 4, sent: 10}
  episodes:
    - {name: loss, start: 2024-10-07T12:10:00Z, end: 2024-10-07T12:30:00Z, targets: ["transit:1299"], loss: 1, destinations: 0.65}
    - {name: slow, start: 2024-10-07T08:00:00Z, end: 2024-10-07T09:00:00Z, targets: ["asn:5089"], rtt_factor: 3}
`

func renderQuality(t *testing.T, doc string) []*ingest.Record {
	t.Helper()
	s, err := Parse("q.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.Renderers()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Stream() != quality.Stream {
		t.Fatalf("renderers %v", rs)
	}
	var out []*ingest.Record
	if err := rs[0].Render(s, func(r *ingest.Record) { out = append(out, r) }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestQualityRender(t *testing.T) {
	recs := renderQuality(t, qualitySpec)
	// 18 hours of 5-minute intervals; per interval 2 networks × 3
	// measurements and 2×10 + 4 paths.
	const intervals = 18 * 12
	if len(recs) != intervals*(6+24) {
		t.Fatalf("%d records, want %d", len(recs), intervals*30)
	}
	again := renderQuality(t, qualitySpec)
	for i := range recs {
		if recs[i].Time != again[i].Time || !bytes.Equal(recs[i].Value, again[i].Value) {
			t.Fatalf("record %d differs between renders", i)
		}
	}
	dec := quality.NewDecoder(nil)
	var m quality.Measurement
	from := time.Date(2024, 10, 7, 6, 0, 0, 0, time.UTC).UnixNano()
	lossyDest := map[string]map[string]bool{} // site → destinations with loss in the episode
	var slow, usual, evening, noon []float64
	var last int64
	for i, r := range recs {
		if r.Stream != quality.Stream || r.Format != quality.FormatJSON || r.Time < last || r.Time < from {
			t.Fatalf("record %d: %s/%s at %d after %d", i, r.Stream, r.Format, r.Time, last)
		}
		last = r.Time
		if err := dec.Parse(r.Value, &m); err != nil {
			t.Fatalf("record %d does not decode: %v\n%s", i, err, r.Value)
		}
		if m.Time != r.Time {
			t.Fatalf("record %d: time %d in record, %d in measurement", i, r.Time, m.Time)
		}
		at := time.Unix(0, m.Time).UTC()
		if m.TransitASN != 0 {
			in := !at.Before(time.Date(2024, 10, 7, 12, 10, 0, 0, time.UTC)) && at.Before(time.Date(2024, 10, 7, 12, 30, 0, 0, time.UTC))
			if m.Rcvd < m.Sent {
				if !in || m.TransitASN != 1299 {
					t.Fatalf("loss outside the episode: %s", r.Value)
				}
				if lossyDest[m.Site] == nil {
					lossyDest[m.Site] = map[string]bool{}
				}
				lossyDest[m.Site][m.Dst.String()] = true
			}
			continue
		}
		if m.Country != "GB" || len(m.RTTms) != 4 || !m.HasBandwidth {
			t.Fatalf("probe measurement %s", r.Value)
		}
		med := slices.Sorted(slices.Values(m.RTTms))[1]
		switch {
		case m.SrcASN == 5089 && at.Hour() == 8:
			slow = append(slow, med)
		case m.SrcASN == 5089 && at.Hour() == 7:
			usual = append(usual, med)
		}
		switch at.Hour() {
		case 20: // 21:00 local
			evening = append(evening, m.BandwidthMbps)
		case 11:
			noon = append(noon, m.BandwidthMbps)
		}
	}
	// Loss at 1.0 on ceil(0.65 × 10) = 7 destinations, the same at both sites.
	if len(lossyDest) != 2 || len(lossyDest["ams01"]) != 7 || !mapsEqual(lossyDest["ams01"], lossyDest["lon01"]) {
		t.Fatalf("lossy destinations %v", lossyDest)
	}
	if medianOf(slow) < 2.5*medianOf(usual) || medianOf(slow) > 3.5*medianOf(usual) {
		t.Fatalf("rtt_factor 3: median %.1f against %.1f", medianOf(slow), medianOf(usual))
	}
	// Evening bandwidth near 80 × (1 − 0.4 × peak), noon near 80.
	if e, n := medianOf(evening), medianOf(noon); e > 0.75*n || n < 70 || n > 90 {
		t.Fatalf("bandwidth evening %.1f noon %.1f", e, n)
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// The rendered measurements feed the entities the detectors read.
func TestQualityRenderEntities(t *testing.T) {
	recs := renderQuality(t, qualitySpec)
	dec := quality.NewDecoder(nil)
	seen := map[string]bool{}
	for _, r := range recs[:200] {
		if err := dec.Decode(r.Value, obs.SinkFunc(func(o *obs.Observation) { seen[o.Signal.String()+" "+o.Entity] = true })); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"latency_p50 country:GB", "latency_p95 asn:5089", "bandwidth_p50 asn:2856",
		"packet_loss path:1299@ams01>198.18.9.0/24", "packet_loss path:174@ams01>198.18.3.0/24", "packet_loss transit:1299@lon01"} {
		if !seen[k] {
			t.Errorf("no %s", k)
		}
	}
	if seen["packet_loss path:174@ams01>198.18.4.0/24"] || seen["packet_loss path:174@lon01>198.18.0.0/24"] {
		t.Error("paths beyond the transit's destinations or sites")
	}
}

func TestQualitySectionErrors(t *testing.T) {
	head := "name: q\nstart: 2024-10-07T00:00:00Z\nend: 2024-10-08T00:00:00Z\nquality:\n"
	for _, c := range []struct{ body, want string }{
		{"  transits: [{asn: 1299, sites: [ams01], destinations: 10, sent: 20, lost: 0.1}]", "field lost not found"},
		{"  transits: [{asn: 1299, sites: [\"a b\"], destinations: 10}]", `site "a b"`},
		{"  transits: [{asn: 1299, sites: [ams01], destinations: 600}]", "destinations: want 1 to 512"},
		{"  transits: [{asn: 0, sites: [ams01], destinations: 6}]", "no asn"},
		{"  probes: [{country: GBR, networks: [1], rtt_ms: 10}]", "two-letter"},
		{"  probes: [{country: GB, networks: [], rtt_ms: 10}]", "networks:"},
		{"  probes: [{country: GB, networks: [1], rtt_ms: 0}]", "rtt_ms > 0"},
		{"  probes: [{country: GB, networks: [1], rtt_ms: 10, evening: {bandwidth: 1}}]", "evening"},
		{"  interval: 10s\n  probes: [{country: GB, networks: [1], rtt_ms: 10}]", "interval:"},
		{"  episodes: []", "no probes and no transits"},
		{"  probes: [{country: GB, networks: [1], rtt_ms: 10}]\n  episodes: [{name: x, start: 2024-10-07T01:00:00Z, end: 2024-10-07T00:00:00Z, targets: [\"asn:1\"]}]", "want end after start"},
		{"  probes: [{country: GB, networks: [1], rtt_ms: 10}]\n  episodes: [{name: x, start: 2024-10-07T00:00:00Z, end: 2024-10-07T01:00:00Z, targets: [\"asn\"]}]", "kind:pattern"},
		{"  probes: [{country: GB, networks: [1], rtt_ms: 10}]\n  episodes: [{name: x, start: 2024-10-07T00:00:00Z, end: 2024-10-07T01:00:00Z, targets: [\"asn:1\"], loss: 2}]", "loss and destinations"},
	} {
		s, err := Parse("q.yaml", []byte(head+c.body+"\n"))
		if err == nil {
			_, err = s.Renderers()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v, want %q", c.body, err, c.want)
		}
	}
}

func BenchmarkQualityRender(b *testing.B) {
	s, err := Parse("q.yaml", []byte(qualitySpec))
	if err != nil {
		b.Fatal(err)
	}
	rs, _ := s.Renderers()
	var n int
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		n = 0
		if err := rs[0].Render(s, func(*ingest.Record) { n++ }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
