package detectors

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/outagewatch/outagewatch/series"
)

// The incremental baselines must give what recomputing from the ring
// gives, bucket for bucket, through everything that changes a ring:
// gaps, zeros, outliers overwritten afterwards, rebases, a history that
// rescales, and rings shorter than the window.
func TestIncrementalBaselinesMatchRecomputed(t *testing.T) {
	const w = int64(300e9)
	cases := []struct {
		name string
		f    *series.Format
		n    int
		// before: traffic_drop judges a bucket before its value is
		// stored, as the aggregator calls it
		before bool
	}{
		{"two weeks, default format", series.Default, 4032, true},
		{"two weeks, judged after stored", series.Default, 4032, false},
		{"two weeks, 0.1 % format", series.FormatFor(0.001), 4032, true},
		{"nine days", series.Default, 9 * 288, true},
		{"nine days and a bucket", series.Default, 9*288 + 1, false},
		{"nineteen days: four similar days once full", series.Default, 19 * 288, true},
		{"nineteen days, judged after stored", series.Default, 19 * 288, false},
		{"nineteen days less a bucket: four similar days after a skipped bucket", series.Default, 19*288 - 1, true},
		{"five hours", series.Default, 60, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.n)))
			r := series.NewFormat(tc.f, tc.n, w)
			var (
				meds      [2]windowMedian
				rk        dayRanker
				scratch   []float64
				ranked    int
				medians   int
				rankedAt  int64
				hourly    []int16
				td        = &trafficDrop{p: *DefaultTrafficDrop()}
				st        dropState
				baselines int
				ahead     int // baselines computed an hour ahead
				lastValue = 1000.0
				every     = int64(3600e9)
			)
			t0 := int64(1700006400e9)
			for b := range max(20*288, tc.n+2*288) {
				ts := t0 + int64(b)*w
				if rng.IntN(50) == 0 {
					continue // no point this bucket: no call, no store
				}
				// the window median, as prefix_withdrawal asks for it
				for i, window := range []Duration{Duration(6 * 3600e9), Duration(24 * 3600e9)} {
					want, wok := recentMedian(r, ts, w, window, Duration(3600e9), &scratch)
					got, gok := meds[i].median(r, ts, w, window, Duration(3600e9))
					if got != want || gok != wok {
						t.Fatalf("bucket %d: window median %v %v, recomputed %v %v", b, got, gok, want, wok)
					}
					if gok {
						medians++
					}
				}
				// the similar days, as traffic_drop asks for them: ranked
				// hourly, now and then after a longer pause
				days := 0
				for k := 1; k <= 28 && ts-int64(k)*dayNs >= r.Oldest(); k++ {
					days = k
				}
				if days > 0 && (rankedAt == 0 || ts-rankedAt >= every) {
					hourly = rk.rank(r, ts, w, days, hourly[:0])
					rankedAt = ts
					if want := rankDays(r, ts, w, days, nil); !slices.Equal(hourly, want) {
						t.Fatalf("bucket %d: ranking %v, recomputed %v", b, hourly, want)
					}
					ranked++
					every = []int64{3600e9, 3600e9, 3600e9, 5400e9, 3 * 3600e9}[rng.IntN(5)]
				}
				// the bucket's value: a daily cycle with noise, now and
				// then a zero, a missing value or a jump (a rebase)
				hour := float64(b%288) / 288 * 2 * math.Pi
				v := lastValue * (1 + 0.5*math.Sin(hour)) * (1 + 0.1*rng.NormFloat64())
				switch rng.IntN(200) {
				case 0:
					v = 0
				case 1:
					v = math.NaN()
				case 2:
					// up (a rebase) and back down, so that the
					// history keeps a shape within the ring's span
					if lastValue > 1000 {
						lastValue /= 30
					} else {
						lastValue *= 30
					}
				}
				if !tc.before {
					r.Put(ts, v)
				}
				// traffic_drop's baseline, read through its columns,
				// against previousDays, smoothedAt and median
				got, gmethod, gok := td.baseline(&st, r, ts, w)
				want, wmethod, wok := recomputedBaseline(&td.p, st.Similar, r, ts, w)
				if math.Float64bits(got) != math.Float64bits(want) || gmethod != wmethod || gok != wok {
					t.Fatalf("bucket %d: baseline %v %s %v, recomputed %v %s %v", b, got, gmethod, gok, want, wmethod, wok)
				}
				if gmethod == "similar_days" && st.SimilarAt == ts {
					if want := rankDays(r, ts, w, len(st.Similar), nil); !slices.Equal(st.Similar, want) {
						t.Fatalf("bucket %d: traffic_drop ranking %v, recomputed %v", b, st.Similar, want)
					}
				}
				if gok {
					baselines++
				}
				if _, _, hit := st.ahead.get(r, ts, w); hit {
					ahead++
				}
				if tc.before {
					r.Put(ts, v)
				}
				switch rng.IntN(300) {
				case 0: // an outlier replaced by its prediction afterwards
					r.Put(ts-w*int64(rng.IntN(10)), lastValue)
				case 1: // a new level accepted: the history rescaled
					for x := r.Oldest(); x <= ts; x += w {
						if v, ok := r.Get(x); ok {
							r.Put(x, v*0.5)
						}
					}
				}
			}
			if medians < 1000 || (tc.n >= 7*288 && ranked < 100) || (tc.n >= 2*288 && baselines < 1000) || (tc.n >= 7*288 && ahead < 1000) {
				t.Fatalf("only %d medians, %d rankings and %d baselines (%d from an hour ahead) compared", medians, ranked, baselines, ahead)
			}
		})
	}
}

