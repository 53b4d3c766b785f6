package detectors

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	rib "github.com/outagewatch/outagewatch/bgp"
	bgpin "github.com/outagewatch/outagewatch/ingest/bgp"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/series"
)

// bgpRun feeds routing series bucket by bucket through a real aggregator.
type bgpRun struct {
	agg      *aggregate.Aggregator
	det      Detector
	sig      obs.Signal // the rule's signal: the detector sees its points only
	findings []Finding
	t        int64 // start of the next bucket
}

func newBGPRun(p Params) *bgpRun {
	sig := rib.AnnouncedV4
	switch p.(type) {
	case *WithdrawalBurst:
		sig = rib.Withdrawals
	case *BGPPeers:
		sig = bgpin.FullFeedPeers
	}
	return &bgpRun{agg: aggregate.New(aggregate.Config{}), det: p.Build("test"), sig: sig, t: start}
}

// q is what the history of announced space makes of v: the nearest power
// of its format's step.
func q(v float64) float64 {
	step := series.FormatFor(rib.AnnouncedV4.Def().Precision).Step()
	return math.Pow(step, math.Round(math.Log(v)/math.Log(step)))
}

// cellv is one observation of a bucket; NaN values are left out (missing).
type cellv struct {
	sig obs.Signal
	e   string
	v   float64
}

// bucket feeds one bucket of the given values and closes it.
func (r *bgpRun) bucket(cells ...cellv) {
	for _, c := range cells {
		if !math.IsNaN(c.v) {
			r.agg.Observe(&obs.Observation{Time: r.t + 1, Signal: c.sig, Entity: c.e, Value: c.v})
		}
	}
	r.agg.Advance(r.t+w5, func(c *aggregate.Closed) {
		var pts []aggregate.Point
		for _, p := range c.Points {
			if p.Series.Signal == r.sig {
				pts = append(pts, p)
			}
		}
		r.det.Bucket(c, pts, func(f Finding) { r.findings = append(r.findings, f) })
	})
	r.t += w5
}

func (r *bgpRun) take() []Finding {
	f := r.findings
	r.findings = nil
	return f
}

var asns12 = func() []string {
	var out []string
	for i := 1; i <= 12; i++ {
		out = append(out, fmt.Sprintf("asn:%d", i))
	}
	return out
}()

// space returns one v4 gauge per entity: 100 /24s each, except where
// override says otherwise.
func space(override map[string]float64) []cellv {
	var cs []cellv
	for _, e := range asns12 {
		v, ok := override[e]
		if !ok {
			v = 100
		}
		cs = append(cs, cellv{rib.AnnouncedV4, e, v})
	}
	return cs
}

func TestPrefixWithdrawalFiresWithinOneBucketAndResolves(t *testing.T) {
	r := newBGPRun(DefaultPrefixWithdrawal())
	for i := 0; i < 24; i++ { // two hours of steady routing
		r.bucket(space(nil)...)
	}
	if f := r.take(); len(f) != 0 {
		t.Fatalf("steady routing fired: %+v", f)
	}
	onset := r.t
	r.bucket(space(map[string]float64{"asn:3": 40})...)
	f := r.take()
	if len(f) != 1 {
		t.Fatalf("%d findings at onset, want 1: %+v", len(f), f)
	}
	if g := f[0]; g.Status != Firing || g.Detector != PrefixWithdrawalName || g.Entity != "asn:3" || g.Signal != "bgp_announced_v4" ||
		g.Start != onset || g.At != onset+w5 || g.ChangePct != changePct(40, q(100)) || g.BaselineMethod != "median_recent" ||
		g.Baseline != round(q(100), 3) || g.Details["withdrawn"] != round(q(100)-40, 3) {
		t.Fatalf("firing %+v", g)
	}
	// Six hours down: longer than the baseline window, yet the history
	// keeps the space before the withdrawal, so the alert stays.
	for i := 0; i < 72; i++ {
		r.bucket(space(map[string]float64{"asn:3": 40})...)
	}
	if f := r.take(); len(f) != 0 {
		t.Fatalf("findings while down: %+v", f)
	}
	s := r.agg.Series(aggregate.Key{Signal: rib.AnnouncedV4, Entity: "asn:3"})
	if v, _ := s.Hist.Get(onset + 10*w5); math.Abs(v-q(100)) > 1e-9 {
		t.Fatalf("history holds %v during the outage, want the baseline (100)", v)
	}
	// Routes return: resolved after resolve_for (three buckets), End at
	// the first recovered bucket.
	back := r.t
	for i := 0; i < 3; i++ {
		r.bucket(space(map[string]float64{"asn:3": 97})...)
	}
	f = r.take()
	if len(f) != 1 || f[0].Status != Resolved || f[0].Entity != "asn:3" || f[0].End != back || f[0].At != back+3*w5 ||
		f[0].Start != onset || f[0].Details["lowest"] != 40.0 {
		t.Fatalf("resolve %+v", f)
	}
}

