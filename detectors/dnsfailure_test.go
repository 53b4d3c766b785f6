package detectors

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
)

// testFailureRatio has the shape of the DNS failure ratio: the mean of 0/1
// per response, the count being the number of responses.
var testFailureRatio = obs.Register(obs.SignalDef{Name: "test_dns_failure_ratio", Feed: obs.FeedDNS, Agg: obs.Mean})

type failRun struct {
	agg      *aggregate.Aggregator
	det      Detector
	findings []Finding
	t        int64 // start of the next bucket
}

func newFailRun(p *DNSFailure) *failRun {
	return &failRun{agg: aggregate.New(aggregate.Config{}), det: p.Build("test"), t: start}
}

// cell is what one entity sends in one bucket: responses and failures.
type failCell struct{ n, fail int }

// feed renders n buckets; shape gives each entity's failCell at bucket start t.
func (r *failRun) feed(n int, ents []string, shape func(e string, t int64) failCell) {
	for i := 0; i < n; i++ {
		t := r.t
		for _, e := range ents {
			c := shape(e, t)
			for k := 0; k < c.n; k++ {
				v := 0.0
				if k < c.fail {
					v = 1
				}
				r.agg.Observe(&obs.Observation{Time: t + 1 + int64(k), Signal: testFailureRatio, Entity: e, Value: v})
			}
		}
		r.agg.Advance(t+w5, func(c *aggregate.Closed) {
			r.det.Bucket(c, c.Points, func(f Finding) { r.findings = append(r.findings, f) })
		})
		r.t += w5
	}
}

var failZones = []string{"zone:a.example", "zone:b.example"}

func normalFail(string, int64) failCell { return failCell{100, 1} }

func TestDNSFailureFiresAndResolves(t *testing.T) {
	r := newFailRun(DefaultDNSFailure())
	r.feed(288, failZones, normalFail)
	onset := r.t
	// zone a: half the responses fail for an hour, then back to normalFail.
	r.feed(30, failZones, func(e string, t int64) failCell {
		if e == "zone:a.example" && t >= onset && t < onset+12*w5 {
			return failCell{100, 50}
		}
		return normalFail(e, t)
	})
	if len(r.findings) != 2 {
		t.Fatalf("got %d findings, want firing and resolved: %+v", len(r.findings), r.findings)
	}
	f := r.findings[0]
	// For = 10m: the second anomalous bucket fires, starting at the first.
	if f.Status != Firing || f.Detector != "dns_failure" || f.Entity != "zone:a.example" || f.Signal != "test_dns_failure_ratio" ||
		f.Start != onset || f.At != onset+2*w5 || f.Observed != 0.5 {
		t.Fatalf("firing = %+v (onset %d)", f, onset)
	}
	// The history is log-quantised (±2 %): the baseline is 1 % within that.
	if math.Abs(f.Baseline-0.01) > 0.0003 || f.BaselineMethod != "median_recent" {
		t.Fatalf("baseline %v method %s", f.Baseline, f.BaselineMethod)
	}
	if f.Details["responses"] != int64(100) || f.Details["failures"] != int64(50) || f.Details["min_queries"] != int64(20) ||
		f.Details["threshold"] != 0.2 {
		t.Fatalf("details %v", f.Details)
	}
	if n := len(f.Evidence); n != 12 || f.Evidence[n-1].Time != onset+w5 || f.Evidence[n-1].Value != 0.5 || f.Evidence[n-3].Value != 0.01 {
		t.Fatalf("evidence %+v", f.Evidence)
	}
	if !strings.Contains(f.Summary, "50.0% of 100 responses failed") {
		t.Fatalf("summary %q", f.Summary)
	}
	g := r.findings[1]
	// Resolve after ResolveFor (15m = 3 buckets) of recovery; End is the
	// first recovered bucket.
	if g.Status != Resolved || g.Start != onset || g.End != onset+12*w5 || g.At != onset+15*w5 || g.Observed != 0.01 ||
		g.Details["peak_failure_ratio"] != 0.5 {
		t.Fatalf("resolved = %+v", g)
	}
}

