package detectors

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/obs/quality"
)

// qrun drives a detector from observations through the real aggregator.
type qrun struct {
	agg      *aggregate.Aggregator
	det      Detector
	findings []Finding
}

func newQRun(p Params) *qrun {
	return &qrun{agg: aggregate.New(aggregate.Config{}), det: p.Build("test")}
}

// bucket adds the observations of one bucket starting at t and closes it.
func (r *qrun) bucket(t int64, add func(t int64, o func(sig obs.Signal, e string, v float64, n int))) {
	add(t, func(sig obs.Signal, e string, v float64, n int) {
		for i := 0; i < n; i++ {
			r.agg.Observe(&obs.Observation{Time: t + 1 + int64(i), Signal: sig, Entity: e, Value: v})
		}
	})
	r.agg.Advance(t+w5, func(c *aggregate.Closed) {
		r.det.Bucket(c, c.Points, func(f Finding) { r.findings = append(r.findings, f) })
	})
}

// evening is a congestion bump: +8 ms (or −30 Mbit/s) from 20:00 to 22:00.
func evening(t int64) bool {
	h := (t % dayNs) / 3600e9
	return h >= 20 && h < 22
}

func TestLatencyAndBandwidthFireResolveAndFloors(t *testing.T) {
	onset := start + 4*dayNs + 10*3600e9 + 30*60e9 // day 5, 10:30
	over := start + 4*dayNs + 16*3600e9
	gapAt := onset + 4*w5
	shape := func(t int64, o func(obs.Signal, string, float64, int)) {
		in := t >= onset && t < over
		es, bw := 22.0, 100.0
		if evening(t) {
			es, bw = 30, 70
		}
		quiet, quietBW := 1.0, 3.0
		if in {
			es, bw, quiet, quietBW = 40, 60, 2, 1
		}
		if t != gapAt { // one bucket without data inside the incident
			o(quality.LatencyP50, "country:ES", es, 12)
			o(quality.BandwidthP50, "country:ES", bw, 12)
		}
		o(quality.LatencyP50, "asn:1", quiet, 12)     // +100 % but +1 ms
		o(quality.BandwidthP50, "asn:1", quietBW, 12) // −67 % but −2 Mbit/s
		if t >= over+dayNs/2 && t < over+dayNs/2+3*w5 {
			o(quality.LatencyP50, "asn:2", 90, 3) // too few samples to judge
		} else {
			o(quality.LatencyP50, "asn:2", 20, 12)
		}
	}
	lat := newQRun(DefaultLatency())
	bw := newQRun(DefaultBandwidth())
	for t := start; t < start+6*dayNs; t += w5 {
		lat.bucket(t, func(t int64, o func(obs.Signal, string, float64, int)) {
			shape(t, func(s obs.Signal, e string, v float64, n int) {
				if s == quality.LatencyP50 {
					o(s, e, v, n)
				}
			})
		})
		bw.bucket(t, func(t int64, o func(obs.Signal, string, float64, int)) {
			shape(t, func(s obs.Signal, e string, v float64, n int) {
				if s == quality.BandwidthP50 {
					o(s, e, v, n)
				}
			})
		})
	}
	// The baseline is the usual level as the history holds it (within
	// the ring's ±2 % quantisation).
	held := func(r *qrun, sig obs.Signal) float64 {
		v, ok := r.agg.Series(aggregate.Key{Signal: sig, Entity: "country:ES"}).Hist.Get(onset - dayNs)
		if !ok {
			t.Fatal("no history")
		}
		return v
	}
	b22, b100 := held(lat, quality.LatencyP50), held(bw, quality.BandwidthP50)
	if math.Abs(b22-22) > 0.45 || math.Abs(b100-100) > 2 {
		t.Fatalf("history holds %v and %v", b22, b100)
	}
	for _, c := range []struct {
		r         *qrun
		det       string
		obs, base float64
		detail    string
		delta     float64
	}{
		{lat, LatencyName, 40, b22, "delta_ms", 40 - b22},
		{bw, BandwidthName, 60, b100, "delta_mbps", b100 - 60},
	} {
		if len(c.r.findings) != 2 {
			t.Fatalf("%s: %d findings, want firing and resolved: %+v", c.det, len(c.r.findings), c.r.findings)
		}
		f, res := c.r.findings[0], c.r.findings[1]
		if f.Status != Firing || f.Detector != c.det || f.Entity != "country:ES" || f.Start != onset || f.At != onset+2*w5 ||
			f.Observed != c.obs || f.Baseline != round(c.base, 3) || f.ChangePct != changePct(c.obs, c.base) ||
			f.Details[c.detail] != round(c.delta, 2) || f.Details["samples"] != int64(12) ||
			f.BaselineMethod != "same_time_previous_days" {
			t.Errorf("%s firing: %+v", c.det, f)
		}
		// Resolved after 30 minutes of recovery; the missing bucket held.
		if res.Status != Resolved || res.Start != onset || res.End != over || res.At != over+6*w5 {
			t.Errorf("%s resolved: %+v", c.det, res)
		}
	}
	// The incident stayed out of the history: the next day's baseline at
	// the same time is the usual level.
	s := lat.agg.Series(aggregate.Key{Signal: quality.LatencyP50, Entity: "country:ES"})
	if v, ok := s.Hist.Get(onset + 6*w5); !ok || math.Abs(v-22) > 22*0.021 {
		t.Fatalf("history during the incident holds %v, want the baseline 22", v)
	}
}

