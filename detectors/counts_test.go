package detectors_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/detectors"
	ingestquality "github.com/outagewatch/outagewatch/ingest/quality"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/obs/quality"
	"github.com/outagewatch/outagewatch/rules"
)

// poisson draws a Poisson count of mean lambda (Knuth's method: fine for
// the small means here).
func poisson(rng *rand.Rand, lambda float64) float64 {
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return float64(k)
		}
		k++
	}
}

// iodaRules loads the shipped IODA rules and looks up signal, one they
// declare (loading them declares it).
func iodaRules(t *testing.T, signal string) (*rules.Set, obs.Signal) {
	t.Helper()
	set, err := rules.Load("../examples/ioda/ioda.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sig, ok := obs.Lookup(signal)
	if !ok {
		t.Fatalf("the IODA rules declare no signal %s", signal)
	}
	return set, sig
}

// judgeSeries feeds one series, a value every step, through every rule of
// set that watches it, and returns the firings and resolves in order.
func judgeSeries(t *testing.T, set *rules.Set, sig obs.Signal, entity string, from time.Time, step time.Duration, vs []float64) []detectors.Finding {
	t.Helper()
	var ds []detectors.Detector
	for _, r := range set.Rules {
		if r.Matches(sig, entity) {
			ds = append(ds, r.Params.Build(r.Name))
		}
	}
	if len(ds) == 0 {
		t.Fatalf("no rule watches %s of %s", sig, entity)
	}
	return feedSeries(sig, entity, from, step, vs, ds...)
}

// feedSeries feeds one series, a value every step, through detectors ds,
// and returns their firings and resolves in order.
func feedSeries(sig obs.Signal, entity string, from time.Time, step time.Duration, vs []float64, ds ...detectors.Detector) []detectors.Finding {
	agg := aggregate.New(aggregate.Config{})
	var out []detectors.Finding
	judge := func(c *aggregate.Closed) {
		for _, d := range ds {
			d.Bucket(c, c.Points, func(f detectors.Finding) { out = append(out, f) })
		}
	}
	for i, v := range vs {
		ts := from.Add(time.Duration(i) * step).UnixNano()
		agg.Observe(&obs.Observation{Time: ts, Signal: sig, Entity: entity, Value: v})
		agg.Advance(ts, judge)
	}
	agg.Advance(from.Add(time.Duration(len(vs)+1)*step).UnixNano(), judge)
	return out
}

// A region where 2 to 20 /24s answer active probing, with nothing wrong
// but a count's own Poisson noise, is judged by the shipped IODA rules for
// two weeks and stays silent: one block more or less is 5 to 50 % of it,
// and IODA's 20 % bar alone would page at random. The same for a
// telescope that sees 2 to 20 sources a minute, whose values are, as in
// IODA's exports, the mean of five such counts. The same series falling
// to 0 for an hour fires.
func TestIODARulesSilentOnAPoissonCount(t *testing.T) {
	set, err := rules.Load("../examples/ioda/ioda.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"active_probing_slash24", "telescope_sources"} {
		sig, ok := obs.Lookup(name)
		if !ok {
			t.Fatalf("the IODA rules declare no %s", name)
		}
		step := time.Duration(sig.Def().Cadence)
		rng := rand.New(rand.NewPCG(7, 11))
		from := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
		n := int(14 * 24 * time.Hour / step)
		var vs []float64
		lo, hi := math.Inf(1), 0.0
		k := int(max(sig.Def().MeanOf, 1))
		for range n {
			sum := 0.0
			for range k {
				c := poisson(rng, 10)
				lo, hi = min(lo, c), max(hi, c)
				sum += c
			}
			vs = append(vs, sum/float64(k))
		}
		if lo > 2 || hi < 18 {
			t.Fatalf("%s: the counts span %v..%v, want about 2..20", name, lo, hi)
		}
		if f := judgeSeries(t, set, sig, "region:XX-1", from, step, vs); len(f) != 0 {
			t.Fatalf("%s: a Poisson count of 10 paged: %+v", name, f[0])
		}
		outage := n - int(6*time.Hour/step)
		for i := outage; i < outage+int(time.Hour/step); i++ {
			vs[i] = 0
		}
		f := judgeSeries(t, set, sig, "region:XX-1", from, step, vs)
		if len(f) == 0 || f[0].Status != detectors.Firing || f[0].Start != from.Add(time.Duration(outage)*step).UnixNano() {
			t.Fatalf("%s: an hour at 0 from %s: findings %+v, want a firing from then", name, from.Add(time.Duration(outage)*step), f)
		}
	}
}

// A telescope that sees about 3 sources a minute, reported as the mean
// of five minutes' counts (√(3/5) = 0.77 of noise, 26 %), falls to 0.2
// (one source in five minutes) for an hour: 3.6σ down, and past the
// telescope rule's 75 %, it fires. The same values judged as single
// counts (√3 = 1.7 of noise, 58 %) are too small to judge at all, and
// are reported so.
func TestIODARulesJudgeATelescopeAsTheMeanOfFiveCounts(t *testing.T) {
	set, sig := iodaRules(t, "telescope_sources")
	if got := sig.Def().MeanOf; got != 5 {
		t.Fatalf("telescope_sources is the mean of %v counts, want 5 (a minute's, over 5 minutes)", got)
	}
	var rule *rules.Rule
	for _, r := range set.Rules {
		if r.Name == "ioda-telescope" {
			rule = r
		}
	}
	plainDef := *sig.Def()
	plainDef.Name, plainDef.MeanOf = "telescope_single_counts", 0
	plain, err := obs.Declare(plainDef)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 2))
	step := time.Duration(sig.Def().Cadence)
	from := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	vs := make([]float64, 3*24*time.Hour/step)
	outage := len(vs) - int(6*time.Hour/step)
	for i := range vs {
		sum := 0.0
		for range 5 {
			sum += poisson(rng, 3)
		}
		vs[i] = sum / 5
		if i >= outage && i < outage+int(time.Hour/step) {
			vs[i] = 0.2
		}
	}
	d := rule.Params.Build(rule.Name)
	f := feedSeries(sig, "region:XX-5", from, step, vs, d)
	if len(f) == 0 || f[0].Status != detectors.Firing || f[0].Start != from.Add(time.Duration(outage)*step).UnixNano() {
		t.Fatalf("an hour at 0.2 of 3 from %s: findings %+v, want a firing from then", from.Add(time.Duration(outage)*step), f)
	}
	// Named as itself, to the tenth of a source: not "announced space",
	// nor 0.2 rounded to 0.
	if want := "telescope_sources of region:XX-5 down 93.3%: 0.2 of 3 unique source IPs"; f[0].Summary != want {
		t.Errorf("summary %q, want %q", f[0].Summary, want)
	}
	d = rule.Params.Build(rule.Name)
	if f := feedSeries(plain, "region:XX-5", from, step, vs, d); len(f) != 0 {
		t.Fatalf("judged as single counts, the same series paged: %+v", f[0])
	}
	if got := d.(detectors.Unjudgeable).Unjudgeable(); len(got) != 1 || got[0] != "telescope_single_counts region:XX-5" {
		t.Fatalf("judged as single counts: unjudgeable %v, want the region's series", got)
	}
}