func TestDNSFailureNeedsFloorAndRise(t *testing.T) {
	r := newFailRun(DefaultDNSFailure())
	ents := []string{"zone:low", "zone:noisy", "zone:rise"}
	base := map[string]failCell{"zone:low": {100, 5}, "zone:noisy": {100, 15}, "zone:rise": {100, 15}}
	r.feed(288, ents, func(e string, _ int64) failCell { return base[e] })
	onset := r.t
	r.feed(12, ents, func(e string, t int64) failCell {
		switch e {
		case "zone:low":
			return failCell{100, 15} // three times normalFail, but under the 20 % floor
		case "zone:noisy":
			return failCell{100, 40} // over the floor, but under 3 × 15 %
		default:
			return failCell{100, 50} // over the floor and over 3 × 15 %
		}
	})
	if len(r.findings) != 1 || r.findings[0].Entity != "zone:rise" || r.findings[0].Start != onset {
		t.Fatalf("findings = %+v", r.findings)
	}
	if th := r.findings[0].Details["threshold"].(float64); math.Abs(th-0.45) > 0.015 {
		t.Fatalf("threshold %v, want 3 × 15 %%", th)
	}
}

func TestDNSFailureMinQueries(t *testing.T) {
	r := newFailRun(DefaultDNSFailure())
	r.feed(288, failZones, normalFail)
	onset := r.t
	// Quiet buckets (10 responses, all failing) are not judged and do not
	// break a run: anomalous, quiet, anomalous fires on the third bucket.
	shape := func(e string, t int64) failCell {
		if e != "zone:b.example" {
			return normalFail(e, t)
		}
		switch (t - onset) / w5 {
		case 0, 2:
			return failCell{40, 20}
		case 1:
			return failCell{10, 10}
		case 3, 4, 5, 6:
			return failCell{5, 5}
		}
		return normalFail(e, t)
	}
	r.feed(3, failZones, shape)
	if len(r.findings) != 1 || r.findings[0].Start != onset || r.findings[0].At != onset+3*w5 ||
		r.findings[0].Details["responses"] != int64(40) {
		t.Fatalf("findings = %+v", r.findings)
	}
	// Quiet buckets while firing do not resolve it either.
	r.feed(4, failZones, shape)
	if len(r.findings) != 1 {
		t.Fatalf("resolved on quiet buckets: %+v", r.findings[1:])
	}
	r.feed(3, failZones, shape)
	if len(r.findings) != 2 || r.findings[1].Status != Resolved || r.findings[1].End != onset+7*w5 {
		t.Fatalf("findings = %+v", r.findings)
	}
}

func TestDNSFailureHysteresis(t *testing.T) {
	r := newFailRun(DefaultDNSFailure())
	r.feed(288, failZones, normalFail)
	onset := r.t
	level := []int{30, 30, 12, 12, 12, 12, 30, 9, 9, 12, 9, 9, 9}
	r.feed(len(level), failZones, func(e string, t int64) failCell {
		if e == "zone:a.example" {
			return failCell{100, level[(t-onset)/w5]}
		}
		return normalFail(e, t)
	})
	// 12 % is under the 20 % floor but over resolve_below (10 %): the alert
	// holds. 9 % counts as recovered, but a 12 % bucket restarts the count.
	if len(r.findings) != 2 {
		t.Fatalf("findings = %+v", r.findings)
	}
	if f := r.findings[0]; f.At != onset+2*w5 {
		t.Fatalf("firing %+v", f)
	}
	if g := r.findings[1]; g.Status != Resolved || g.End != onset+10*w5 || g.At != onset+13*w5 || g.Details["peak_failure_ratio"] != 0.3 {
		t.Fatalf("resolved %+v", g)
	}
}

func TestDNSFailureBaselineSkipsEpisodes(t *testing.T) {
	r := newFailRun(DefaultDNSFailure())
	r.feed(288, failZones, normalFail)
	first := r.t
	// Fourteen hours of 50 % failures: more than half of the baseline
	// window. Were those buckets used, the median would be 50 % and the
	// next episode would pass unseen. It comes two hours later, past the
	// first's hold.
	r.feed(14*12+24, failZones, func(e string, t int64) failCell {
		if e == "zone:a.example" && t < first+14*12*w5 {
			return failCell{100, 50}
		}
		return normalFail(e, t)
	})
	second := r.t
	r.feed(4, failZones, func(e string, t int64) failCell {
		if e == "zone:a.example" {
			return failCell{100, 40}
		}
		return normalFail(e, t)
	})
	if len(r.findings) != 3 {
		t.Fatalf("findings = %+v", r.findings)
	}
	if f := r.findings[2]; f.Status != Firing || f.Start != second || math.Abs(f.Baseline-0.01) > 0.0003 {
		t.Fatalf("second episode %+v", f)
	}
}

