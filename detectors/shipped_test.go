package detectors_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/rules"
)

const w5 = int64(300e9)

// monday is a Monday 00:00 UTC.
var monday = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// diurnal is a traffic curve: low at night, high in the evening, a fifth
// lower at weekends.
func diurnal(t int64, scale float64) float64 {
	tm := time.Unix(0, t).UTC()
	h := float64(tm.Hour()) + float64(tm.Minute())/60
	v := scale * (0.6 + 0.4*math.Sin((h-9)/24*2*math.Pi))
	if wd := tm.Weekday(); wd == time.Saturday || wd == time.Sunday {
		v *= 0.8
	}
	return v
}

// runShipped feeds n five-minute buckets of traffic_bytes for ents through
// the named shipped rule, with params changed by tweak (may be nil).
func runShipped(t *testing.T, rule string, tweak func(detectors.Params), ents []string, n int, value func(e string, t int64) float64) []detectors.Finding {
	t.Helper()
	r := shippedRule(t, rule)
	if tweak != nil {
		tweak(r.Params)
	}
	var out []detectors.Finding
	judge := judgeWith(r, func(f detectors.Finding) { out = append(out, f) })
	agg := aggregate.New(aggregate.Config{})
	for i := range n {
		ts := monday + int64(i)*w5
		for _, e := range ents {
			agg.Observe(&obs.Observation{Time: ts + 1, Signal: obs.TrafficBytes, Entity: e, Value: value(e, ts)})
		}
		agg.Advance(ts+w5, judge)
	}
	return out
}

// shippedRule returns the shipped rule of that name, a copy of its own.
func shippedRule(t *testing.T, name string) *rules.Rule {
	t.Helper()
	set, err := rules.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range set.Rules {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no shipped rule %s", name)
	return nil
}

// judgeWith builds r's detector and returns what hands it each closed
// bucket's points of the series r selects, its findings to emit.
func judgeWith(r *rules.Rule, emit func(detectors.Finding)) func(*aggregate.Closed) {
	det := r.Params.Build(r.Name)
	return func(c *aggregate.Closed) {
		var pts []aggregate.Point
		for _, p := range c.Points {
			if r.Matches(p.Series.Signal, p.Series.Entity) {
				pts = append(pts, p)
			}
		}
		det.Bucket(c, pts, emit)
	}
}

// A quiet region is caught at −40 % by the shipped region rule while the
// country it belongs to moves 3 %, which the country rule ignores.
func TestShippedRegionRuleCatchesAQuietRegion(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	onset := monday + 15*24*int64(time.Hour) + 8*int64(time.Hour)
	value := func(e string, t int64) float64 {
		region := diurnal(t, 7.5e8) * (1 + 0.01*rng.NormFloat64())
		rest := diurnal(t, 9.25e9) * (1 + 0.01*rng.NormFloat64())
		if t >= onset && t < onset+6*int64(time.Hour) {
			region *= 0.6 // a winter storm: −40 %
		}
		if e == "region:XX-01" {
			return region
		}
		return region + rest
	}
	ents := []string{"country:XX", "region:XX-01"}
	f := runShipped(t, "region-traffic-drop", nil, ents, 17*288, value)
	if len(f) != 2 || f[0].Entity != "region:XX-01" || f[0].Status != detectors.Firing || f[0].Start != onset ||
		f[1].Status != detectors.Resolved || f[1].End != onset+6*int64(time.Hour) {
		t.Fatalf("region rule: %+v, want region:XX-01 firing at %d and resolved 6 h later", f, onset)
	}
	// The region is quiet: its own threshold is the bar, not its noise.
	if f[0].Details["bar"] != "threshold" || f[0].Details["threshold_pct"] != 35.0 || f[0].Confidence < 0.6 || f[0].Confidence > 0.7 {
		t.Fatalf("firing details %v confidence %v: want the 35 %% threshold as the bar, confidence about 0.65 (a 40 %% drop against a 35 %% bar)", f[0].Details, f[0].Confidence)
	}
	rng = rand.New(rand.NewPCG(4, 4))
	if f := runShipped(t, "country-traffic-drop", nil, ents, 17*288, value); len(f) != 0 {
		t.Fatalf("country rule fired on a 3 %% move: %+v", f)
	}
}

// A city's traffic whose nights are noisy: at 4 am few users make the
// bucket, so it wanders by a quarter or more around its forecast for half
// an hour at a time, while the evening stays within 3 %. The shipped region
// rule stays silent for four weeks; the same rule with the noise bar off
// pages at the troughs, as a plain −35 % rule does.
func TestShippedRegionRuleQuietOnNoisyTroughs(t *testing.T) {
	city := func(seed uint64) func(e string, t int64) float64 {
		rng := rand.New(rand.NewPCG(seed, 5))
		eps := 0.0
		return func(e string, t int64) float64 {
			x := diurnal(t, 1) // 0.16 to 1
			sd := 0.03 + 0.3*(1-x)
			// AR(1) in the log: deviations last about half an hour.
			eps = 0.8*eps + 0.6*sd*rng.NormFloat64()
			return diurnal(t, 1e9) * math.Exp(eps)
		}
	}
	ents := []string{"region:CITY"}
	if f := runShipped(t, "region-traffic-drop", nil, ents, 28*288, city(6)); len(f) != 0 {
		for _, g := range f {
			t.Logf("%s %s %.1f%% %v %s", time.Unix(0, g.Start).UTC(), g.Status, g.ChangePct, g.Details, g.BaselineMethod)
		}
		t.Fatalf("noisy troughs paged %d times", len(f))
	}
	noNoiseBar := func(p detectors.Params) { p.(*detectors.TrafficDrop).Noise = 0 }
	if f := runShipped(t, "region-traffic-drop", noNoiseBar, ents, 28*288, city(6)); len(f) < 3 {
		t.Fatalf("without the noise bar the troughs paged only %d times: the test series is not noisy enough", len(f))
	}
}
