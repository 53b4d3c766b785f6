package detectors

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/obs"
)

// seriesRun feeds one bucket at a time of arbitrary series to one detector.
type seriesRun struct {
	agg      *aggregate.Aggregator
	det      Detector
	findings []Finding
}

func newSeriesRun(p Params) *seriesRun {
	if err := p.Validate(); err != nil {
		panic(err)
	}
	return &seriesRun{agg: aggregate.New(aggregate.Config{}), det: p.Build("test")}
}

// feed renders n buckets from `from`; value(entity, t) gives each value.
func (r *seriesRun) feed(from int64, n int, ents []string, value func(e string, t int64) float64) {
	for i := 0; i < n; i++ {
		t := from + int64(i)*w5
		for _, e := range ents {
			if v := value(e, t); !math.IsNaN(v) { // NaN: the source sent nothing
				r.agg.Observe(&obs.Observation{Time: t + 1, Signal: obs.TrafficBytes, Entity: e, Value: v})
			}
		}
		r.agg.Advance(t+w5, func(c *aggregate.Closed) {
			r.det.Bucket(c, c.Points, func(f Finding) { r.findings = append(r.findings, f) })
		})
	}
}

func (r *seriesRun) take() []Finding {
	f := r.findings
	r.findings = nil
	return f
}

// weekend is the weekend factor of level (0.8), 1 on weekdays.
func weekend(t int64) float64 {
	if wd := time.Unix(0, t).UTC().Weekday(); wd == time.Saturday || wd == time.Sunday {
		return 0.8
	}
	return 1
}

// noisy is level() with relative normal noise of sd, seeded per call site.
func noisy(seed uint64, sd float64) func(e string, t int64) float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	return func(e string, t int64) float64 { return level(t, 1e6) * (1 + sd*rng.NormFloat64()) }
}

func TestTrafficDropLevelShiftBecomesTheBaseline(t *testing.T) {
	p := DefaultTrafficDrop()
	p.Threshold, p.ResolveBelow, p.AdaptAfter = 0.25, 0.1, Duration(2*dayNs)
	r := newSeriesRun(p)
	// A daily cycle with no weekend: weekend days would be the "similar
	// days" of a weekday 30 % down, as they are in Radar's method.
	rng := rand.New(rand.NewPCG(1, 3))
	base := func(e string, t int64) float64 { return level(t, 1e6) / weekend(t) * (1 + 0.02*rng.NormFloat64()) }
	r.feed(start, 15*288, []string{"asn:1"}, base)
	if f := r.take(); len(f) != 0 {
		t.Fatalf("quiet fortnight fired: %+v", f)
	}
	// A customer leaves: 30 % less from now on.
	onset := start + 15*dayNs
	r.feed(onset, 6*288, []string{"asn:1"}, func(e string, t int64) float64 { return 0.7 * base(e, t) })
	f := r.take()
	if len(f) != 2 {
		t.Fatalf("got %d findings, want firing then baseline_adapted: %+v", len(f), f)
	}
	if g := f[0]; g.Status != Firing || g.Start != onset || g.At != onset+2*w5 || g.Confidence <= 0.5 {
		t.Fatalf("firing %+v", g)
	}
	// The adapt_after clock runs from the first outlier bucket: two days
	// of them end with the bucket that starts at onset + 2d − 5 min.
	if g := f[1]; g.Status != Resolved || g.Reason != ReasonBaselineAdapted || g.At != onset+2*dayNs ||
		math.Abs(g.Details["level_ratio"].(float64)-0.7) > 0.02 {
		t.Fatalf("resolve %+v, want baseline_adapted at %d", g, onset+2*dayNs)
	}
	// And the new level stays quiet for the four days after.
}

// A national shutdown of −96 % for nine days, with the shipped defaults:
// a collapse past critical is never the new baseline, so the alert fires
// through all nine days (past adapt_after, a week) and resolves as
// recovered when the country comes back.
func TestTrafficDropLongOutageStaysFiring(t *testing.T) {
	p := DefaultTrafficDrop()
	r := newSeriesRun(p)
	base := noisy(2, 0.02)
	r.feed(start, 15*288, []string{"country:XX"}, base)
	onset := start + 15*dayNs
	end := onset + 9*dayNs
	r.feed(onset, 12*288, []string{"country:XX"}, func(e string, t int64) float64 {
		if t >= onset && t < end {
			return 0.04 * base(e, t)
		}
		return base(e, t)
	})
	f := r.take()
	if len(f) != 2 || f[0].Status != Firing || f[0].Start != onset || f[1].Status != Resolved ||
		f[1].Reason != "recovered" || f[1].End != end {
		t.Fatalf("findings %+v, want one firing at %d and its resolve at %d", f, onset, end)
	}
	// With adopt_critical, the default adapt_after (a week) calls the
	// eighth day normal.
	p.AdoptCritical = true
	r = newSeriesRun(p)
	r.feed(start, 15*288, []string{"country:XX"}, base)
	r.feed(onset, 12*288, []string{"country:XX"}, func(e string, t int64) float64 {
		if t >= onset && t < end {
			return 0.04 * base(e, t)
		}
		return base(e, t)
	})
	if f := r.take(); len(f) < 2 || f[1].Reason != ReasonBaselineAdapted || f[1].At != onset+7*dayNs {
		t.Fatalf("adopt_critical: %+v, want firing, then baseline_adapted at %d", f, onset+7*dayNs)
	}
	// 0 never adapts, whatever the level.
	p.AdoptCritical, p.Critical, p.AdaptAfter = false, 0, 0
	r = newSeriesRun(p)
	r.feed(start, 15*288, []string{"country:XX"}, base)
	r.feed(onset, 30*288, []string{"country:XX"}, func(e string, t int64) float64 { return 0.04 * base(e, t) })
	if f := r.take(); len(f) != 1 || f[0].Status != Firing {
		t.Fatalf("adapt_after 0: %+v, want one firing and no resolve", f)
	}
}

