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
				st        dropSeries
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
					got, gok := meds[i].median(r, ts, w, w, window, Duration(3600e9))
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
				// traffic_drop's baseline, computed an hour ahead,
				// against previousDays, smoothedAt and median
				got, gmethod, gok := td.baseline(&st, r, ts, w)
				var similar []int16
				if gmethod == "similar_days" {
					similar = st.Similar
				}
				want, wmethod, wok := baselineFromRing(&td.p, similar, r, ts, w)
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
				if _, _, _, hit := st.ahead.get(r, ts, w, gmethod == "similar_days"); hit {
					ahead++
				}
				// the quality detectors' previous days, read by column
				for _, n := range []int{3, 7, 40} {
					got, want := previousDaysByColumn(r, ts, w, n, nil), previousDays(r, ts, w, n, nil)
					if !slices.EqualFunc(got, want, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
						t.Fatalf("bucket %d: previous %d days %v, recomputed %v", b, n, got, want)
					}
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

// unlearnAt takes back the last residual exactly, in both of learnAt's
// phases: a plain mean while an hour has few residuals, and the
// exponentially weighted one after.
func TestUnlearnInvertsLearn(t *testing.T) {
	for _, n := range []int{0, 1, 5, 47, 48, 200} {
		var m noiseModel
		for i := range n {
			m.learnAt(3, 0.05+0.01*float64(i%7))
		}
		before := m
		m.learnAt(3, -0.7)
		m.unlearnAt(3, -0.7)
		if m.N[3] != before.N[3] || math.Abs(float64(m.Abs[3]-before.Abs[3])) > 1e-6 {
			t.Errorf("after %d residuals: learn then unlearn gives %v × %d, want %v × %d", n, m.Abs[3], m.N[3], before.Abs[3], before.N[3])
		}
		// A drop learnt while the hour is unknown is capped at the bar,
		// and taken back as capped.
		m.learnDropAt(3, -0.9, 0.5)
		if n < 2 {
			capped := before
			capped.learnAt(3, -0.5)
			if m.Abs[3] != capped.Abs[3] {
				t.Errorf("after %d residuals: a drop of 0.9 learnt as %v, want the bar's %v", n, m.Abs[3], capped.Abs[3])
			}
		}
		m.unlearnDropAt(3, -0.9, 0.5)
		if m.N[3] != before.N[3] || math.Abs(float64(m.Abs[3]-before.Abs[3])) > 1e-6 {
			t.Errorf("after %d residuals: learnDropAt then unlearnDropAt gives %v × %d, want %v × %d", n, m.Abs[3], m.N[3], before.Abs[3], before.N[3])
		}
	}
}

// The confidence bound of the median absolute deviation shrinks as the
// readings grow, and the normal approximation takes over from the
// simulated table without a step.
func TestMadBoundShrinksSmoothly(t *testing.T) {
	if b := madBound(1); !math.IsInf(b, 1) {
		t.Fatalf("madBound(1) = %v, want +Inf: one reading has no spread", b)
	}
	for n := 8; n < 400; n++ {
		if madBound(n+2) >= madBound(n) {
			t.Fatalf("madBound(%d) = %v, not under madBound(%d) = %v", n+2, madBound(n+2), n, madBound(n))
		}
	}
	if r := madBound(73) / madBound(72); r < 0.99 || r > 1 {
		t.Fatalf("madBound(73)/madBound(72) = %v: a step where the approximation takes over", r)
	}
}

// rankNeeded's j is the least for which the lowest of k exchangeable
// values lies above the j lowest of m with probability C(m+k−j, k)/C(m+k, k)
// at most alpha, worked out here by counting orders.
func TestRankNeeded(t *testing.T) {
	chance := func(m, k, j int) float64 {
		lc := func(n, r int) float64 {
			a, _ := math.Lgamma(float64(n + 1))
			b, _ := math.Lgamma(float64(r + 1))
			c, _ := math.Lgamma(float64(n - r + 1))
			return a - b - c
		}
		return math.Exp(lc(m+k-j, k) - lc(m+k, k))
	}
	for _, c := range []struct {
		m, k  int
		alpha float64
		want  int
	}{
		{3, 1, 0.5, 2},                      // one new value above two of three: 2 of 4 places
		{3, 1, 0.25, 3},                     // above all three: 1 of 4
		{3, 1, 0.1, 3},                      // out of reach: all of them
		{72, 7, 30.0 / (365 * 24 * 60), 58}, // the shipped rule on six hours of 5-minute buckets
		{24, 7, 30.0 / (365 * 24 * 60), 21}, // on its two hours of min_history
	} {
		got := rankNeeded(c.m, c.k, c.alpha)
		if got != c.want {
			t.Errorf("rankNeeded(%d, %d, %g) = %d, want %d", c.m, c.k, c.alpha, got, c.want)
		}
		if got < c.m && (chance(c.m, c.k, got) > c.alpha*(1+1e-9) || got > 1 && chance(c.m, c.k, got-1) <= c.alpha) {
			t.Errorf("rankNeeded(%d, %d, %g) = %d: chance %g there, %g one lower", c.m, c.k, c.alpha, got, chance(c.m, c.k, got), chance(c.m, c.k, got-1))
		}
	}
}
