package detectors

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
)

const w5 = int64(300e9)

// start is a Monday 00:00 UTC.
var start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// level is a diurnal, weekly traffic curve: low at night, lower at weekends.
func level(t int64, scale float64) float64 {
	tm := time.Unix(0, t).UTC()
	h := float64(tm.Hour()) + float64(tm.Minute())/60
	v := scale * (0.6 + 0.4*math.Sin((h-9)/24*2*math.Pi))
	if wd := tm.Weekday(); wd == time.Saturday || wd == time.Sunday {
		v *= 0.8
	}
	return v
}

type run struct {
	agg      *aggregate.Aggregator
	det      Detector
	findings []Finding
}

func newRun(p *TrafficDrop) *run {
	return &run{agg: aggregate.New(aggregate.Config{}), det: p.Build("test")}
}

// feed renders n buckets for entities; shape(entity, t) gives the factor.
func (r *run) feed(from int64, n int, ents []string, shape func(e string, t int64) float64) {
	rng := rand.New(rand.NewPCG(7, uint64(from)))
	for i := 0; i < n; i++ {
		t := from + int64(i)*w5
		for _, e := range ents {
			v := level(t, 1e6) * shape(e, t) * (1 + 0.03*rng.NormFloat64())
			r.agg.Observe(&obs.Observation{Time: t + 1, Signal: obs.TrafficBytes, Entity: e, Value: v})
		}
		r.agg.Advance(t+w5, func(c *aggregate.Closed) {
			r.det.Bucket(c, c.Points, func(f Finding) { r.findings = append(r.findings, f) })
		})
	}
}

func flat(string, int64) float64 { return 1 }

var ents = []string{"asn:1", "asn:2", "asn:3", "asn:4", "asn:5", "asn:6"}

func TestTrafficDropFiresAndResolves(t *testing.T) {
	r := newRun(DefaultTrafficDrop())
	days := int64(15)
	r.feed(start, int(days*288), ents, flat)
	if len(r.findings) != 0 {
		t.Fatalf("quiet fortnight fired: %+v", r.findings[0])
	}
	onset := start + days*dayNs + 17*3600e9
	r.feed(start+days*dayNs, 17*12, ents, flat)
	out := func(e string, t int64) float64 {
		if e == "asn:3" && t >= onset && t < onset+2*dayNs {
			return 0.05
		}
		return 1
	}
	r.feed(onset, 3*288, ents, out)
	if len(r.findings) != 2 {
		t.Fatalf("got %d findings, want firing+resolved: %+v", len(r.findings), r.findings)
	}
	f := r.findings[0]
	if f.Status != Firing || f.Entity != "asn:3" || f.Start != onset || f.At != onset+w5 {
		t.Fatalf("firing = %+v (onset %d)", f, onset)
	}
	if f.ChangePct > -90 || f.BaselineMethod != "similar_days" {
		t.Fatalf("change %.1f method %s", f.ChangePct, f.BaselineMethod)
	}
	g := r.findings[1]
	if g.Status != Resolved || g.End != onset+2*dayNs || g.At != onset+2*dayNs+6*w5 {
		t.Fatalf("resolved = %+v, want end %d", g, onset+2*dayNs)
	}
}

func TestTrafficDropHoldsForDuration(t *testing.T) {
	r := newRun(DefaultTrafficDrop())
	r.feed(start, 8*288, ents, flat)
	onset := start + 8*dayNs
	// A 50 % drop fires after For (10 minutes = 2 buckets), not at once,
	// and a single-bucket dip never fires.
	r.feed(onset, 12, ents, func(e string, t int64) float64 {
		if e == "asn:2" && (t == onset || t >= onset+6*w5) {
			return 0.5
		}
		return 1
	})
	if len(r.findings) != 1 || r.findings[0].At != onset+8*w5 || r.findings[0].Start != onset+6*w5 {
		t.Fatalf("findings = %+v", r.findings)
	}
	if r.findings[0].BaselineMethod != "similar_days" {
		t.Fatalf("method %s", r.findings[0].BaselineMethod)
	}
}