func TestPrefixWithdrawalHoldsForAndThreshold(t *testing.T) {
	p := DefaultPrefixWithdrawal()
	p.For = Duration(10 * 60e9)
	r := newBGPRun(p)
	for i := 0; i < 24; i++ {
		r.bucket(space(nil)...)
	}
	// 25 % is under the 30 % threshold; 35 % for one bucket is under For.
	r.bucket(space(map[string]float64{"asn:1": 75})...)
	r.bucket(space(map[string]float64{"asn:2": 65})...)
	r.bucket(space(nil)...)
	if f := r.take(); len(f) != 0 {
		t.Fatalf("fired: %+v", f)
	}
	onset := r.t
	r.bucket(space(map[string]float64{"asn:2": 65})...)
	r.bucket(space(map[string]float64{"asn:2": 65})...)
	if f := r.take(); len(f) != 1 || f[0].Start != onset || f[0].At != onset+2*w5 {
		t.Fatalf("two buckets at -35 %%: %+v", f)
	}
}

// A network that loses all its space reads 0 once and then no data (the
// table stops emitting it): the alert fires on the zero and holds.
func TestPrefixWithdrawalAllSpaceThenNoData(t *testing.T) {
	r := newBGPRun(DefaultPrefixWithdrawal())
	for i := 0; i < 24; i++ {
		r.bucket(space(nil)...)
	}
	onset := r.t
	r.bucket(space(map[string]float64{"asn:7": 0})...)
	for i := 0; i < 30; i++ {
		r.bucket(space(map[string]float64{"asn:7": math.NaN()})...)
	}
	f := r.take()
	if len(f) != 1 || f[0].Status != Firing || f[0].Entity != "asn:7" || f[0].ChangePct != -100 || f[0].Start != onset {
		t.Fatalf("findings %+v", f)
	}
	for i := 0; i < 3; i++ {
		r.bucket(space(nil)...)
	}
	if f := r.take(); len(f) != 1 || f[0].Status != Resolved {
		t.Fatalf("no resolve when routes returned: %+v", f)
	}
}

// Nothing fires before min_history, nor under min_baseline, nor on no data.
func TestPrefixWithdrawalQuietCases(t *testing.T) {
	p := DefaultPrefixWithdrawal()
	p.MinBaseline = 10
	r := newBGPRun(p)
	tiny := map[string]float64{"asn:9": 4}
	for i := 0; i < 11; i++ { // 55 minutes: under an hour of history
		r.bucket(space(tiny)...)
	}
	r.bucket(space(map[string]float64{"asn:1": 10, "asn:9": 4})...)
	for i := 0; i < 12; i++ {
		r.bucket(space(tiny)...)
	}
	r.bucket(space(map[string]float64{"asn:9": 1})...)                      // under min_baseline
	r.bucket(space(map[string]float64{"asn:2": math.NaN(), "asn:9": 4})...) // no data
	if f := r.take(); len(f) != 0 {
		t.Fatalf("fired: %+v", f)
	}
}

