package detectors

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
)

// Signals alone in their feeds: one reporting every 30 minutes (no cadence
// declared: feed health must find it), one every 5 minutes with random
// gaps, and one every 5 minutes that goes silent.
var (
	silenceCoarse = obs.Register(obs.SignalDef{Name: "test_silence_30m", Feed: "test-30m", Agg: obs.Last})
	silenceGappy  = obs.Register(obs.SignalDef{Name: "test_silence_gappy", Feed: "test-gappy", Agg: obs.Last})
	silenceSteady = obs.Register(obs.SignalDef{Name: "test_silence_steady", Feed: "test-steady", Agg: obs.Sum})
)

const (
	silenceT0 = int64(1_700_000_000) / 1800 * 1800 * 1e9
	min5ns    = int64(300e9)
)

// runSilence feeds two weeks of observations (from at(i), the value of
// bucket i, or skip) through an aggregator and the detector, and returns
// the findings as "status entity start".
func runSilence(t *testing.T, sig obs.Signal, step int64, at func(i int) bool) []string {
	t.Helper()
	a := aggregate.New(aggregate.Config{})
	d := NewFeedSilence(3)
	var got []string
	end := silenceT0 + 14*24*3600e9
	for i := 0; silenceT0+int64(i)*step < end; i++ {
		ts := silenceT0 + int64(i)*step + 7e9
		if at(i) {
			a.Observe(&obs.Observation{Time: ts, Signal: sig, Entity: "country:UG", Value: 100})
		}
		a.Advance(ts-ts%min5ns, func(c *aggregate.Closed) {
			d.Bucket(c, func(f Finding) {
				got = append(got, fmt.Sprintf("%s %s %d", f.Status, f.Entity, (f.Start-silenceT0)/min5ns))
			})
		})
	}
	return got
}

func TestFeedHealthIsQuietForACoarseSeries(t *testing.T) {
	got := runSilence(t, silenceCoarse, 30*60e9, func(int) bool { return true })
	if len(got) != 0 {
		t.Fatalf("a series every 30 minutes raised %d feed-health findings: %v", len(got), got[:min(len(got), 4)])
	}
}

func TestFeedHealthIsQuietForAGappySeries(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	missed := 0
	got := runSilence(t, silenceGappy, min5ns, func(int) bool {
		if r.Float64() < 0.3 {
			missed++
			return false
		}
		return true
	})
	if missed < 1000 {
		t.Fatalf("only %d buckets missed: not gappy", missed)
	}
	if len(got) != 0 {
		t.Fatalf("a series missing 30 %% of its buckets at random raised %v", got)
	}
}

func TestFeedHealthFiresOnceForASilentFeed(t *testing.T) {
	// Steady for three days, silent for six hours (72 buckets), back.
	from, to := 3*288, 3*288+72
	got := runSilence(t, silenceSteady, min5ns, func(i int) bool { return i < from || i >= to })
	want := []string{
		fmt.Sprintf("firing feed:test-steady %d", from),
		fmt.Sprintf("resolved feed:test-steady %d", from),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A feed whose signals declare a cadence is judged at it from the start.
func TestFeedHealthUsesTheDeclaredCadence(t *testing.T) {
	sig, err := obs.Declare(obs.SignalDef{Name: "test_silence_declared", Kind: obs.KindGauge, Feed: "test-declared",
		Agg: obs.Last, Cadence: 30 * 60e9})
	if err != nil {
		t.Fatal(err)
	}
	// Two reports, then silence: the declared step is known, so no warm-up.
	a := aggregate.New(aggregate.Config{})
	d := NewFeedSilence(3)
	var got []string
	for i := int64(0); i < 48; i++ { // four hours of 5-minute buckets
		ts := silenceT0 + i*min5ns
		if i == 0 || i == 6 {
			a.Observe(&obs.Observation{Time: ts + 1, Signal: sig, Entity: "country:UG", Value: 1})
		}
		a.Advance(ts, func(c *aggregate.Closed) {
			d.Bucket(c, func(f Finding) { got = append(got, fmt.Sprintf("%s %d", f.Status, (f.At-silenceT0)/min5ns)) })
		})
	}
	// Empty from bucket 7; with a prior of one miss in two the silence must
	// last 20 steps of 6 buckets before it is unlikely enough.
	if len(got) != 0 {
		t.Fatalf("fired within four hours of a fresh 30-minute feed: %v", got)
	}
	if st := d.Feeds["test-declared"]; st == nil || st.Step != 6 || !st.Declared {
		t.Fatalf("state %+v", st)
	}
}

// A feed declared at five minutes whose export holds a row every two
// hours (IODA's signals thinned) is silent in its first three gaps, as
// far as anyone can tell; their three gaps show its own step, at which it
// reports every two hours, no silence, for the rest of two weeks. Judged
// at its declaration it raised an alert at every gap, none of them learnt.
func TestFeedHealthTakesACoarserStepThanDeclared(t *testing.T) {
	sig, err := obs.Declare(obs.SignalDef{Name: "test_silence_thinned", Kind: obs.KindGauge, Feed: "test-thinned",
		Agg: obs.Last, Cadence: min5ns})
	if err != nil {
		t.Fatal(err)
	}
	got := runSilence(t, sig, min5ns, func(i int) bool { return i%24 == 0 })
	var want []string
	for _, gap := range []int{1, 25, 49} {
		want = append(want, fmt.Sprintf("firing feed:test-thinned %d", gap), fmt.Sprintf("resolved feed:test-thinned %d", gap))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
