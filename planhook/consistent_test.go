package planhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outagewatch/outagewatch/actions"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

// ribWithdrawn lists the sites whose prefixes s no longer holds.
func ribWithdrawn(t *testing.T, s interface {
	ListPath(context.Context, *api.ListPathRequest, func(*api.Destination)) error
}, sites map[string]AnycastSite) []string {
	held := map[string]bool{}
	err := s.ListPath(context.Background(), &api.ListPathRequest{TableType: api.TableType_GLOBAL,
		Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}}, func(d *api.Destination) { held[d.Prefix] = true })
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for l, s := range sites {
		if !held[s.Prefixes[0].String()] {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// Christchurch, then Auckland drained together (the cascade scenario, two
// withdrawals allowed): after every tick the webhook's last plan, the Kafka
// topic's last plan, the prefixes gobgp holds and the withdrawn gauges all
// name the same locations, and the start announces every site.
func TestTwoDrainedOutputsAgree(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	wh, err := NewWebhook(srv.URL, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	kp, err := NewKafka(cluster.ListenAddrs(), "tm-plans", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer kp.Close()
	edge := speaker(t, 64500, "192.0.2.1", -1, nil)
	router := actions.Embedded{S: edge}
	sites := map[string]AnycastSite{}
	for i, l := range []string{"AKL", "CHC", "SYD", "WLG"} {
		sites[l] = AnycastSite{Router: router, Prefixes: []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("198.51.%d.0/24", 100+i))}, NextHop: netip.MustParseAddr("192.0.2.1")}
	}
	any := &Anycast{Sites: sites}
	ctx := context.Background()
	if err := any.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ribWithdrawn(t, edge, sites); len(got) != 0 {
		t.Fatalf("after start, not announced: %v", got)
	}
	sc, err := trafficmanager.LoadScenario("../trafficmanager/testdata/cascade.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, ins := sc.Inputs()
	reg := prometheus.NewPedanticRegistry()
	d := &Driver{Mode: "enforce", Publishers: []Publisher{wh, kp, any}, Metrics: NewMetrics(reg)}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: cluster.ListenAddrs(), Topic: "tm-plans", MaxWait: 50 * time.Millisecond})
	defer r.Close()
	var lastKafka Message
	want := [][]string{{}, {"CHC"}, {"AKL", "CHC"}, {"CHC"}, {}}
	for i, in := range ins {
		m, err := d.Tick(ctx, time.Unix(int64(i)*300, 0), in)
		if err != nil {
			t.Fatalf("tick %d: %v", i, err)
		}
		if m != nil {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			km, err := r.ReadMessage(rctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			lastKafka = Message{}
			if err := json.Unmarshal(km.Value, &lastKafka); err != nil {
				t.Fatal(err)
			}
		}
		var lastHook Message
		rc.mu.Lock()
		if n := len(rc.bodies); n > 0 {
			if err := json.Unmarshal(rc.bodies[n-1], &lastHook); err != nil {
				t.Fatal(err)
			}
		}
		rc.mu.Unlock()
		w := strings.Join(want[i], " ")
		var gauges []string
		for _, l := range []string{"AKL", "CHC", "SYD", "WLG"} {
			if testutil.ToFloat64(d.Metrics.withdrawnLoc.WithLabelValues(l)) == 1 {
				gauges = append(gauges, l)
			}
		}
		for what, got := range map[string][]string{
			"plan in force": d.State().Withdrawn, "webhook": lastHook.Plan.Withdrawn, "kafka": lastKafka.Plan.Withdrawn,
			"gobgp": ribWithdrawn(t, edge, sites), "outagewatch_tm_withdrawn": gauges,
		} {
			if strings.Join(got, " ") != w {
				t.Errorf("tick %d: %s withdraws %v, want [%s]", i, what, got, w)
			}
		}
		if n := testutil.ToFloat64(d.Metrics.withdrawn); n != float64(len(want[i])) {
			t.Errorf("tick %d: outagewatch_tm_withdrawn_locations %v", i, n)
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bodies) != 4 {
		t.Fatalf("webhook got %d plans, want 4", len(rc.bodies))
	}
}

// A router that fails once: the retry of the same plan brings the routes
// to it, a third copy changes nothing, and the next plan touches only the
// site that changed.
func TestAnycastRetryIsWholePlan(t *testing.T) {
	fr := &flakyRouter{failNext: 1}
	any := &Anycast{Sites: map[string]AnycastSite{
		"A": {Router: fr, Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/25")}},
		"B": {Router: fr, Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.128/25")}},
	}}
	ctx := context.Background()
	m := &Message{Seq: 1}
	m.Plan.Withdrawn = []string{"A", "B"}
	if err := any.Publish(ctx, m); err == nil || !strings.Contains(err.Error(), "anycast: withdraw A: router down") {
		t.Fatalf("first: %v", err)
	}
	if err := any.Publish(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := any.Publish(ctx, m); err != nil {
		t.Fatal(err)
	}
	m2 := &Message{Seq: 2}
	m2.Plan.Withdrawn = []string{"B"}
	if err := any.Publish(ctx, m2); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fr.calls, "; "); got != "withdraw 192.0.2.0/25; withdraw 192.0.2.128/25; announce 192.0.2.0/25" {
		t.Fatalf("router calls %q", got)
	}
	if err := any.Publish(ctx, &Message{Seq: 3, Plan: trafficmanager.State{Withdrawn: []string{"X"}}}); err == nil || !strings.Contains(err.Error(), "withdraw X: no prefixes configured") {
		t.Fatalf("unknown site: %v", err)
	}
}

type flakyRouter struct {
	failNext int
	calls    []string
}

func (f *flakyRouter) do(op string, p netip.Prefix) error {
	if f.failNext > 0 {
		f.failNext--
		return fmt.Errorf("router down")
	}
	f.calls = append(f.calls, op+" "+p.String())
	return nil
}

func (f *flakyRouter) Announce(_ context.Context, p netip.Prefix, _ netip.Addr) error {
	return f.do("announce", p)
}

func (f *flakyRouter) Withdraw(_ context.Context, p netip.Prefix, _ netip.Addr) error {
	return f.do("withdraw", p)
}