// The real RIPE Atlas sample, decoded as a user's file is, makes series
// that the shipped rules judge: every probe series of latency_min has a
// rule.
func TestShippedRulesJudgeTheRealAtlasSample(t *testing.T) {
	b, err := os.ReadFile("../../shared/testdata/atlas/ping-results.jsonl")
	if err != nil {
		t.Fatalf("the real Atlas sample: %v", err)
	}
	set, err := rules.Default()
	if err != nil {
		t.Fatal(err)
	}
	d := ingestquality.NewAtlasDecoder(netmap.New())
	probes := map[string]bool{}
	sink := obs.SinkFunc(func(o *obs.Observation) {
		if o.Signal == quality.LatencyMin && strings.HasPrefix(o.Entity, "probe:") {
			probes[o.Entity] = true
		}
	})
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if err := d.Decode(line, sink); err != nil {
			t.Fatalf("decode: %v", err)
		}
	}
	if len(probes) < 3 {
		t.Fatalf("the sample makes %d probe series, want its three probes' at least", len(probes))
	}
	for e := range probes {
		judged := false
		for _, r := range set.Rules {
			judged = judged || r.Matches(quality.LatencyMin, e)
		}
		if !judged {
			t.Errorf("no shipped rule judges latency_min of %s", e)
		}
	}
}

// A count of about 4 /24s cannot be judged: its own spread (a Poisson
// count of 4 strays by about 3 either way) times the bar of two rounds
// in a row (1.79σ) is more than all of it, so not even a drop to zero
// stands out. The rule says so rather than paging at random, and a real
// 0 does not page either.
func TestIODARulesReportATooSmallCount(t *testing.T) {
	set, sig := iodaRules(t, "active_probing_slash24")
	var rule *rules.Rule
	for _, r := range set.Rules {
		if r.Name == "ioda-active-probing" {
			rule = r
		}
	}
	d := rule.Params.Build(rule.Name)
	rng := rand.New(rand.NewPCG(3, 5))
	step := time.Duration(sig.Def().Cadence)
	vs := make([]float64, 3*24*time.Hour/step)
	for i := range vs {
		vs[i] = poisson(rng, 4)
		if i >= len(vs)-6 {
			vs[i] = 0
		}
	}
	fired := feedSeries(sig, "region:XX-2", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), step, vs, d)
	if len(fired) != 0 {
		t.Fatalf("a count of 4 paged: %+v", fired[0])
	}
	u, ok := d.(detectors.Unjudgeable)
	if !ok {
		t.Fatal("prefix_withdrawal does not report what it cannot judge")
	}
	if got := u.Unjudgeable(); len(got) != 1 || got[0] != "active_probing_slash24 region:XX-2" {
		t.Fatalf("unjudgeable %v, want the region's series", got)
	}
}