// Failures that stop for a quarter of an hour and come back within the
// hold (an hour) are one alert: the return keeps the first start and says
// it was reopened. Back after the hold, they are a new alert.
func TestDNSFailureReturnWithinTheHold(t *testing.T) {
	r := newFailRun(DefaultDNSFailure())
	r.feed(288, failZones, normalFail)
	var starts []int64
	failing := func(n int) {
		starts = append(starts, r.t)
		r.feed(n, failZones, func(e string, t int64) failCell {
			if e == "zone:a.example" {
				return failCell{100, 40}
			}
			return normalFail(e, t)
		})
	}
	failing(6)
	r.feed(6, failZones, normalFail) // resolves after 15 minutes
	failing(6)
	r.feed(24, failZones, normalFail) // resolves, and the hold runs out
	failing(6)
	var got []string
	for _, f := range r.findings {
		got = append(got, fmt.Sprintf("%s %d %v", f.Status, (f.Start-starts[0])/w5, f.Details["reopened"]))
	}
	third := (starts[2] - starts[0]) / w5
	want := []string{"firing 0 <nil>", "resolved 0 <nil>", "firing 0 1", "resolved 0 <nil>", fmt.Sprintf("firing %d <nil>", third)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestDNSFailureWaitsForHistory(t *testing.T) {
	bad := func(string, int64) failCell { return failCell{100, 90} }
	p := DefaultDNSFailure()
	p.For = 0
	r := newFailRun(p)
	// With less than min_history (1h) of usable buckets there is no
	// baseline: the first bad bucket passes, the next one fires.
	r.feed(11, failZones, normalFail)
	r.feed(1, failZones, bad)
	if len(r.findings) != 0 {
		t.Fatalf("fired without history: %+v", r.findings)
	}
	r.feed(1, failZones, bad)
	if len(r.findings) != 2 || r.findings[0].Start != start+12*w5 {
		t.Fatalf("findings = %+v", r.findings)
	}

	// Missing buckets are not history.
	r = newFailRun(p)
	r.feed(6, failZones, normalFail)
	r.agg.Advance(r.t+24*w5, func(c *aggregate.Closed) {
		r.det.Bucket(c, c.Points, func(f Finding) { r.findings = append(r.findings, f) })
	})
	r.t += 24 * w5
	r.feed(5, failZones, normalFail)
	r.feed(1, failZones, bad)
	if len(r.findings) != 0 {
		t.Fatalf("fired without history: %+v", r.findings)
	}
	r.feed(1, failZones, bad)
	if len(r.findings) != 2 || r.findings[0].Start != r.t-w5 {
		t.Fatalf("findings = %+v", r.findings)
	}
}

func TestDNSFailureCheckpoint(t *testing.T) {
	a, b := newFailRun(DefaultDNSFailure()), newFailRun(DefaultDNSFailure())
	a.feed(288, failZones, normalFail)
	b.feed(288, failZones, normalFail)
	onset := a.t
	bad := func(e string, t int64) failCell {
		if t >= onset && t < onset+6*w5 {
			return failCell{100, 60}
		}
		return normalFail(e, t)
	}
	// One anomalous bucket in, b's detector is replaced by a restored copy.
	a.feed(1, failZones, bad)
	b.feed(1, failZones, bad)
	snap, err := b.det.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultDNSFailure().Build("test")
	if err := c.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	b.det = c
	a.feed(12, failZones, bad)
	b.feed(12, failZones, bad)
	if len(a.findings) != 4 || !reflect.DeepEqual(a.findings, b.findings) {
		t.Fatalf("restored run differs:\n a %+v\n b %+v", a.findings, b.findings)
	}
	if a.findings[0].Start != onset || a.findings[0].At != onset+2*w5 {
		t.Fatalf("firing %+v", a.findings[0])
	}
	if err := c.UnmarshalBinary([]byte("not gob")); err == nil || !strings.Contains(err.Error(), "dns_failure test: restore") {
		t.Fatalf("bad checkpoint: %v", err)
	}
}

func TestDNSFailureValidate(t *testing.T) {
	cases := []struct {
		set  func(p *DNSFailure)
		want string
	}{
		{func(p *DNSFailure) { p.Floor = 0 }, "floor: "},
		{func(p *DNSFailure) { p.Floor = 1.5 }, "floor: "},
		{func(p *DNSFailure) { p.Multiple = 0.5 }, "multiple: "},
		{func(p *DNSFailure) { p.Delta = -0.1 }, "delta: "},
		{func(p *DNSFailure) { p.For = -1 }, "for: "},
		{func(p *DNSFailure) { p.MinQueries = 0 }, "min_queries: "},
		{func(p *DNSFailure) { p.ResolveBelow = 0.2 }, "resolve_below: "},
		{func(p *DNSFailure) { p.ResolveMultiple = 4 }, "resolve_multiple: "},
		{func(p *DNSFailure) { p.ResolveFor = -1 }, "resolve_for: "},
		{func(p *DNSFailure) { p.KeepFiringFor = -1 }, "keep_firing_for: "},
		{func(p *DNSFailure) { p.MinHistory = 0 }, "min_history: "},
		{func(p *DNSFailure) { p.BaselineWindow = Duration(60e9) }, "baseline_window: "},
	}
	if err := DefaultDNSFailure().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, c := range cases {
		p := DefaultDNSFailure()
		c.set(p)
		if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("got %v, want %q...", err, c.want)
		}
	}
	if p, err := NewParams("dns_failure"); err != nil || p.(*DNSFailure).Floor != 0.2 {
		t.Fatalf("registry: %v %v", p, err)
	}
}

// BenchmarkDNSFailure buckets and judges 50 zones (20 responses each) over
// two days, aggregation included (baseline
// recomputed hourly from a day of history).
func BenchmarkDNSFailure(b *testing.B) {
	ents := make([]string, 50)
	for i := range ents {
		ents[i] = "zone:z" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".example"
	}
	var judged int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := newFailRun(DefaultDNSFailure())
		b.StartTimer()
		r.feed(2*288, ents, func(e string, t int64) failCell { return failCell{20, int(t/w5) % 2} })
		judged += 2 * 288 * len(ents)
	}
	b.ReportMetric(float64(judged)/b.Elapsed().Seconds(), "series-buckets/s")
}