// recomputedBaseline is traffic_drop's baseline read straight from the
// ring, given the ranking of similar days: what its columns must give.
func recomputedBaseline(p *TrafficDrop, similar []int16, r *series.Ring, t, w int64) (float64, string, bool) {
	days := 0
	for k := 1; k <= p.MaxDays && t-int64(k)*dayNs >= r.Oldest(); k++ {
		days = k
	}
	if days == 0 {
		return 0, "", false
	}
	if days < 7 {
		vs := previousDays(r, t, w, days, nil)
		if len(vs) == 0 {
			return 0, "", false
		}
		return median(vs), "previous_days", true
	}
	k := min(max(3, days*6/28), 6)
	var vs []float64
	for _, day := range similar {
		if len(vs) == k {
			break
		}
		if v, ok := smoothedAt(r, t-int64(day)*dayNs, w); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, "", false
	}
	return median(vs), "similar_days", true
}

// Every day's column, slid bucket by bucket, must read what smoothedAt
// reads, including the day whose earliest bucket leaves the ring as the
// window slides (a ring that is not a whole number of days long).
func TestDayColumnsMatchSmoothedAt(t *testing.T) {
	const w = int64(300e9)
	for _, n := range []int{2*288 + 1, 3*288 + 7, 4 * 288} {
		rng := rand.New(rand.NewPCG(3, uint64(n)))
		r := series.New(n, w)
		var cols [4]dayColumns
		t0 := int64(1700006400e9)
		slid, evicted := 0, 0
		for b := range 6 * 288 {
			ts := t0 + int64(b)*w
			v := 1000 * (1 + 0.2*rng.NormFloat64())
			if rng.IntN(20) == 0 {
				v = math.NaN()
			}
			r.Put(ts, v)
			if rng.IntN(500) == 0 {
				r.Put(ts-w*int64(rng.IntN(5)), 900)
			}
			for d := 1; d <= len(cols); d++ {
				c := &cols[d-1]
				slide := c.slides(r, ts, w, true)
				got, gok := c.smoothed(r, ts, w, 0, d, slide)
				c.done(r, ts, 1, true)
				want, wok := smoothedAt(r, ts-int64(d)*dayNs, w)
				if math.Float64bits(got) != math.Float64bits(want) || gok != wok {
					t.Fatalf("ring of %d, bucket %d, day %d: %v %v, smoothedAt %v %v", n, b, d, got, gok, want, wok)
				}
				if slide {
					slid++
					// a bucket the column kept has left the ring
					if ts-int64(d)*dayNs-w <= r.Last()-int64(r.Len())*w && ts-int64(d)*dayNs-w > r.Last()-int64(r.Len()+2)*w {
						evicted++
					}
				}
			}
		}
		if slid < 1000 || (n == 2*288+1 && evicted == 0) {
			t.Fatalf("ring of %d: %d slides, %d past an evicted bucket", n, slid, evicted)
		}
	}
}