// halvedRounds is three days of rounds of active probing, one every
// step, of a region where about 30 /24s answer (Poisson), and the same
// halved for three hours from outage, six hours before the end: 15 to 17
// blocks a round, each 13 to 15 blocks (2.4σ to 2.7σ) short of 30, none
// of them the 16 that one round alone needs.
func halvedRounds(step time.Duration) (base, halved []float64, outage int) {
	rng := rand.New(rand.NewPCG(21, 4))
	n := int(3 * 24 * time.Hour / step)
	base = make([]float64, n)
	for i := range base {
		base[i] = poisson(rng, 30)
	}
	outage = n - int(6*time.Hour/step)
	halved = slices.Clone(base)
	for i := outage; i < outage+int(3*time.Hour/step); i++ {
		halved[i] = float64(15 + i%3)
	}
	return base, halved, outage
}

// A noisy count of about 30 /24s that halves for three hours, as a
// region's active probing does in a blackout that leaves its backup
// links up, is past IODA's 20 % on every round but no single round is
// three of its Poisson standard deviations (√30 × 3 = 16) down: the
// shipped IODA rule fires on its second round, dated from the first,
// because two rounds in a row past 1.79σ are as rare by chance as one
// past 3σ. One round at a third of normal, then back, pages nobody.
func TestIODARulesJudgeARunOfRounds(t *testing.T) {
	set, sig := iodaRules(t, "active_probing_slash24")
	step := time.Duration(sig.Def().Cadence)
	from := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	base, vs, outage := halvedRounds(step)
	f := judgeSeries(t, set, sig, "region:XX-3", from, step, vs)
	start := from.Add(time.Duration(outage) * step)
	if len(f) == 0 || f[0].Status != detectors.Firing || f[0].Start != start.UnixNano() || f[0].At != start.Add(2*step).UnixNano() {
		t.Fatalf("halved from %s: findings %+v, want a firing from then, raised after two rounds", start, f)
	}

	vs = slices.Clone(base)
	vs[outage] = 10
	if f := judgeSeries(t, set, sig, "region:XX-3", from, step, vs); len(f) != 0 {
		t.Fatalf("one round at 10: %+v", f[0])
	}
}

// A count whose level wanders slowly (a few blocks over hours, a
// deviation that carries from round to round) but less than its Poisson
// sampling noise is judged at that sampling noise, which is independent
// from round to round: the wander's carry is a small share of the larger
// variance. Two rounds at 78 against a median of 98 (2.1σ of the Poisson
// noise down, each past the 1.8σ or so that makes two in a row as rare
// as one round past 3σ) fire; judged as if the whole noise carried over
// as the wander does (rho near 1), each round had to be nearly 3σ down,
// and they paged nobody. One round at 78 pages nobody.
func TestIODARulesPoissonNoiseDoesNotCarryOver(t *testing.T) {
	set, sig := iodaRules(t, "active_probing_slash24")
	step := time.Duration(sig.Def().Cadence)
	from := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	n := int(2 * 24 * time.Hour / step)
	vs := make([]float64, n)
	for i := range vs {
		// ±3 blocks over six hours: σ about 2, well under √100.
		vs[i] = math.Round(100 + 3*math.Sin(2*math.Pi*float64(i)*step.Hours()/6))
	}
	outage := n - int(3*time.Hour/step)
	vs[outage], vs[outage+1] = 78, 78
	f := judgeSeries(t, set, sig, "region:XX-5", from, step, vs)
	start := from.Add(time.Duration(outage) * step)
	if len(f) == 0 || f[0].Status != detectors.Firing || f[0].Start != start.UnixNano() {
		t.Fatalf("two rounds at 78 of 100 from %s: findings %+v, want a firing from then", start, f)
	}
	vs[outage+1] = 100
	if f := judgeSeries(t, set, sig, "region:XX-5", from, step, vs); len(f) != 0 {
		t.Fatalf("one round at 78: %+v", f[0])
	}
}