// Most networks losing space in the same bucket is the feed, not the
// Internet: one feed-health finding, no per-network alerts, and the
// history keeps the space from before.
func TestPrefixWithdrawalMassDropIsFeedFault(t *testing.T) {
	r := newBGPRun(DefaultPrefixWithdrawal())
	for i := 0; i < 24; i++ {
		r.bucket(space(nil)...)
	}
	half := map[string]float64{}
	for _, e := range asns12[:11] {
		half[e] = 50
	}
	onset := r.t
	r.bucket(space(half)...)
	r.bucket(space(half)...)
	f := r.take()
	if len(f) != 1 || f[0].Detector != "feed_health" || f[0].Entity != "feed:bgp" || f[0].Signal != "bgp_announced_space" ||
		f[0].Status != Firing || f[0].Start != onset || f[0].Observed != 11 || f[0].Baseline != 12 {
		t.Fatalf("findings %+v", f)
	}
	r.bucket(space(nil)...)
	f = r.take()
	if len(f) != 1 || f[0].Detector != "feed_health" || f[0].Status != Resolved || f[0].End != onset+2*w5 {
		t.Fatalf("after the fault %+v", f)
	}
	// The fault's buckets did not enter the baseline: nothing fires later.
	for i := 0; i < 12; i++ {
		r.bucket(space(nil)...)
	}
	if f := r.take(); len(f) != 0 {
		t.Fatalf("after the fault: %+v", f)
	}
}

func TestPrefixWithdrawalAdaptsAfter(t *testing.T) {
	p := DefaultPrefixWithdrawal()
	p.AdaptAfter = Duration(3600e9)
	r := newBGPRun(p)
	for i := 0; i < 24; i++ {
		r.bucket(space(nil)...)
	}
	// A network that gave back half its space for good: after an hour the
	// new level is the baseline, the alert resolves saying so, and nothing
	// fires in the five hours after.
	onset := r.t
	for i := 0; i < 12*6; i++ {
		r.bucket(space(map[string]float64{"asn:4": 50})...)
	}
	f := r.take()
	if len(f) != 2 || f[0].Status != Firing || f[1].Status != Resolved || f[1].Entity != "asn:4" ||
		f[1].Reason != ReasonBaselineAdapted || f[1].At != onset+3600e9 {
		t.Fatalf("findings %+v, want firing then baseline_adapted at %d", f, onset+3600e9)
	}
}

// withdrawals: per-bucket withdrawal counts per entity, with the v4 space
// gauge of the same entity.
func burstCells(wd map[string]float64, sp map[string]float64) []cellv {
	cs := space(sp)
	for _, e := range asns12 {
		cs = append(cs, cellv{rib.Withdrawals, e, wd[e]})
	}
	return cs
}

// background is routine churn: a few withdrawals in some buckets.
func background(i int) map[string]float64 {
	m := map[string]float64{}
	for k, e := range asns12 {
		if (i+k)%5 == 0 {
			m[e] = float64(2 + (i+k)%3)
		}
	}
	return m
}

