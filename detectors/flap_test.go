package detectors

import (
	"math/rand/v2"
	"testing"
)

// A customer leaves a network and its traffic settles 30 % lower, but
// first it flaps across the bar: an hour down, an hour back, an hour
// down, an hour back, then down for good. Each return inside the hold is
// the same alert (the start it had, reopened), the recovered hours do not
// restart the run towards a new level, and the new level becomes the
// baseline once its buckets add up to adapt_after.
func TestTrafficDropFlappingLossIsOneAlertThenAdopted(t *testing.T) {
	p := DefaultTrafficDrop()
	p.Threshold, p.ResolveBelow, p.AdaptAfter = 0.25, 0.1, Duration(2*dayNs)
	r := newSeriesRun(p)
	rng := rand.New(rand.NewPCG(1, 3))
	base := func(e string, t int64) float64 { return level(t, 1e6) / weekend(t) * (1 + 0.02*rng.NormFloat64()) }
	r.feed(start, 15*288, []string{"asn:1"}, base)
	if f := r.take(); len(f) != 0 {
		t.Fatalf("quiet fortnight fired: %+v", f)
	}
	onset := start + 15*dayNs
	const hour = int64(3600e9)
	r.feed(onset, 4*288, []string{"asn:1"}, func(e string, t int64) float64 {
		if h := (t - onset) / hour; h == 1 || h == 3 {
			return base(e, t)
		}
		return 0.7 * base(e, t)
	})
	f := r.take()
	want := []struct {
		status   string
		at       int64
		reopened int
	}{
		{Firing, onset + 2*w5, 0},
		{Resolved, onset + hour + 6*w5, 0},
		{Firing, onset + 2*hour + 2*w5, 1},
		{Resolved, onset + 3*hour + 6*w5, 0},
		{Firing, onset + 4*hour + 2*w5, 2},
		// Two days of buckets down: the two hours back do not count, and
		// do not start the count anew.
		{Resolved, onset + 2*dayNs + 2*hour, 0},
	}
	if len(f) != len(want) {
		t.Fatalf("got %d findings, want %d: %+v", len(f), len(want), f)
	}
	for i, w := range want {
		g := f[i]
		if g.Status != w.status || g.At != w.at || g.Start != onset {
			t.Errorf("finding %d: %s at %d from %d, want %s at %d from the onset %d", i, g.Status, g.At, g.Start, w.status, w.at, onset)
		}
		if w.status == Firing && w.reopened > 0 && g.Details["reopened"] != w.reopened {
			t.Errorf("finding %d: reopened %v, want %d", i, g.Details["reopened"], w.reopened)
		}
		if g.Unstable {
			t.Errorf("finding %d: unstable after %d returns", i, w.reopened)
		}
	}
	if g := f[len(f)-1]; g.Reason != ReasonBaselineAdapted {
		t.Fatalf("last finding %+v, want baseline_adapted", g)
	}
	// And the new level stays quiet.
	r.feed(onset+4*dayNs, 2*288, []string{"asn:1"}, func(e string, t int64) float64 { return 0.7 * base(e, t) })
	if f := r.take(); len(f) != 0 {
		t.Fatalf("the adopted level fired: %+v", f)
	}
}

// A series that keeps crossing its bar is unstable, not out: its third
// return within the hold goes out de-rated.
func TestTrafficDropOscillatingSeriesIsDerated(t *testing.T) {
	p := DefaultTrafficDrop()
	p.Threshold, p.ResolveBelow, p.AdaptAfter = 0.25, 0.1, 0
	r := newSeriesRun(p)
	rng := rand.New(rand.NewPCG(1, 3))
	base := func(e string, t int64) float64 { return level(t, 1e6) / weekend(t) * (1 + 0.02*rng.NormFloat64()) }
	r.feed(start, 15*288, []string{"asn:1"}, base)
	onset := start + 15*dayNs
	r.feed(onset, 8*12, []string{"asn:1"}, func(e string, t int64) float64 {
		if (t-onset)/3600e9%2 == 1 {
			return base(e, t)
		}
		return 0.7 * base(e, t)
	})
	var unstable []bool
	for _, g := range r.take() {
		if g.Status == Firing {
			unstable = append(unstable, g.Unstable)
		}
	}
	if want := []bool{false, false, false, true}; len(unstable) != 4 || unstable[2] || !unstable[3] {
		t.Fatalf("firings unstable %v, want %v", unstable, want)
	}
}