// The same rounds exported every 15 minutes: on the signal's 10-minute
// buckets they land 10 and 20 minutes apart, one bucket in three empty.
// Each reading counts as the 15 minutes it stands for, so a day of them
// is the rule's day of history (counted at the 10-minute step it was 16
// hours, never a day, and the region was never judged), and the halving
// fires on its second reading.
func TestIODARulesJudgeAQuarterHourlyExport(t *testing.T) {
	set, sig := iodaRules(t, "active_probing_slash24")
	step := 15 * time.Minute
	from := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	_, vs, outage := halvedRounds(step)
	f := judgeSeries(t, set, sig, "region:XX-3", from, step, vs)
	start := from.Add(time.Duration(outage) * step)
	if len(f) == 0 || f[0].Status != detectors.Firing || f[0].Start != start.UnixNano() {
		t.Fatalf("halved from %s: findings %+v, want a firing from then", start, f)
	}
	cadence := time.Duration(sig.Def().Cadence)
	if at := start.Add(step).Truncate(cadence).Add(cadence); f[0].At != at.UnixNano() {
		t.Errorf("raised at %s, want %s: when the second reading's bucket closes", time.Unix(0, f[0].At).UTC(), at)
	}
}

// An hourly export judged by rules written for 5-minute data: the IODA
// BGP rule needs a day of history, which 24 hourly readings are (not 24
// five-minute buckets' worth), and a fifth of a country's space gone for
// four hours fires at the second reading, dated from the first: one
// reading of a 5-minute measurement cannot show that a drop lasted the
// rule's 10 minutes. Gone at one reading only, it pages nobody.
func TestIODARulesJudgeAnHourlyExport(t *testing.T) {
	set, sig := iodaRules(t, "bgp_visible_slash24")
	from := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	vs := make([]float64, 72)
	for i := range vs {
		vs[i] = float64(2929 - i%2)
	}
	for i := 48; i < 52; i++ {
		vs[i] = 2300
	}
	f := judgeSeries(t, set, sig, "country:XX", from, time.Hour, vs)
	at := from.Add(48 * time.Hour)
	if len(f) != 2 || f[0].Status != detectors.Firing || f[0].Start != at.UnixNano() || f[0].At != at.Add(time.Hour+time.Duration(sig.Def().Cadence)).UnixNano() ||
		f[1].Status != detectors.Resolved {
		t.Fatalf("findings %+v, want a firing from %s raised when the second reading's bucket closes, and its resolve", f, at)
	}
	for i := 49; i < 52; i++ {
		vs[i] = 2929
	}
	if f := judgeSeries(t, set, sig, "country:XX", from, time.Hour, vs); len(f) != 0 {
		t.Fatalf("one hourly reading down: %+v", f)
	}
}

// An hourly export of withdrawals holds an hour of history after its
// first point, not after twelve: min_history counts each point as the
// hour it stands for. A burst of three hours from the fourth fires, dated
// from its first hour; twelve hours of waiting would have missed it.
func TestWithdrawalBurstJudgesAnHourlyExport(t *testing.T) {
	set, err := rules.Default()
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := obs.Lookup("bgp_withdrawals")
	from := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	vs := []float64{10, 12, 9, 1000, 1200, 900, 11, 10, 12, 9, 10, 11, 10, 12, 9, 10}
	f := judgeSeries(t, set, sig, "asn:64500", from, time.Hour, vs)
	at := from.Add(3 * time.Hour)
	if len(f) == 0 || f[0].Status != detectors.Firing || f[0].Start != at.UnixNano() {
		t.Fatalf("findings %+v, want a firing from %s", f, at)
	}
}

// The noise of an hour known from a few residuals is taken at its upper
// confidence bound, so that a half-hourly export is judged from its
// second day without paging at a noisy night's troughs. A region whose
// night-time traffic swings by about a third around its daily cycle
// (log-normal, σ 0.35, from midnight to six; 5 % by day) pages nobody in
// three weeks under the Radar rules; judged against the estimate from two
// residuals, seeds 1, 4 and 5 paged at a trough. A quiet region's drop to
// a fifth on its third day (each hour's two residuals were learnt on the
// second) fires from its start; waiting for twelve residuals an hour, a
// half-hourly export was silent for a week.
func TestTrafficDropLearnsNoiseOnFewResiduals(t *testing.T) {
	set, err := rules.Load("../examples/radar/radar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sig, ok := obs.Lookup("radar_http_requests")
	if !ok {
		t.Fatal("the Radar rules declare no radar_http_requests")
	}
	from := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC) // a Monday
	region := func(seed uint64, night float64) []float64 { return noisyRegion(seed, night, 30*time.Minute) }
	for seed := uint64(1); seed <= 5; seed++ {
		for _, f := range judgeSeries(t, set, sig, "region:XX", from, 30*time.Minute, region(seed, 0.35)) {
			if f.Status == detectors.Firing {
				t.Errorf("seed %d: paged at %s: %s", seed, time.Unix(0, f.Start).UTC(), f.Summary)
			}
		}
	}
	vs := region(1, 0.05)[:3*48]
	drop := 2*48 + 24 // the third day, 12:00
	for i := drop; i < drop+4; i++ {
		vs[i] *= 0.2
	}
	f := judgeSeries(t, set, sig, "region:XX", from, 30*time.Minute, vs)
	at := from.Add(time.Duration(drop) * 30 * time.Minute)
	if len(f) == 0 || f[0].Status != detectors.Firing || f[0].Start != at.UnixNano() {
		t.Fatalf("findings %+v, want a firing from %s", f, at)
	}
}