func TestWithdrawalBurstResolvesWhenRoutesReturn(t *testing.T) {
	r := newBGPRun(DefaultWithdrawalBurst())
	i := 0
	for ; i < 36; i++ {
		r.bucket(burstCells(background(i), nil)...)
	}
	if f := r.take(); len(f) != 0 {
		t.Fatalf("background churn fired: %+v", f)
	}
	// AS 5 withdraws 90 % of its space: 540 withdrawals (ninety prefixes
	// from six peers) in one bucket.
	onset := r.t
	wd := background(i)
	wd["asn:5"] = 540
	r.bucket(burstCells(wd, map[string]float64{"asn:5": 10})...)
	i++
	f := r.take()
	if len(f) != 1 {
		t.Fatalf("%d findings at onset: %+v", len(f), f)
	}
	if g := f[0]; g.Status != Firing || g.Detector != WithdrawalBurstName || g.Entity != "asn:5" || g.Start != onset ||
		g.At != onset+w5 || g.Observed != 540 || g.Details["threshold"] != 100.0 || g.Details["space_v4_before"] != round(q(100), 3) {
		t.Fatalf("firing %+v", g)
	}
	// Calm but still withdrawn for an hour: no resolve.
	for k := 0; k < 12; k++ {
		r.bucket(burstCells(background(i), map[string]float64{"asn:5": 10})...)
		i++
	}
	if f := r.take(); len(f) != 0 {
		t.Fatalf("resolved while the space is still withdrawn: %+v", f)
	}
	back := r.t
	r.bucket(burstCells(background(i), map[string]float64{"asn:5": 95})...)
	f = r.take()
	if len(f) != 1 || f[0].Status != Resolved || f[0].Entity != "asn:5" || f[0].End != back || f[0].At != back+w5 ||
		f[0].Details["total_withdrawals"].(float64) < 540 {
		t.Fatalf("resolve %+v", f)
	}
	// A flap (withdrawn and re-announced within minutes, the space
	// intact) is a session reset's or a table transfer's shape: a bucket
	// of it pages nobody, nor does one that straddles two buckets.
	for _, n := range []int{1, 2} {
		for k := 0; k < 6; k++ {
			r.bucket(burstCells(background(i), nil)...)
			i++
		}
		for k := 0; k < n; k++ {
			wd = background(i)
			wd["asn:5"] = 120
			r.bucket(burstCells(wd, nil)...)
			i++
		}
		r.bucket(burstCells(background(i), nil)...)
		i++
		if f := r.take(); len(f) != 0 {
			t.Fatalf("a flap over %d buckets fired: %+v", n, f)
		}
	}
	// Churn that goes on for three buckets (longer than a bucket
	// whatever the boundaries) fires, dated from its first, and resolves
	// after resolve_for of calm; the previous bursts did not raise the
	// bar.
	churn := r.t
	for k := 0; k < 3; k++ {
		wd = background(i)
		wd["asn:5"] = 120
		r.bucket(burstCells(wd, nil)...)
		i++
	}
	for k := 0; k < 3; k++ {
		r.bucket(burstCells(background(i), nil)...)
		i++
	}
	f = r.take()
	if len(f) != 2 || f[0].Status != Firing || f[0].Observed != 120 || f[0].Start != churn || f[0].At != churn+3*w5 ||
		f[1].Status != Resolved || f[1].At-f[0].At != 3*w5 {
		t.Fatalf("churn %+v", f)
	}
}

func TestWithdrawalBurstRelativeToNormal(t *testing.T) {
	r := newBGPRun(DefaultWithdrawalBurst())
	// AS 2 is a churny network: 30 withdrawals in most buckets, so its bar
	// is 10 × 30 = 300; 250 is business as usual for it, not for AS 3.
	busy := func(i int) map[string]float64 {
		m := background(i)
		m["asn:2"] = 30
		return m
	}
	i := 0
	for ; i < 36; i++ {
		r.bucket(burstCells(busy(i), nil)...)
	}
	// Three buckets of it: withdrawals alone, the space unchanged, must
	// last (burstConfirm).
	for range 3 {
		wd := busy(i)
		wd["asn:2"], wd["asn:3"] = 250, 250
		r.bucket(burstCells(wd, nil)...)
		i++
	}
	f := r.take()
	if len(f) != 1 || f[0].Entity != "asn:3" || f[0].Details["threshold"] != 100.0 {
		t.Fatalf("findings %+v", f)
	}
}