func TestLatencyQuietBeforeMinDays(t *testing.T) {
	r := newQRun(DefaultLatency())
	for t := start; t < start+3*dayNs; t += w5 {
		r.bucket(t, func(t int64, o func(obs.Signal, string, float64, int)) {
			v := 20.0
			if t >= start+2*dayNs+12*3600e9 {
				v = 60 // a tripling on day 3: only two days of history
			}
			o(quality.LatencyP50, "country:FI", v, 12)
		})
	}
	if len(r.findings) != 0 {
		t.Fatalf("fired with two days of history: %+v", r.findings[0])
	}
}

func TestLatencyCheckpointRoundTrip(t *testing.T) {
	onset := start + 4*dayNs + 10*3600e9
	feed := func(r *qrun, from, to int64) {
		for t := from; t < to; t += w5 {
			r.bucket(t, func(t int64, o func(obs.Signal, string, float64, int)) {
				v := 22.0
				if t >= onset && t < onset+3600e9 {
					v = 40
				}
				o(quality.LatencyP50, "country:ES", v, 12)
			})
		}
	}
	whole := newQRun(DefaultLatency())
	feed(whole, start, onset+4*3600e9)
	if len(whole.findings) != 2 {
		t.Fatalf("%d findings", len(whole.findings))
	}
	half := newQRun(DefaultLatency())
	feed(half, start, onset+20*60e9) // firing, not resolved
	b, err := half.det.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	half.det = DefaultLatency().Build("test")
	if err := half.det.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	feed(half, onset+20*60e9, onset+4*3600e9)
	if !reflect.DeepEqual(half.findings, whole.findings) {
		t.Fatalf("restored run differs:\n%+v\n%+v", half.findings, whole.findings)
	}
	if err := half.det.UnmarshalBinary([]byte("junk")); err == nil || !strings.Contains(err.Error(), "latency test: restore") {
		t.Fatalf("junk restored: %v", err)
	}
}

func TestQualityShiftValidate(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want string
	}{
		{DefaultLatency(), ""},
		{DefaultBandwidth(), ""},
		{&Latency{Threshold: 0, MinDeltaMs: 5, MinSamples: 1, MinDays: 1, MaxDays: 7}, "threshold:"},
		{&Latency{Threshold: 0.3, MinDeltaMs: -1, MinSamples: 1, MinDays: 1, MaxDays: 7}, "min_delta_ms:"},
		{&Latency{Threshold: 0.3, ResolveBelow: 0.3, MinSamples: 1, MinDays: 1, MaxDays: 7}, "resolve_below:"},
		{&Latency{Threshold: 0.3, MinSamples: 0, MinDays: 1, MaxDays: 7}, "min_samples:"},
		{&Latency{Threshold: 0.3, MinSamples: 1, MinDays: 3, MaxDays: 2}, "max_days:"},
		{&Latency{Threshold: 0.3, MinSamples: 1, MinDays: 1, MaxDays: 14}, "max_days:"},
		{&Bandwidth{Threshold: 1, MinSamples: 1, MinDays: 1, MaxDays: 7}, "threshold:"},
		{&Bandwidth{Threshold: 0.3, MinDeltaMbps: math.Inf(1), MinSamples: 1, MinDays: 1, MaxDays: 7}, "min_delta_mbps:"},
		{&Bandwidth{Threshold: 0.3, MinSamples: 1, MinDays: 1, MaxDays: 7, For: -1}, "for,"},
	} {
		err := c.p.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}