// A region whose night traffic swings by a third or a half (log-normal,
// σ 0.35 and 0.5 from midnight to six) pages nobody in three weeks under
// the Radar rules, at 15-minute, 30-minute and hourly steps, 20 seeds
// each. It guards what a bar below the noise learnt would give away: a
// rule that judged drops below the lowest value of the series' last day
// before the hour's noise was known (it found all of Iraq's nightly
// shutdowns in Google's traffic, 8 of 8 against 4) paged them 11 times
// (10 at σ 0.5 half-hourly, 1 hourly), and was not kept. The half-hourly
// and hourly regions are also exported with each value on every
// 15-minute row, as IODA's export holds Google's traffic: while a repeat
// counted as a reading they paged 4 and 12 times.
func TestTrafficDropQuietOnNoisyNights(t *testing.T) {
	set, err := rules.Load("../examples/radar/radar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := obs.Lookup("radar_http_requests")
	from := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC) // a Monday
	for _, step := range []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour} {
		for _, night := range []float64{0.35, 0.5} {
			for seed := uint64(1); seed <= 20; seed++ {
				vs := noisyRegion(seed, night, step)
				for _, f := range judgeSeries(t, set, sig, "region:XX", from, step, vs) {
					if f.Status == detectors.Firing {
						t.Errorf("step %s, night σ %.2f, seed %d: paged at %s: %s", step, night, seed, time.Unix(0, f.Start).UTC(), f.Summary)
					}
				}
				if step == 15*time.Minute {
					continue
				}
				// The same values exported on every 15-minute row, as an
				// export holds a coarser signal: a repeat is no reading.
				held := make([]float64, 0, len(vs)*int(step/(15*time.Minute)))
				for _, v := range vs {
					for range step / (15 * time.Minute) {
						held = append(held, v)
					}
				}
				for _, f := range judgeSeries(t, set, sig, "region:XX", from, 15*time.Minute, held) {
					if f.Status == detectors.Firing {
						t.Errorf("step %s held every 15 minutes, night σ %.2f, seed %d: paged at %s: %s", step, night, seed,
							time.Unix(0, f.Start).UTC(), f.Summary)
					}
				}
			}
		}
	}
}

// noisyRegion is three weeks of a region's normalised traffic at step: a
// daily cycle between 0.3 and 0.9, log-normal noise of σ night from
// midnight to six and 5 % by day.
func noisyRegion(seed uint64, night float64, step time.Duration) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	per := int(24 * time.Hour / step)
	vs := make([]float64, 21*per)
	for i := range vs {
		h := float64(i%per) * step.Hours()
		s := 0.05
		if h < 6 {
			s = night
		}
		vs[i] = (0.6 + 0.3*math.Sin(2*math.Pi*h/24)) * math.Exp(s*r.NormFloat64())
	}
	return vs
}

// A country shut down on its second day, before any hour of the day has
// its noise, is caught by its fall from the hour before (coldDrop), and
// the alert is dated from the reading the shutdown began inside of (half
// down: the outage's edge). The shutdown comes back at the same hour on
// the next two days and is caught each time: the first was kept out of
// the history and the noise, so it did not become that hour's normal.
// Before, the day's forecast learnt the first as the hour's noise and all
// three were missed.
func TestTrafficDropCatchesAShutdownBeforeItsHoursAreKnown(t *testing.T) {
	set, err := rules.Load("../examples/radar/radar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := obs.Lookup("radar_http_requests")
	from := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC) // a Monday
	vs := noisyRegion(1, 0.05, 30*time.Minute)[:5*48]
	for day := 1; day <= 3; day++ {
		edge := day*48 + 2 // 01:00
		vs[edge] *= 0.5
		for i := edge + 1; i < edge+8; i++ {
			vs[i] *= 0.12
		}
	}
	f := judgeSeries(t, set, sig, "country:XX", from, 30*time.Minute, vs)
	if len(f) != 6 {
		t.Fatalf("%d findings, want 3 firing and 3 resolved: %+v", len(f), f)
	}
	for k := range 3 {
		fire, res := f[2*k], f[2*k+1]
		at := from.Add(time.Duration(k+1)*24*time.Hour + time.Hour).UnixNano()
		if fire.Status != detectors.Firing || fire.Start != at || fire.BaselineMethod != "previous_hour" {
			t.Errorf("shutdown %d: %s from %s against %s, want firing from %s against previous_hour", k+1,
				fire.Status, time.Unix(0, fire.Start).UTC(), fire.BaselineMethod, time.Unix(0, at).UTC())
		}
		if res.Status != detectors.Resolved || res.Reason != detectors.ReasonRecovered {
			t.Errorf("shutdown %d: then %s (%s), want resolved, recovered", k+1, res.Status, res.Reason)
		}
	}
}

