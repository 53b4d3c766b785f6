package detectors_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/obs/quality"
)

// probeRun replays one RTT sample every five minutes (at minute two of
// each bucket) through the shipped latency_shift defaults and returns the
// findings as "status start at reason end" in minutes from the first
// sample (end only on a resolve).
func probeRun(t *testing.T, rtt func(min int) float64, hours int) []string {
	return probeRunRestored(t, rtt, hours, -1)
}

// probeRunRestored is probeRun with the detector checkpointed and restored
// into a new one at minute restoreAt.
func probeRunRestored(t *testing.T, rtt func(min int) float64, hours, restoreAt int) []string {
	return probeRunEvery(t, rtt, hours, restoreAt, 5)
}

// probeRunEvery is probeRunRestored with a sample every `every` minutes
// (from minute two).
func probeRunEvery(t *testing.T, rtt func(min int) float64, hours, restoreAt, every int) []string {
	t.Helper()
	got, _ := probeDetector(t, rtt, hours, restoreAt, every)
	return got
}

// probeDetector is probeRunEvery, and the detector as it ends.
func probeDetector(t *testing.T, rtt func(min int) float64, hours, restoreAt, every int) ([]string, detectors.Detector) {
	t.Helper()
	const entity = "probe:1>192.0.2.0/24"
	p := detectors.DefaultLatencyShift()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	d := p.Build("probe-latency-shift")
	t0 := time.Date(2016, 11, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	min := func(ns int64) int64 { return (ns - t0) / int64(time.Minute) }
	var got []string
	judge := func(c *aggregate.Closed) {
		d.Bucket(c, c.Points, func(f detectors.Finding) {
			s := fmt.Sprintf("%s %d %d", f.Status, min(f.Start), min(f.At))
			if f.Status == detectors.Resolved {
				s += fmt.Sprintf(" %s %d", f.Reason, min(f.End))
			}
			got = append(got, s)
		})
	}
	agg := aggregate.New(aggregate.Config{})
	for m := 2; m < hours*60; m += every {
		ts := t0 + int64(m)*int64(time.Minute)
		if m == restoreAt {
			b, err := d.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			d = p.Build("probe-latency-shift")
			if err := d.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
		}
		agg.Observe(&obs.Observation{Time: ts, Signal: quality.LatencyP50, Entity: entity, Value: rtt(m)})
		agg.Advance(ts, judge)
	}
	agg.Advance(t0+int64(hours+1)*int64(time.Hour), judge)
	return got, d
}

// jitter is a deterministic ±0.6 ms wobble around a flat path's RTT.
func jitter(m int) float64 { return float64(m*7%13-6) / 10 }

func TestLatencyShiftLastingShiftAdapts(t *testing.T) {
	// 100 ms for four hours, then 130 ms for good (a re-route): one alert
	// dated to the bucket of the move (minute 240), raised once the new
	// level has held 30 minutes, resolved as baseline_adapted two hours
	// after the onset; the new level then is the baseline, nothing more.
	got := probeRun(t, func(m int) float64 {
		if m >= 240 {
			return 130 + jitter(m)
		}
		return 100 + jitter(m)
	}, 12)
	want := []string{"firing 240 275", "resolved 240 360 baseline_adapted 360"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestLatencyShiftOnset(t *testing.T) {
	cases := []struct {
		name string
		rtt  func(m int) float64
		want []string
	}{
		// One bucket at +4 % just before a jump is not a level: the onset
		// is the jump.
		{"blip on the eve", func(m int) float64 {
			switch {
			case m >= 240:
				return 130 + jitter(m)
			case m >= 235:
				return 104
			}
			return 100 + jitter(m)
		}, []string{"firing 240 275", "resolved 240 360 baseline_adapted 360"}},
		// A ramp: +8 % for 40 minutes, then +40 %. It fires when the
		// +40 % has held 30 minutes; it began with the first step.
		{"ramp", func(m int) float64 {
			switch {
			case m >= 280:
				return 140 + jitter(m)
			case m >= 240:
				return 108 + jitter(m)
			}
			return 100 + jitter(m)
		}, []string{"firing 240 315", "resolved 240 360 baseline_adapted 360"}},
	}
	for _, c := range cases {
		if got := probeRun(t, c.rtt, 12); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// A probe measured every 16 minutes, on 5-minute buckets, lands 15 and
// 20 minutes apart: its grid is 5 minutes and two buckets in three are
// empty. Counted in buckets it never had the history or the level window
// the rule asks for and was never judged; counted in its readings, a
// re-route from 100 to 150 ms fires once the new level has held 30
// minutes (its third reading, 32 minutes after the first), dated from
// its first reading.
func TestLatencyShiftOnASparseProbe(t *testing.T) {
	got := probeRunEvery(t, func(m int) float64 {
		if m >= 482 {
			return 150 + jitter(m)
		}
		return 100 + jitter(m)
	}, 12, -1, 16)
	want := []string{"firing 480 515", "resolved 480 615 baseline_adapted 615"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// A shift that recovers and comes back within the hold (an hour) is the
// same alert, with the start it had, and the two hours after which a
// shift is the new normal count from that start: a path that has sat at
// the higher level for most of two hours, with one return, has moved.
// One that comes back after the hold to a level the path has not held is
// a new alert. One that comes back to the level it held for a third of
// the hours before is a path taking two routes in turn, and pages nobody:
// chance alone puts a half hour at that level often (see the rank bar,
// TestLatencyShiftJitteryPathPagesNobody).
func TestLatencyShiftReturnWithinTheHold(t *testing.T) {
	up := func(m, from, to int) bool { return m >= from && m < to }
	run := func(third float64) []string {
		return probeRun(t, func(m int) float64 {
			switch {
			case up(m, 240, 290) || up(m, 330, 380):
				return 130 + jitter(m)
			case up(m, 520, 570):
				return third + jitter(m)
			}
			return 100 + jitter(m)
		}, 12)
	}
	first := []string{
		"firing 240 275", "resolved 240 305 recovered 290",
		"firing 240 365", "resolved 240 370 baseline_adapted 370",
	}
	if got, want := run(160), append(first, "firing 520 555", "resolved 520 585 recovered 570"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("third at a new level: got %q\nwant %q", got, want)
	}
	if got := run(130); fmt.Sprint(got) != fmt.Sprint(first) {
		t.Errorf("third at the level held before: got %q\nwant %q", got, first)
	}
}

func TestLatencyShiftCheckpointMidShift(t *testing.T) {
	// Restored while the shift fires (minute 262, before it is raised),
	// the detector goes on as if never stopped: the recent RTT it dates
	// the onset by is part of its state.
	rtt := func(m int) float64 {
		if m >= 240 {
			return 130 + jitter(m)
		}
		return 100 + jitter(m)
	}
	want := probeRun(t, rtt, 12)
	if got := probeRunRestored(t, rtt, 12, 262); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("restored: got %q\nwant %q", got, want)
	}
}

func TestLatencyShiftRecovers(t *testing.T) {
	// 130 ms for an hour, then back: resolved as recovered once most of
	// the last 20 minutes is back, the end dated to that window's start.
	got := probeRun(t, func(m int) float64 {
		if m >= 240 && m < 300 {
			return 130 + jitter(m)
		}
		return 100 + jitter(m)
	}, 8)
	want := []string{"firing 240 275", "resolved 240 315 recovered 300"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestLatencyShiftIgnoresSpikesFlapsAndSmallShifts(t *testing.T) {
	cases := map[string]func(m int) float64{
		// Queueing: a sample of 400 ms every twenty minutes.
		"spikes": func(m int) float64 {
			if m >= 240 && m%20 == 2 {
				return 400
			}
			return 100 + jitter(m)
		},
		// Two routes taken in turn (ECMP): the shorter is still there.
		"flapping": func(m int) float64 {
			if m >= 240 && m%10 == 2 {
				return 140 + jitter(m)
			}
			return 100 + jitter(m)
		},
		// A 25-minute excursion is not a new level of 30 minutes.
		"short": func(m int) float64 {
			if m >= 240 && m < 265 {
				return 200 + jitter(m)
			}
			return 100 + jitter(m)
		},
		// +15 %: under the threshold.
		"small": func(m int) float64 {
			if m >= 240 {
				return 115 + jitter(m)
			}
			return 100 + jitter(m)
		},
	}
	for name, rtt := range cases {
		if got := probeRun(t, rtt, 10); len(got) != 0 {
			t.Errorf("%s: got %q, want no finding", name, got)
		}
	}
}

// queued is a path whose samples queue 40 ms over its lowest RTT, base,
// in one five-minute bucket of every `every`.
func queued(m int, base float64, every int) float64 {
	if (m/5)%every == 0 {
		return base + 40 + jitter(m)
	}
	return base + jitter(m)
}

// clearIn is a path whose samples queue 40 ms over its lowest RTT, base,
// but in one five-minute bucket of every `every`.
func clearIn(m int, base float64, every int) float64 {
	if (m/5)%every == 0 {
		return base + jitter(m)
	}
	return base + 40 + jitter(m)
}

func TestLatencyShiftJudgesTheLowestAgainstTheLowest(t *testing.T) {
	// The path's lowest RTT moves from 100 to 125 ms (+25 %) while one
	// sample in eight queues 40 ms on top: the level is the lowest of the
	// half hour, which the queued samples do not move. The queued new
	// level stays over the old median's resolve bar, so the shift is
	// adopted after two hours.
	got := probeRun(t, func(m int) float64 {
		if m >= 240 {
			return queued(m, 125, 8)
		}
		return queued(m, 100, 8)
	}, 12)
	want := []string{"firing 240 275", "resolved 240 360 baseline_adapted 360"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// The same queueing with no move pages nobody.
	if got := probeRun(t, func(m int) float64 { return queued(m, 100, 8) }, 12); len(got) != 0 {
		t.Errorf("no move: got %q, want no finding", got)
	}
	// Where two buckets in three queue, a half hour without a clear one
	// is what chance gives in one of seventeen, were the queueing at
	// random: the same move is not told from it, and pages nobody.
	if got := probeRun(t, func(m int) float64 {
		if m >= 240 {
			return clearIn(m, 125, 3)
		}
		return clearIn(m, 100, 3)
	}, 12); len(got) != 0 {
		t.Errorf("two in three queued: got %q, want no finding", got)
	}
}

// A probe every four minutes on a path where every sample queues by
// chance, half of them 20 % or more over the path's delay (100 ms times
// e to the 0.3·|z|, z normal): the lowest of a half hour climbs 20 % over
// the usual in one window of a few hundred, so against the floor and its
// noise alone this path paged five to seven times a week. A week of it
// pages nobody. A re-route to 200 ms on the same path is a shift,
// dated to the move.
func TestLatencyShiftJitteryPathPagesNobody(t *testing.T) {
	path := func(seed uint64, moveAt int) func(int) float64 {
		rng := rand.New(rand.NewPCG(seed, 1))
		return func(m int) float64 {
			base := 100.0
			if moveAt >= 0 && m >= moveAt {
				base = 200
			}
			return base * math.Exp(0.3*math.Abs(rng.NormFloat64()))
		}
	}
	for seed := range uint64(3) {
		if got := probeRunEvery(t, path(seed, -1), 7*24, -1, 4); len(got) != 0 {
			t.Errorf("seed %d: got %q, want no finding", seed, got)
		}
	}
	got := probeRunEvery(t, path(0, 24*60), 30, -1, 4)
	want := []string{"firing 1440 1475", "resolved 1440 1560 baseline_adapted 1560"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("re-route: got %q\nwant %q", got, want)
	}
}

// A probe whose jitter puts its noise bars above the rule's threshold is
// named as too jittery to be judged at it, and one as steady as most
// paths is not: the queueing path above (a 20 % shift of its lowest RTT
// lies under three buckets in ten of its own), a path whose buckets
// queue two in three, and a flat one.
func TestLatencyShiftNamesAPathTooJitteryForItsThreshold(t *testing.T) {
	const name = "latency_p50 probe:1>192.0.2.0/24"
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		name string
		rtt  func(int) float64
		want []string
	}{
		{"queueing", func(int) float64 { return 100 * math.Exp(0.3*math.Abs(rng.NormFloat64())) }, []string{name}},
		{"two in three queued", func(m int) float64 { return clearIn(m, 100, 3) }, []string{name}},
		{"one in eight queued", func(m int) float64 { return queued(m, 100, 8) }, nil},
		{"flat", func(m int) float64 { return 100 + jitter(m) }, nil},
	} {
		findings, d := probeDetector(t, c.rtt, 12, -1, 4)
		if got := d.(detectors.Unjudgeable).Unjudgeable(); len(findings) != 0 || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: unjudgeable %q, findings %q; want %q and none", c.name, got, findings, c.want)
		}
	}
}

func TestLatencyShiftValidate(t *testing.T) {
	p := detectors.DefaultLatencyShift()
	p.AdaptAfter = p.For
	if err := p.Validate(); err == nil {
		t.Error("adapt_after equal to for: want an error")
	}
	p.AdaptAfter = 0
	if err := p.Validate(); err != nil {
		t.Errorf("adapt_after 0 (never): %v", err)
	}
	p.BaselineWindow = detectors.Duration(25 * time.Hour)
	if err := p.Validate(); err == nil {
		t.Error("baseline_window 25h: want an error")
	}
}