// A peer withdrawing its whole table makes every origin burst at once:
// one feed-health finding.
func TestWithdrawalBurstMassIsFeedFault(t *testing.T) {
	r := newBGPRun(DefaultWithdrawalBurst())
	i := 0
	for ; i < 36; i++ {
		r.bucket(burstCells(background(i), nil)...)
	}
	all := map[string]float64{}
	for _, e := range asns12 {
		all[e] = 150
	}
	r.bucket(burstCells(all, nil)...)
	r.bucket(burstCells(background(i), nil)...)
	f := r.take()
	if len(f) != 2 || f[0].Detector != "feed_health" || f[0].Signal != "bgp_withdrawals" || f[0].Status != Firing ||
		f[1].Detector != "feed_health" || f[1].Status != Resolved {
		t.Fatalf("findings %+v", f)
	}
}

func peersCells(n map[string]float64) []cellv {
	var cs []cellv
	for _, c := range []string{"rrc01", "rrc03", "rrc12"} {
		v, ok := n[c]
		if !ok {
			v = 3
		}
		cs = append(cs, cellv{bgpin.FullFeedPeers, "feed:bgp@" + c, v})
	}
	return cs
}

func TestBGPPeersOneFeedHealthAlertPerCollector(t *testing.T) {
	r := newBGPRun(DefaultBGPPeers())
	for i := 0; i < 12; i++ {
		r.bucket(peersCells(nil)...)
	}
	reset := r.t
	r.bucket(peersCells(map[string]float64{"rrc03": 2})...)
	r.bucket(peersCells(map[string]float64{"rrc03": 2, "rrc12": 0})...)
	for i := 0; i < 5; i++ {
		r.bucket(peersCells(map[string]float64{"rrc03": 2, "rrc12": 0})...)
	}
	r.bucket(peersCells(map[string]float64{"rrc12": 0})...)
	r.bucket(peersCells(nil)...)
	f := r.take()
	type ev struct {
		status, entity string
		at             int64
		obs, base      float64
	}
	var got []ev
	for _, x := range f {
		if x.Detector != "feed_health" || x.Signal != "bgp_full_feed_peers" {
			t.Fatalf("finding %+v", x)
		}
		got = append(got, ev{x.Status, x.Entity, (x.At - reset) / w5, x.Observed, x.Baseline})
	}
	want := []ev{
		{Firing, "feed:bgp@rrc03", 1, 2, 3},
		{Firing, "feed:bgp@rrc12", 2, 0, 3},
		{Resolved, "feed:bgp@rrc03", 8, 3, 3},
		{Resolved, "feed:bgp@rrc12", 9, 3, 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// The checkpoint of each routing detector restores mid-episode: the rest
// of the run gives the same findings as an uninterrupted one.
func TestRoutingDetectorsCheckpointRoundTrip(t *testing.T) {
	script := func(i int) []cellv {
		sp := map[string]float64{}
		wd := background(i)
		pc := map[string]float64{}
		switch {
		case i == 40:
			wd["asn:6"] = 600
			sp["asn:6"] = 0
		case i > 40 && i < 60:
			sp["asn:6"] = math.NaN()
			pc["rrc01"] = 2
		case i >= 60:
			sp["asn:6"] = 99
		}
		return append(burstCells(wd, sp), peersCells(pc)...)
	}
	for _, p := range []Params{DefaultPrefixWithdrawal(), DefaultWithdrawalBurst(), DefaultBGPPeers()} {
		name := fmt.Sprintf("%T", p)
		whole := newBGPRun(p)
		for i := 0; i < 80; i++ {
			whole.bucket(script(i)...)
		}
		if len(whole.findings) != 2 {
			t.Fatalf("%s: %d findings in the script, want firing and resolved: %+v", name, len(whole.findings), whole.findings)
		}
		half := newBGPRun(p)
		for i := 0; i < 50; i++ {
			half.bucket(script(i)...)
		}
		b, err := half.det.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		restored := p.Build("test")
		if err := restored.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		half.det = restored
		for i := 50; i < 80; i++ {
			half.bucket(script(i)...)
		}
		if !reflect.DeepEqual(fmt.Sprintf("%+v", half.findings), fmt.Sprintf("%+v", whole.findings)) {
			t.Fatalf("%s: restored run\n%+v\nuninterrupted\n%+v", name, half.findings, whole.findings)
		}
		if err := restored.UnmarshalBinary([]byte("junk")); err == nil {
			t.Fatalf("%s: junk checkpoint accepted", name)
		}
	}
}

func TestRoutingDetectorsValidate(t *testing.T) {
	cases := []struct {
		p     Params
		field string
	}{
		{&PrefixWithdrawal{Threshold: 1.2}, "threshold:"},
		{func() Params { p := DefaultPrefixWithdrawal(); p.ResolveBelow = 0.5; return p }(), "resolve_below:"},
		{func() Params { p := DefaultPrefixWithdrawal(); p.BaselineWindow = Duration(60e9); return p }(), "baseline_window:"},
		{func() Params { p := DefaultPrefixWithdrawal(); p.FeedFaultShare = 0; return p }(), "feed_fault_share:"},
		{func() Params { p := DefaultPrefixWithdrawal(); p.MinBaseline = -1; return p }(), "min_baseline:"},
		{func() Params { p := DefaultWithdrawalBurst(); p.MinWithdrawals = 0; return p }(), "min_withdrawals:"},
		{func() Params { p := DefaultWithdrawalBurst(); p.Quantile = 0; return p }(), "quantile:"},
		{func() Params { p := DefaultWithdrawalBurst(); p.Multiple = 0.5; return p }(), "multiple:"},
		{func() Params { p := DefaultWithdrawalBurst(); p.RecoverShare = 2; return p }(), "recover_share:"},
		{func() Params { p := DefaultWithdrawalBurst(); p.MaxHold = Duration(60e9); return p }(), "max_hold:"},
		{func() Params { p := DefaultWithdrawalBurst(); p.FeedFaultMinEntities = 0; return p }(), "feed_fault_min_entities:"},
		{func() Params { p := DefaultBGPPeers(); p.MinLost = 0; return p }(), "min_lost:"},
		{func() Params { p := DefaultBGPPeers(); p.Window = Duration(60e9); return p }(), "window:"},
	}
	for _, c := range cases {
		err := c.p.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.field) {
			t.Errorf("%T: got %v, want %q...", c.p, err, c.field)
		}
	}
	for _, p := range []Params{DefaultPrefixWithdrawal(), DefaultWithdrawalBurst(), DefaultBGPPeers()} {
		if err := p.Validate(); err != nil {
			t.Errorf("defaults of %T: %v", p, err)
		}
	}
	for _, n := range []string{PrefixWithdrawalName, WithdrawalBurstName, BGPPeersName} {
		if _, err := NewParams(n); err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkPrefixWithdrawalBucket judges 10,000 origins a bucket against
// six hours of history: a full table has about 75,000.
func BenchmarkPrefixWithdrawalBucket(b *testing.B) {
	agg := aggregate.New(aggregate.Config{})
	det := DefaultPrefixWithdrawal().Build("bench")
	const n = 10000
	ents := make([]string, n)
	for i := range ents {
		ents[i] = fmt.Sprintf("asn:%d", 64512+i)
	}
	t := start
	var closed *aggregate.Closed
	step := func() {
		for i, e := range ents {
			agg.Observe(&obs.Observation{Time: t + 1, Signal: rib.AnnouncedV4, Entity: e, Value: float64(16 + i%64)})
		}
		agg.Advance(t+w5, func(c *aggregate.Closed) { closed = c })
		t += w5
	}
	for i := 0; i < 80; i++ {
		step()
	}
	step()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		det.Bucket(closed, closed.Points, func(Finding) {})
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "series/s")
}