// A city whose night is a tenth of its day, falling that far in three
// hours after midnight (a reading under the hour before by half), with
// 10 % noise, pages nobody in three weeks from its first day: its fall is
// no fall against the evening before, and its own pace at that hour is
// its bar.
func TestTrafficDropQuietOnACitysSteepNights(t *testing.T) {
	set, err := rules.Load("../examples/radar/radar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := obs.Lookup("radar_http_requests")
	from := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	for _, step := range []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour} {
		for seed := uint64(1); seed <= 10; seed++ {
			r := rand.New(rand.NewPCG(seed, 11))
			vs := make([]float64, 21*int(24*time.Hour/step))
			for i := range vs {
				h := math.Mod(float64(i)*step.Hours(), 24)
				var lg float64 // the log of the level: 0 by day, ln 0.1 at 3 am
				switch {
				case h < 3:
					lg = math.Log(0.1) * h / 3
				case h < 8:
					lg = math.Log(0.1) * (8 - h) / 5
				}
				vs[i] = math.Exp(lg + 0.1*r.NormFloat64())
			}
			for _, f := range judgeSeries(t, set, sig, "region:XX", from, step, vs) {
				if f.Status == detectors.Firing {
					t.Errorf("step %s, seed %d: paged at %s: %s", step, seed, time.Unix(0, f.Start).UTC(), f.Summary)
				}
			}
		}
	}
}

// A week of nightly shutdowns (01:00 to 05:00, to 12 %) in a quiet
// region's export is caught night by night, each from its first reading,
// once the series has a few days of readings around those hours: from
// its third day at 30 minutes, from its sixth at an hour (it has one
// reading an hour of the day a day), in 20 seeds each, and nothing else
// pages. Each caught night stays out of the history, so the next is
// judged against ordinary nights. Before the collapse from the hour
// before, the forecast learnt the first nights before it knew their
// hours' noise: 34 and 73 of the 140 nights were caught from their
// first reading.
func TestTrafficDropCatchesNightlyShutdowns(t *testing.T) {
	set, err := rules.Load("../examples/radar/radar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := obs.Lookup("radar_http_requests")
	from := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		step  time.Duration
		first int // the day of the first shutdown, from 0
	}{{30 * time.Minute, 2}, {time.Hour, 5}} {
		per := int(24 * time.Hour / c.step)
		caught, other := 0, 0
		for seed := uint64(1); seed <= 20; seed++ {
			vs := noisyRegion(seed, 0.08, c.step)
			for day := c.first; day < c.first+7; day++ {
				for i := day*per + per/24; i < day*per+5*per/24; i++ {
					vs[i] *= 0.12
				}
			}
			for _, f := range judgeSeries(t, set, sig, "country:XX", from, c.step, vs) {
				if f.Status != detectors.Firing {
					continue
				}
				at := time.Unix(0, f.Start).UTC()
				if day := int(at.Sub(from) / (24 * time.Hour)); at.Hour() == 1 && at.Minute() == 0 && day >= c.first && day < c.first+7 {
					caught++
				} else {
					other++
					t.Errorf("step %s, seed %d: paged from %s", c.step, seed, at)
				}
			}
		}
		if caught != 140 {
			t.Errorf("step %s, shutdowns from day %d: %d of 140 nights caught from 01:00", c.step, c.first, caught)
		}
	}
}

// callRules judges a declared Poisson count (calls an exchange completes
// each 5 minutes, say) with the week-over-week drop detector at its
// defaults: a 40 % drop, four times the noise, for 10 minutes.
const callRules = `
signals:
  - name: test_calls_completed
    unit: calls
    kind: volume
    feed: test-calls
    cadence: 5m
    noise: poisson
rules:
  - name: calls-drop
    detector: traffic_drop
    signals: [test_calls_completed]
    entities: ["asn:*"]
    severity: critical
    params: {threshold: 0.4, for: 10m}
`