// A zone that normally fails 1 of 20 responses, judged by an operator's
// tight rule (5 % floor, 1.5× and 2 points up): 3 of 20 failing passes the
// rule's bars but is within the count's own binomial noise (σ ≈ 4.9
// points at 5 % of 20), so it stays silent; 5 of 20 is past three of
// them and fires. With noise 0 the first fires too.
func TestDNSFailureBinomialNoise(t *testing.T) {
	for _, c := range []struct {
		noise float64
		fail  int
		fires bool
	}{{countSigmas, 3, false}, {countSigmas, 5, true}, {0, 3, true}} {
		p := DefaultDNSFailure()
		p.Floor, p.Multiple, p.Delta, p.ResolveBelow, p.ResolveMultiple, p.Noise = 0.05, 1.5, 0.02, 0.02, 1.2, c.noise
		r := newFailRun(p)
		r.feed(288, failZones[:1], func(string, int64) failCell { return failCell{20, 1} })
		r.feed(4, failZones[:1], func(string, int64) failCell { return failCell{20, c.fail} })
		if fired := len(r.findings) > 0 && r.findings[0].Status == Firing; fired != c.fires {
			t.Errorf("noise %v, %d of 20 failing: fired %v, want %v (%+v)", c.noise, c.fail, fired, c.fires, r.findings)
		}
	}
}

// A zone that fails 40 % of its answers all day cannot be judged by a
// rule that wants three times its baseline: the threshold is past 100 %.
// The rule names it instead of watching it in silence; a zone failing
// 1 % is judged, and a zone whose baseline falls back within reach is
// judged again.
func TestDNSFailureReportsAZoneItCannotJudge(t *testing.T) {
	r := newFailRun(DefaultDNSFailure())
	broken := true
	r.feed(24, failZones, func(e string, _ int64) failCell {
		if e == failZones[1] && broken {
			return failCell{100, 40}
		}
		return failCell{100, 1}
	})
	if got := r.det.(Unjudgeable).Unjudgeable(); !reflect.DeepEqual(got, []string{"test_dns_failure_ratio zone:b.example"}) {
		t.Fatalf("unjudgeable %v, want zone b only", got)
	}
	broken = false
	r.feed(12*25, failZones, func(string, int64) failCell { return failCell{100, 1} })
	if got := r.det.(Unjudgeable).Unjudgeable(); len(got) != 0 {
		t.Fatalf("unjudgeable %v after a day of 1 %% failures, want none", got)
	}
	if len(r.findings) != 0 {
		t.Fatalf("findings %+v, want none", r.findings)
	}
}