// lossRun feeds packet-loss measurements: per bucket, loss ratio and packets
// per path entity.
func lossRun(p *PacketLoss, buckets []map[string][2]float64) *qrun {
	r := newQRun(p)
	for i, b := range buckets {
		t := start + int64(i)*w5
		for _, e := range sortedKeys(b) {
			v := b[e]
			r.agg.Observe(&obs.Observation{Time: t + 7, Signal: quality.PacketLoss, Entity: e, Value: v[0], Hash: uint64(v[1])})
		}
		r.agg.Advance(t+w5, func(c *aggregate.Closed) {
			r.det.Bucket(c, c.Points, func(f Finding) { r.findings = append(r.findings, f) })
		})
	}
	return r
}

func sortedKeys(m map[string][2]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

func dst(i int) string { return fmt.Sprintf("198.18.%d.0/24", i) }

// warm is the hour of clean buckets a transit needs before it is judged
// (lossState.usualBar), which telia's incident comes after.
const warm = 12

// telia builds the buckets of a transit incident: an hour clean (warm),
// then at bucket warm+2 four lossy buckets, one without measurements of
// AS1299, then clean.
func telia() []map[string][2]float64 {
	var out []map[string][2]float64
	for k := 0; k < warm+10; k++ {
		b := map[string][2]float64{}
		i := k - warm
		lossy := i >= 2 && i < 6
		for d := 1; d <= 20; d++ {
			b["path:3356@ams01>"+dst(d)] = [2]float64{0, 20}
			if i == 6 {
				continue // ports down: AS1299 not measured
			}
			ams, fra := 0.0, 0.0
			if lossy && d <= 12 {
				ams = 0.3
			}
			if lossy && (d <= 4 || d == 13 || d == 14) {
				fra = 0.2
				if d == 1 {
					fra = 0.45
				}
			}
			b["path:1299@ams01>"+dst(d)] = [2]float64{ams, 20}
			b["path:1299@fra01>"+dst(d)] = [2]float64{fra, 20}
		}
		if lossy {
			b["path:1299@fra01>198.18.99.0/24"] = [2]float64{0.5, 5}   // too few packets
			b["path:3356@ams01>"+dst(3)] = [2]float64{0.5, 20}         // one destination
			b["path:1299@lon01>as15169"] = [2]float64{0.5, 20}         // named by AS
			b["path:1299@lon01>"+"as2"] = [2]float64{0.5, 20}          // sorts before as15169
			b["transit:1299@ams01"] = [2]float64{0.3, 400}             // not a path: ignored
			b["path:1299@lon01>2001:db8::/48"] = [2]float64{0, 20}     // judged, clean
			b["path:1299@lon01>198.18.250.0/24"] = [2]float64{0.1, 20} // exactly the threshold
		}
		out = append(out, b)
	}
	return out
}

func TestPacketLossPerTransitAS(t *testing.T) {
	r := lossRun(DefaultPacketLoss(), telia())
	if len(r.findings) != 2 {
		t.Fatalf("%d findings, want firing and resolved: %+v", len(r.findings), r.findings)
	}
	f, res := r.findings[0], r.findings[1]
	t2 := start + (warm+2)*w5
	if f.Status != Firing || f.Detector != PacketLossName || f.Entity != "transit:1299" || f.Signal != "packet_loss" ||
		f.Start != t2 || f.At != t2+w5 {
		t.Fatalf("firing: %+v", f)
	}
	var want []string
	for d := 1; d <= 14; d++ {
		want = append(want, dst(d))
	}
	want = append(want, "198.18.250.0/24", "as2", "as15169")
	if got := f.Details["destinations"]; !reflect.DeepEqual(got, want) {
		t.Errorf("destinations %v\nwant %v", got, want)
	}
	if got := f.Details["sites"]; !reflect.DeepEqual(got, []string{"ams01", "fra01", "lon01"}) {
		t.Errorf("sites %v", got)
	}
	if got := f.Details["site_destinations"]; !reflect.DeepEqual(got, map[string]int{"ams01": 12, "fra01": 6, "lon01": 3}) {
		t.Errorf("site_destinations %v", got)
	}
	loss := f.Details["loss"].(map[string]float64)
	if loss[dst(1)] != 0.45 || loss[dst(2)] != 0.3 || loss[dst(13)] != 0.2 || len(loss) != 17 {
		t.Errorf("loss %v", loss)
	}
	// 20 destinations measured at ams01 and fra01, two AS paths, the IPv6
	// one and 198.18.250: 24 destinations; 44 paths of 20 packets of which
	// 12×6 (ams01) + 9 + 5×4 (fra01) + 2×10 + 2 (lon01) = 123 were lost.
	if f.Details["destinations_judged"] != 24 || f.Details["lossy_destinations"] != 17 || f.Observed != round(123.0/880, 4) {
		t.Errorf("judged %v lossy %v observed %v", f.Details["destinations_judged"], f.Details["lossy_destinations"], f.Observed)
	}
	if !strings.Contains(f.Summary, "AS1299") || !strings.Contains(f.Summary, "ams01, fra01, lon01") {
		t.Errorf("summary %q", f.Summary)
	}
	// Bucket 6 had no AS1299 data (held); 7, 8, 9 clean: resolved at the
	// end of 9, recovered since 7.
	if res.Status != Resolved || res.Entity != "transit:1299" || res.Start != t2 || res.End != start+(warm+7)*w5 || res.At != start+(warm+10)*w5 ||
		res.Details["peak_lossy_destinations"] != 17 || res.Details["lossy_destinations"] != 0 {
		t.Fatalf("resolved: %+v", res)
	}
}

func TestPacketLossPerSite(t *testing.T) {
	p := DefaultPacketLoss()
	p.GroupBy = GroupBySite
	r := lossRun(p, telia())
	if len(r.findings) != 2 || r.findings[0].Entity != "transit:1299@ams01" || r.findings[1].Entity != "transit:1299@ams01" {
		t.Fatalf("findings %+v", r.findings)
	}
	if got := r.findings[0].Details["sites"]; !reflect.DeepEqual(got, []string{"ams01"}) {
		t.Errorf("sites %v", got)
	}
	// A longer For needs the loss to hold: four lossy buckets fire a 20m
	// rule, not a 25m one.
	for _, c := range []struct {
		d    Duration
		want int
	}{{Duration(20 * 60e9), 2}, {Duration(25 * 60e9), 0}} {
		p := DefaultPacketLoss()
		p.For = c.d
		if r := lossRun(p, telia()); len(r.findings) != c.want {
			t.Errorf("for %v: %d findings, want %d", c.d, len(r.findings), c.want)
		}
	}
}

func TestPacketLossCheckpointRoundTrip(t *testing.T) {
	bs := telia()
	whole := lossRun(DefaultPacketLoss(), bs)
	half := lossRun(DefaultPacketLoss(), bs[:warm+4])
	b, err := half.det.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// A fresh aggregator and detector: the detector's state alone carries
	// the firing alert over.
	rest := lossRun(DefaultPacketLoss(), nil)
	if err := rest.det.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	for i, bk := range bs[warm+4:] {
		tt := start + int64(warm+4+i)*w5
		for _, e := range sortedKeys(bk) {
			rest.agg.Observe(&obs.Observation{Time: tt + 7, Signal: quality.PacketLoss, Entity: e, Value: bk[e][0], Hash: uint64(bk[e][1])})
		}
		rest.agg.Advance(tt+w5, func(c *aggregate.Closed) {
			rest.det.Bucket(c, c.Points, func(f Finding) { rest.findings = append(rest.findings, f) })
		})
	}
	got := append(half.findings, rest.findings...)
	if !reflect.DeepEqual(got, whole.findings) {
		t.Fatalf("restored run differs:\n%+v\n%+v", got, whole.findings)
	}
	if err := rest.det.UnmarshalBinary([]byte{1, 2, 3}); err == nil {
		t.Fatal("junk restored")
	}
}

func TestPacketLossValidate(t *testing.T) {
	ok := *DefaultPacketLoss()
	for _, c := range []struct {
		mod  func(p *PacketLoss)
		want string
	}{
		{func(*PacketLoss) {}, ""},
		{func(p *PacketLoss) { p.Threshold = 0 }, "threshold:"},
		{func(p *PacketLoss) { p.Threshold = 1.5 }, "threshold:"},
		{func(p *PacketLoss) { p.MinPackets = 0 }, "min_packets:"},
		{func(p *PacketLoss) { p.MinDestinations = 0 }, "min_destinations:"},
		{func(p *PacketLoss) { p.ResolveFor = -1 }, "for, resolve_for:"},
		{func(p *PacketLoss) { p.GroupBy = "pop" }, "group_by:"},
		{func(p *PacketLoss) { p.Noise = -1 }, "noise:"},
		{func(p *PacketLoss) { p.Noise = math.Inf(1) }, "noise:"},
	} {
		p := ok
		c.mod(&p)
		err := p.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", p, err, c.want)
		}
	}
}