// traffic_drop judges a Poisson count by its own sampling noise too. A
// count of 2, 4 or 8 reads 0 often enough by chance alone (one bucket in
// 7, 55 and 3,000), and on the log scale a 0 is past any bar: before
// this bar, three weeks of such counts paged 81, 61 and 3 times. Under
// Noise² (16) not even a drop to zero is four times √base, so the rule
// reports the series as unjudgeable and pages nothing; a count of 20 or
// 100 is judged, stays silent on its own noise, and a count of 100 that
// falls to 0 for an hour fires from the first empty bucket.
func TestTrafficDropJudgesACountByItsSamplingNoise(t *testing.T) {
	set, err := rules.Parse("calls.yaml", []byte(callRules))
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := obs.Lookup("test_calls_completed")
	rule := set.Rules[0]
	from := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	const step = 5 * time.Minute
	for _, c := range []struct {
		mean        float64
		outage      bool
		unjudgeable bool
	}{{2, false, true}, {4, false, true}, {8, false, true}, {8, true, true}, {20, false, false}, {100, false, false}, {100, true, false}} {
		rng := rand.New(rand.NewPCG(uint64(c.mean), 9))
		vs := make([]float64, 21*288)
		outage := 15*288 + 144 // day 16, noon
		for i := range vs {
			vs[i] = poisson(rng, c.mean)
			if c.outage && i >= outage && i < outage+12 {
				vs[i] = 0
			}
		}
		d := rule.Params.Build(rule.Name)
		var fired []detectors.Finding
		for _, f := range feedSeries(sig, "asn:64500", from, step, vs, d) {
			if f.Status == detectors.Firing {
				fired = append(fired, f)
			}
		}
		at := from.Add(time.Duration(outage) * step)
		switch {
		case c.outage && !c.unjudgeable:
			if len(fired) != 1 || fired[0].Start != at.UnixNano() {
				t.Errorf("a count of %v at 0 for an hour: firings %+v, want one from %s", c.mean, fired, at)
			}
		case len(fired) > 0:
			t.Errorf("a count of %v (outage %v): %d pages, the first %s", c.mean, c.outage, len(fired), fired[0].Summary)
		}
		got := d.(detectors.Unjudgeable).Unjudgeable()
		if want := c.unjudgeable; (len(got) == 1 && got[0] == "test_calls_completed asn:64500") != want || len(got) > 1 {
			t.Errorf("a count of %v: unjudgeable %v, want listed: %v", c.mean, got, want)
		}
	}
}