func TestTrafficDropFallsBackToPreviousDays(t *testing.T) {
	r := newRun(DefaultTrafficDrop())
	r.feed(start, 2*288+100, ents, flat)
	onset := start + 2*dayNs + 100*w5
	r.feed(onset, 3, ents, func(e string, t int64) float64 {
		if e == "asn:1" {
			return 0.3
		}
		return 1
	})
	if len(r.findings) != 1 || r.findings[0].BaselineMethod != "previous_days" {
		t.Fatalf("findings = %+v", r.findings)
	}
}

func TestTrafficDropQuietOnSpikesAndHolidays(t *testing.T) {
	r := newRun(DefaultTrafficDrop())
	r.feed(start, 14*288, ents, flat)
	spike := start + 14*dayNs + 20*3600e9
	holiday := start + 21*dayNs
	r.feed(start+14*dayNs, 14*288, ents, func(e string, t int64) float64 {
		switch {
		case t >= spike && t < spike+4*3600e9:
			return 2.5 // an evening event
		case t >= holiday && t < holiday+dayNs:
			return 0.75 // a public holiday
		}
		return 1
	})
	if len(r.findings) != 0 {
		t.Fatalf("fired on a spike or holiday: %+v", r.findings[0])
	}
}

func TestTrafficDropFeedFault(t *testing.T) {
	r := newRun(DefaultTrafficDrop())
	r.feed(start, 8*288, ents, flat)
	onset := start + 8*dayNs
	r.feed(onset, 12, ents, func(e string, t int64) float64 {
		if t < onset+6*w5 {
			return 0.1 // a collector stopped: nearly everything drops
		}
		return 1
	})
	if len(r.findings) != 2 {
		t.Fatalf("findings = %+v", r.findings)
	}
	if f := r.findings[0]; f.Detector != "feed_health" || f.Entity != "feed:flows" || f.Status != Firing || f.Start != onset {
		t.Fatalf("feed fault = %+v", f)
	}
	if f := r.findings[1]; f.Detector != "feed_health" || f.Status != Resolved || f.End != onset+6*w5 {
		t.Fatalf("feed resolve = %+v", f)
	}
}

func TestTrafficDropMissingIsNotDrop(t *testing.T) {
	r := newRun(DefaultTrafficDrop())
	r.feed(start, 8*288, ents, flat)
	// The feed is down for an hour: nothing arrives at all.
	gap := start + 8*dayNs
	r.agg.Advance(gap+12*w5, func(c *aggregate.Closed) {
		r.det.Bucket(c, c.Points, func(f Finding) { r.findings = append(r.findings, f) })
	})
	r.feed(gap+12*w5, 24, ents, flat)
	if len(r.findings) != 0 {
		t.Fatalf("missing data alerted: %+v", r.findings[0])
	}
}

func TestTrafficDropCheckpoint(t *testing.T) {
	a, b := newRun(DefaultTrafficDrop()), newRun(DefaultTrafficDrop())
	a.feed(start, 8*288, ents, flat)
	b.feed(start, 8*288, ents, flat)
	snap, err := a.det.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultTrafficDrop().Build("test")
	if err := c.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	b.det = c
	down := func(e string, t int64) float64 {
		if e == "asn:1" || e == "asn:2" {
			return 0.2
		}
		return 1
	}
	a.feed(start+8*dayNs, 4, ents, down)
	b.feed(start+8*dayNs, 4, ents, down)
	if len(a.findings) != 2 || len(b.findings) != len(a.findings) || a.findings[1].Start != b.findings[1].Start {
		t.Fatalf("restored detector diverged: %+v vs %+v", a.findings, b.findings)
	}
}

func TestTrafficDropValidate(t *testing.T) {
	p := DefaultTrafficDrop()
	p.ResolveBelow = 0.5
	if err := p.Validate(); err == nil {
		t.Fatal("resolve_below above threshold accepted")
	}
	if err := DefaultTrafficDrop().Validate(); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkTrafficDropBucket(b *testing.B) {
	r := newRun(DefaultTrafficDrop())
	r.feed(start, 15*288, ents, flat)
	b.ResetTimer()
	r.feed(start+15*dayNs, b.N, ents, flat)
	b.ReportMetric(float64(b.N*len(ents))/b.Elapsed().Seconds(), "series-buckets/s")
}