func TestCompareDest(t *testing.T) {
	in := []string{"as15169", "2001:db8::/48", "198.18.10.0/24", "example.net", "as2", "198.18.2.0/24"}
	want := []string{"198.18.2.0/24", "198.18.10.0/24", "2001:db8::/48", "as2", "as15169", "example.net"}
	got := append([]string(nil), in...)
	for i := range got {
		for j := i + 1; j < len(got); j++ {
			if compareDest(got[j], got[i]) < 0 {
				got[i], got[j] = got[j], got[i]
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v", got)
	}
}

func BenchmarkPacketLossBucket(b *testing.B) {
	bs := telia()
	r := lossRun(DefaultPacketLoss(), bs[:warm+3])
	var pts []aggregate.Point
	var closed *aggregate.Closed
	for e, v := range bs[warm+3] {
		r.agg.Observe(&obs.Observation{Time: start + (warm+3)*w5 + 7, Signal: quality.PacketLoss, Entity: e, Value: v[0], Hash: uint64(v[1])})
	}
	r.agg.Advance(start+(warm+4)*w5, func(c *aggregate.Closed) { closed = c; pts = append(pts, c.Points...) })
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.det.Bucket(closed, pts, func(Finding) {})
	}
	b.ReportMetric(float64(len(pts))*float64(b.N)/b.Elapsed().Seconds(), "points/s")
}

// A big transit whose paths drop a packet now and then has a few
// destinations past 10 % in every bucket: 200 destinations measured with
// 10 pings, one lost on every tenth, is 20 lossy destinations a bucket,
// twice MinDestinations, all day. Once it has learnt that (an hour of
// buckets), 20 is its usual and pages nobody; 60 lossy at once (74 with
// the usual ones among the other 140), past 20 + 3·√(200·0.1·0.9) = 32.7,
// fires. Ten lossy at once (29 in all) is within three deviations of the
// usual 20 and fires only where the rule's noise is 0, the usual share
// alone.
func TestPacketLossJudgesAgainstTheTransitsUsualLoss(t *testing.T) {
	for _, c := range []struct {
		lossy int
		noise float64
		fires bool
	}{{60, countSigmas, true}, {10, countSigmas, false}, {10, 0, true}} {
		var bs []map[string][2]float64
		for i := range 36 {
			b := map[string][2]float64{}
			for d := range 200 {
				loss := 0.0
				if (d+i)%10 == 0 {
					loss = 0.1
				}
				if i >= 30 && d < c.lossy {
					loss = 0.3
				}
				b[fmt.Sprintf("path:174@ams01>198.18.%d.0/24", d)] = [2]float64{loss, 10}
			}
			bs = append(bs, b)
		}
		p := DefaultPacketLoss()
		p.Noise = c.noise
		r := lossRun(p, bs)
		// The first hour (12 buckets) learns the usual and judges nothing.
		fired := len(r.findings) == 1 && r.findings[0].Status == Firing && r.findings[0].Start == start+30*w5
		if fired != c.fires || !c.fires && len(r.findings) != 0 {
			t.Errorf("%d lossy, noise %g: findings %+v, want firing at bucket 30: %v", c.lossy, c.noise, r.findings, c.fires)
		}
	}
}

// A transit measured through 5 destinations can never have the 10 lossy
// destinations the rule asks for: the rule names it as unjudgeable, and
// the transit measured through 20 is not named.
func TestPacketLossReportsATransitItCannotJudge(t *testing.T) {
	var bs []map[string][2]float64
	for range warm + 2 {
		b := map[string][2]float64{}
		for d := 1; d <= 20; d++ {
			b["path:3356@ams01>"+dst(d)] = [2]float64{0, 20}
			if d <= 5 {
				b["path:174@ams01>"+dst(d)] = [2]float64{0.5, 20}
			}
		}
		bs = append(bs, b)
	}
	r := lossRun(DefaultPacketLoss(), bs)
	if got := r.det.(Unjudgeable).Unjudgeable(); !reflect.DeepEqual(got, []string{"packet_loss transit:174"}) {
		t.Fatalf("unjudgeable %v, want transit:174 only", got)
	}
	if len(r.findings) != 0 {
		t.Fatalf("findings %+v, want none", r.findings)
	}
}