// Shutdowns that come back every night at the same hours from a series'
// second day, read hourly (and every two hours), every reading of them all the way down but
// the second night's first, which the shutdown began inside of (half
// down). The first night's first reading cannot be judged: its hour has
// no noise yet, and the first day no hour before it to pace it by. It is
// kept out of the history and the noise (collapsed), so the night is
// caught at its next reading, against the level before it, and no
// night after becomes that hour's normal. Before, the first night was
// learnt as the hour's normal, and the second was missed with it: of
// Iraq's eight exam-season shutdowns in Google's traffic read hourly at
// half past, one was found. Read every two hours, the hour before a
// reading is the reading before it (beforeSpan); before, it was empty,
// and no night was found.
func TestTrafficDropNightlyShutdownsFromTheSecondDay(t *testing.T) {
	set, err := rules.Load("../examples/radar/radar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := obs.Lookup("radar_http_requests")
	from := time.Date(2024, 3, 4, 1, 0, 0, 0, time.UTC) // a Monday, 01:00
	for _, step := range []time.Duration{time.Hour, 2 * time.Hour} {
		per := int(24 * time.Hour / step)
		vs := noisyRegion(1, 0.05, step)
		vs = vs[per/24 : per/24+7*per] // from 01:00
		for day := 1; day <= 6; day++ {
			for i := day * per; i < day*per+int(4*time.Hour/step); i++ { // 01:00 to 05:00
				vs[i] *= 0.12
			}
		}
		vs[2*per] /= 0.12 / 0.5 // half down
		var fired []string
		for _, f := range judgeSeries(t, set, sig, "country:XX", from, step, vs) {
			if f.Status == detectors.Firing {
				fired = append(fired, time.Unix(0, f.Start).UTC().Format("Jan 2 15:04"))
			}
		}
		want := []string{"Mar 5 02:00", "Mar 6 01:00", "Mar 7 01:00", "Mar 8 01:00", "Mar 9 01:00", "Mar 10 01:00"}
		if step == 2*time.Hour {
			// Two readings a night, and `for: 30m` asks both of a run:
			// the first two nights, whose first readings cannot be
			// judged, are missed; the rest are not learnt as normal.
			want = want[2:]
		}
		if !slices.Equal(fired, want) {
			t.Errorf("step %s: fired from %q, want %q", step, fired, want)
		}
	}
}

// The same nightly shutdowns on a series as noisy by day as by night (σ
// 0.2 every hour, a province rather than a country), nine nights of
// them from its second day: each is found, inside its own four hours.
// Whether a collapse is kept out of what the series learns is read on
// the point estimate of the day's step noise; at its 95 % bound (the bar
// that pages) the first nights were learnt, and 1 of the 9 was found.
// The same series without shutdowns pages nobody (TestTrafficDropQuietOnEvenNoise).
func TestTrafficDropNightlyShutdownsOnANoisySeries(t *testing.T) {
	set, err := rules.Load("../examples/radar/radar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := obs.Lookup("radar_http_requests")
	from := time.Date(2024, 3, 4, 1, 0, 0, 0, time.UTC) // a Monday, 01:00
	vs := evenNoise(4, 0.2, time.Hour)[1 : 1+10*24]
	for day := 1; day <= 9; day++ {
		for i := day * 24; i < day*24+4; i++ { // 01:00 to 05:00
			vs[i] *= 0.12
		}
	}
	var nights []int
	for _, f := range judgeSeries(t, set, sig, "country:XX", from, time.Hour, vs) {
		if f.Status != detectors.Firing {
			continue
		}
		at := time.Unix(0, f.Start).UTC()
		if h := at.Hour(); h < 1 || h > 4 {
			t.Errorf("fired from %s, outside its night's shutdown (01:00 to 05:00)", at)
		}
		nights = append(nights, at.Day())
	}
	if want := []int{5, 6, 7, 8, 9, 10, 11, 12, 13}; !slices.Equal(nights, want) {
		t.Errorf("fired on the nights of March %v, want %v", nights, want)
	}
}

// Three weeks of a series as noisy by day as by night, at four steps
// and three levels of noise, page nobody: what collapsed keeps out on
// the point estimate of its noise is learnt less, not paged.
func TestTrafficDropQuietOnEvenNoise(t *testing.T) {
	set, err := rules.Load("../examples/radar/radar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := obs.Lookup("radar_http_requests")
	from := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	for _, step := range []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour} {
		for _, s := range []float64{0.1, 0.2, 0.3} {
			for seed := uint64(1); seed <= 10; seed++ {
				for _, f := range judgeSeries(t, set, sig, "region:XX", from, step, evenNoise(seed, s, step)) {
					if f.Status == detectors.Firing {
						t.Errorf("step %s, σ %.1f, seed %d: paged at %s: %s", step, s, seed, time.Unix(0, f.Start).UTC(), f.Summary)
					}
				}
			}
		}
	}
}

// evenNoise is three weeks of a region's normalised traffic at step: the
// daily cycle of noisyRegion with log-normal noise of σ s at every hour.
func evenNoise(seed uint64, s float64, step time.Duration) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	per := int(24 * time.Hour / step)
	vs := make([]float64, 21*per)
	for i := range vs {
		h := float64(i%per) * step.Hours()
		vs[i] = (0.6 + 0.3*math.Sin(2*math.Pi*h/24)) * math.Exp(s*r.NormFloat64())
	}
	return vs
}

// A country's visible /24s (3,000, read every 5 minutes with 1.5 % of
// noise, past IODA's 1 % bar on its own) lose 60 % for four hours every
// morning for nine days, as in exam-season shutdowns. Each shutdown's
// buckets are kept out of the baseline, the baseline standing in their
// place; were those stand-ins read as readings, every shutdown would
// shrink the series' noise by their share of the day, and the shrunk
// noise would let ordinary buckets page and hold more stand-ins (before
// the noise was read from readings alone, it fell to a fifth of the
// series' and to 0 within a week). The noise each shutdown is judged
// against stays the series' own, day after day, and each shutdown is
// raised within its first two buckets.
func TestIODARulesNoiseIsNotReadFromStandIns(t *testing.T) {
	set, sig := iodaRules(t, "bgp_visible_slash24")
	step := 5 * time.Minute
	from := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	const level, sigma = 3000.0, 45.0
	per := int(24 * time.Hour / step)
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 99))
		vs := make([]float64, 10*per)
		var starts []int64
		for i := range vs {
			vs[i] = math.Round(level + sigma*rng.NormFloat64())
			if d, b := i/per, i%per; d >= 1 && b >= 6*12 && b < 10*12 {
				vs[i] = math.Round(0.4*level + 0.4*sigma*rng.NormFloat64())
				if b == 6*12 {
					starts = append(starts, from.Add(time.Duration(i)*step).UnixNano())
				}
			}
		}
		found := 0
		for _, f := range judgeSeries(t, set, sig, "country:XX", from, step, vs) {
			// The shutdown this alert was raised in, within its first two
			// buckets (an alert of the noise just before it, within its
			// hold, carries on as the shutdown's).
			i := slices.IndexFunc(starts, func(s int64) bool { return f.At > s && f.At <= s+int64(2*step) })
			if f.Status != detectors.Firing || i < 0 {
				continue
			}
			found++
			if noise, _ := f.Details["noise"].(float64); noise < 0.75*sigma || noise > 1.25*sigma {
				t.Errorf("seed %d: the shutdown of %s judged against noise %v, want the series' own %v ± 25 %%",
					seed, time.Unix(0, starts[i]).UTC(), noise, sigma)
			}
		}
		if found != len(starts) {
			t.Errorf("seed %d: %d of %d shutdowns raised within their first two buckets", seed, found, len(starts))
		}
	}
}
