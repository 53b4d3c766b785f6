package service

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
)

// cutDialer connects to the brokers until cut, then drops every connection
// and refuses new ones: to the group, a member that stops this way looks
// exactly like one that was SIGKILLed (no leave, no heartbeat) until its
// session times out.
type cutDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (c *cutDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return nil, errors.New("cut off")
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		c.conns = append(c.conns, conn)
	}
	return conn, err
}

func (c *cutDialer) cutOff() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	for _, conn := range c.conns {
		conn.Close()
	}
}

// Two instances in one group; one stops dead while its partitions have a
// backlog. The other must not close buckets past where those partitions
// stand: its watermark stays put (though its own partitions run hours
// ahead), /readyz and outagewatch_partitions_unheld name the partitions,
// and once the group hands them over it catches up and is ready again.
func TestWatermarkHeldByUnheldPartitions(t *testing.T) {
	f := loadFixture(t)
	var flows []*ingest.Record
	for _, r := range f.recs {
		if r.Stream == "flows" {
			flows = append(flows, r)
		}
	}
	const n1, n2 = 12000, 12000
	if len(flows) < n1+n2 {
		t.Fatalf("%d flow records", len(flows))
	}
	phase1, phase2 := flows[:n1], flows[n1:n1+n2]
	var w1 int64 // where phase one leaves the watermark: the last time in it
	for _, r := range phase1 {
		w1 = max(w1, r.Time)
	}
	if phase2[len(phase2)-1].Time-w1 < int64(time.Hour) {
		t.Fatalf("phase two spans %v; too short to tell a held watermark", time.Duration(phase2[len(phase2)-1].Time-w1))
	}
	c := startBroker(t, 0, "", "flows")
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produce(t, addr, "flows", phase1)
	tr := kafkaTransport(nil)
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 5 * time.Second, Transport: tr}

	cfgA := mustValidate(t, testConfig(addr, t.TempDir()))
	cfgA.Kafka.GroupID = "two"
	a := startService(t, cfgA, f)
	defer a.shutdown(t)
	waitFor(t, "A alone through phase one", 30*time.Second, func() bool {
		return a.svc.Pipeline().Stats().Watermark == w1 && committedAll(client, "two", n1)
	})

	// B joins with a session long enough to watch the partitions it
	// leaves behind, and takes its share.
	cfgB := mustValidate(t, testConfig(addr, t.TempDir()))
	cfgB.Kafka.GroupID = "two"
	cfgB.Kafka.SessionTimeout = 20 * time.Second
	cut := &cutDialer{}
	svcB, err := New(cfgB, Options{Rules: f.set, Map: f.m, Logger: quietLog(),
		Dialer: &kafka.Dialer{ClientID: "b", Timeout: 5 * time.Second, DialFunc: cut.dial},
		Outbox: alerting.OutboxConfig{InitialBackoff: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctxB, stopB := context.WithCancel(context.Background())
	doneB := make(chan error, 1)
	go func() { doneB <- svcB.Run(ctxB) }()
	defer func() {
		svcB.Kill()
		<-doneB
		stopB()
	}()
	var ofB []string
	waitFor(t, "B holding its share", 30*time.Second, func() bool {
		ofB = memberPartitions(client, "two", "b")
		return len(ofB) > 0 && len(ofB) < testPartitions && a.svc.assigned.Load() && svcB.assigned.Load()
	})
	t.Logf("B holds %v", ofB)

	cut.cutOff()
	produce(t, addr, "flows", phase2)
	onA := 0
	for i := range phase2 {
		if !slices.Contains(ofB, "flows/"+itoa(i%testPartitions)) {
			onA++
		}
	}
	want := "no live consumer (" + strings.Join(ofB, ", ") + "): watermark held"
	waitFor(t, "A through its own partitions of phase two", 60*time.Second, func() bool {
		return totalRecords(a.svc.Pipeline().Stats()) == int64(n1+onA)
	})
	// Either B's partitions are named unheld, or the watermark ran ahead
	// without them.
	waitFor(t, "B's partitions named unheld or the watermark moved", 30*time.Second, func() bool {
		_, why := a.svc.Ready()
		return strings.Contains(why, want) || a.svc.Pipeline().Stats().Watermark != w1
	})
	if _, why := a.svc.Ready(); !strings.Contains(why, want) {
		t.Errorf("readiness reason %q, want it to contain %q", why, want)
	}
	if wm := a.svc.Pipeline().Stats().Watermark; wm != w1 {
		t.Errorf("watermark moved to %v while B's partitions stand at %v",
			time.Unix(0, wm).UTC(), time.Unix(0, w1).UTC())
	}
	if m := metric(t, a.svc, "outagewatch_partitions_unheld"); m != itoa(len(ofB)) {
		t.Errorf("outagewatch_partitions_unheld = %s, want %d", m, len(ofB))
	}
	if code := readyz(a.svc); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d while partitions are unheld", code)
	}

	// B's session ends, the group gives A everything: A reads what B left
	// and the watermark reaches the end.
	last := phase2[len(phase2)-1].Time
	waitFor(t, "A through all of phase two", 90*time.Second, func() bool {
		ok, _ := a.svc.Ready()
		return ok && totalRecords(a.svc.Pipeline().Stats()) == int64(n1+n2) && a.svc.Pipeline().Stats().Watermark == last
	})
	if m := metric(t, a.svc, "outagewatch_partitions_unheld"); m != "0" {
		t.Errorf("outagewatch_partitions_unheld = %s after the hand-over", m)
	}
}

// committedAll reports whether the group has committed n records over the
// topic's partitions.
func committedAll(c *kafka.Client, group string, n int) bool {
	parts := map[tp]int64{}
	for p := range testPartitions {
		parts[tp{"flows", int32(p)}] = 0
	}
	got, err := committedOffsets(context.Background(), c, group, parts)
	if err != nil {
		return false
	}
	var sum int64
	for _, g := range got {
		sum += max(g.offset, 0)
	}
	return sum == int64(n)
}

// memberPartitions lists the partitions the group's member with clientID
// holds, once the group is stable with two members.
func memberPartitions(c *kafka.Client, group, clientID string) []string {
	res, err := c.DescribeGroups(context.Background(), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(res.Groups) != 1 || res.Groups[0].GroupState != "Stable" || len(res.Groups[0].Members) != 2 {
		return nil
	}
	var out []string
	for _, m := range res.Groups[0].Members {
		if m.ClientID != clientID {
			continue
		}
		for _, t := range m.MemberAssignments.Topics {
			for _, p := range t.Partitions {
				out = append(out, t.Topic+"/"+itoa(p))
			}
		}
	}
	slices.Sort(out)
	return out
}

func readyz(s *Service) int {
	resp, err := http.Get("http://" + s.Addr() + "/readyz")
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// metric is the value of an unlabelled metric on /metrics.
func metric(t *testing.T, s *Service, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return ""
}