// IODA warns when visibility falls under 99 % of its moving median: the
// history must hold announced space to better than 1 %.
func TestPrefixWithdrawalOnePercent(t *testing.T) {
	p := DefaultPrefixWithdrawal()
	p.Threshold, p.ResolveBelow, p.MinBaseline = 0.01, 0.005, 1
	r := newBGPRun(p)
	vis := func(v float64) []cellv { return []cellv{{rib.AnnouncedV4, "country:XX", v}} }
	for range 24 {
		r.bucket(vis(10000)...)
	}
	onset := r.t
	for range 6 {
		r.bucket(vis(9850)...) // −1.5 %
	}
	back := r.t
	for range 6 {
		r.bucket(vis(9990)...) // −0.1 %: back
	}
	f := r.take()
	if len(f) != 2 || f[0].Status != Firing || f[0].Start != onset || f[1].Status != Resolved || f[1].End != back {
		t.Fatalf("findings %+v, want firing at %d, resolved from %d", f, onset, back)
	}
}

// A national ISP's IPv6 is withdrawn completely during its outage (the
// table reports 0 while the collectors are up, not missing), then half of
// it returns: the alert keeps firing until the space is back near where
// it was before.
func TestPrefixWithdrawalFullWithdrawalThenHalfBack(t *testing.T) {
	p := DefaultPrefixWithdrawal()
	p.Threshold, p.ResolveBelow, p.MinBaseline = 0.3, 0.1, 4 // the shipped asn-prefix-withdrawal
	r := newBGPRun(p)
	r.sig = rib.AnnouncedV6
	v6 := func(v float64) []cellv { return []cellv{{rib.AnnouncedV6, "asn:9", v}} }
	for range 24 {
		r.bucket(v6(4096)...)
	}
	onset := r.t
	for range 36 { // three hours with nothing: 0, not missing
		r.bucket(v6(0)...)
	}
	for range 144 { // twelve hours half back
		r.bucket(v6(2048)...)
	}
	f := r.take()
	if len(f) != 1 || f[0].Status != Firing || f[0].Start != onset {
		t.Fatalf("findings %+v, want one firing at %d and no resolve while half the space is gone", f, onset)
	}
	back := r.t
	for range 6 {
		r.bucket(v6(4090)...)
	}
	if f := r.take(); len(f) != 1 || f[0].Status != Resolved || f[0].End != back {
		t.Fatalf("findings %+v, want the resolve from %d", f, back)
	}
}

// A source that reports every 30 minutes: the detector learns its step
// and `for` counts time, not points: an hour's `for` is two reports (not
// twelve), so the alert fires with the second low report.
func TestTrafficDropCountsTimeOnACoarseSeries(t *testing.T) {
	p := DefaultTrafficDrop()
	p.For, p.Critical = Duration(60*60e9), 0
	r := newSeriesRun(p)
	base := noisy(9, 0.01)
	every30 := func(f func(string, int64) float64) func(string, int64) float64 {
		return func(e string, t int64) float64 {
			if t%(6*w5) != 0 {
				return math.NaN()
			}
			return f(e, t)
		}
	}
	r.feed(start, 15*288, []string{"asn:1"}, every30(base))
	if f := r.take(); len(f) != 0 {
		t.Fatalf("quiet fortnight fired: %+v", f)
	}
	onset := start + 15*dayNs + 12*3600e9
	r.feed(start+15*dayNs, 288, []string{"asn:1"}, every30(func(e string, t int64) float64 {
		if t >= onset {
			return 0.2 * base(e, t)
		}
		return base(e, t)
	}))
	f := r.take()
	if len(f) == 0 || f[0].Status != Firing || f[0].Start != onset || f[0].At != onset+6*w5+w5 {
		t.Fatalf("findings %+v, want firing at the second low report (%d)", f, onset+6*w5+w5)
	}
}
