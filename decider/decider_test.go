package decider

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outagewatch/outagewatch/actions"
	"github.com/outagewatch/outagewatch/alerting"
)

const topic = "outagewatch-deciders"

func start(t *testing.T, brokers []string) *Decider {
	d, err := Start(context.Background(), Config{Brokers: brokers, Topic: topic, GroupID: "outagewatch-actions", SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitSplit waits for the group to settle: every instance in the same
// generation, the partitions shared out with no overlap.
func waitSplit(t *testing.T, all int, ds ...*Decider) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		gens := map[int32]bool{}
		var union []int
		ok := true
		for _, d := range ds {
			g, ps := d.Owned()
			gens[g] = true
			ok = ok && g != 0 && len(ps) > 0
			union = append(union, ps...)
		}
		slices.Sort(union)
		if ok && len(gens) == 1 && len(union) == all && len(slices.Compact(slices.Clone(union))) == all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group did not settle")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func transits(t *testing.T, d *Decider) *actions.Transits {
	cfg, err := actions.LoadConfig("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := actions.NewTransits(cfg, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr.Owns = d.Owns
	return tr
}

func shutSites(t *testing.T, tr *actions.Transits) []string {
	recs, err := tr.Records()
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, r := range recs {
		if r.Op == actions.OpShutdown {
			s = append(s, r.Site)
		}
	}
	return s
}

// Two instances get the same packet-loss alert naming three sites: each
// site is acted on exactly once, by the instance that owns it. When one
// instance leaves, the other decides for every site.
func TestTwoInstancesOneDecider(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, topic), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, b := start(t, c.ListenAddrs()), start(t, c.ListenAddrs())
	defer a.Close()
	waitSplit(t, 6, a, b)
	ta, tb := transits(t, a), transits(t, b)

	ev := alerting.Event{ID: "loss", Status: alerting.Firing, Rule: "transit-packet-loss", Detector: "packet_loss", Entity: "transit:1299",
		At: time.Date(2019, 6, 20, 12, 15, 0, 0, time.UTC), Details: map[string]any{"sites": []string{"ams01", "fra01", "lon01"}}}
	for _, tr := range []*actions.Transits{ta, tb} {
		e := ev
		if err := tr.Send(context.Background(), &e); err != nil {
			t.Fatal(err)
		}
	}
	sa, sb := shutSites(t, ta), shutSites(t, tb)
	both := append(slices.Clone(sa), sb...)
	slices.Sort(both)
	if !slices.Equal(both, []string{"ams01", "fra01", "lon01"}) {
		t.Fatalf("instance a shut %v, b %v: want each site once", sa, sb)
	}
	for _, s := range sa {
		if !a.Owns(s) || b.Owns(s) {
			t.Fatalf("a acted on %s without owning it", s)
		}
	}
	for _, s := range sb {
		if !b.Owns(s) || a.Owns(s) {
			t.Fatalf("b acted on %s without owning it", s)
		}
	}
	t.Logf("a: partitions %v sites %v; b: sites %v", func() []int { _, p := a.Owned(); return p }(), sa, sb)

	// b leaves: a owns all six partitions and decides for every site.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitSplit(t, 6, a)
	ev2 := ev
	ev2.ID, ev2.Entity, ev2.At = "loss2", "transit:3356", ev.At.Add(time.Hour)
	if err := ta.Send(context.Background(), &ev2); err != nil {
		t.Fatal(err)
	}
	recs, _ := ta.Records()
	var l3 []string
	for _, r := range recs {
		if r.ASN == 3356 {
			l3 = append(l3, r.Site)
		}
	}
	if !slices.Equal(l3, []string{"ams01", "fra01", "lon01"}) {
		t.Fatalf("after b left, a acted on %v", l3)
	}
}

// A join that keeps failing is retried ever less often: 100ms, doubled
// each time, at most 10s.
func TestRetryAfter(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 10; n++ {
		got = append(got, retryAfter(n))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 10 * time.Second, 10 * time.Second, 10 * time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("retryAfter(1..10) = %v, want %v", got, want)
	}
}
