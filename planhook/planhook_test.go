package planhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
	fail   bool
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.fail {
		http.Error(w, "load balancer busy", http.StatusServiceUnavailable)
		return
	}
	if alerting.Verify("s3cret", b, r.Header.Get(alerting.HeaderSignature), r.Header.Get(alerting.HeaderTimestamp), time.Now(), time.Minute) != nil {
		http.Error(w, "bad signature", http.StatusForbidden)
		return
	}
	rc.bodies = append(rc.bodies, b)
}

// inputs turns the shipped scenario into per-tick inputs and the changes
// it expects at each.
func inputs(t *testing.T) ([]trafficmanager.Input, []string) {
	sc, err := trafficmanager.LoadScenario("../trafficmanager/testdata/sections-and-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, tk := range sc.Ticks {
		changes = append(changes, strings.Join(tk.Changes, "; "))
	}
	_, ins := sc.Inputs()
	return ins, changes
}

func changeStrings(cs []trafficmanager.Change) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.String())
	}
	return strings.Join(s, "; ")
}

func TestWebhookAndKafka(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	wh, err := NewWebhook(srv.URL+"/plan", "s3cret")
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

	ins, want := inputs(t)
	d := &Driver{Mode: "enforce", Publishers: []Publisher{wh, kp}}
	ctx := context.Background()
	t0 := time.Date(2025, 4, 28, 10, 0, 0, 0, time.UTC)
	var sent []*Message
	for i, in := range ins {
		// The load balancer is busy at tick 3: nothing is kept, and tick 3's
		// change goes out again as the delivery of the retry.
		rc.mu.Lock()
		rc.fail = i == 3
		rc.mu.Unlock()
		m, err := d.Tick(ctx, t0.Add(time.Duration(i)*5*time.Minute), in)
		if i == 3 {
			if err == nil || !strings.Contains(err.Error(), "status 503: load balancer busy") {
				t.Fatalf("tick 3: %v", err)
			}
			rc.mu.Lock()
			rc.fail = false
			rc.mu.Unlock()
			m, err = d.Tick(ctx, t0.Add(time.Duration(i)*5*time.Minute), in)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := ""; m != nil {
			got = changeStrings(m.Changes)
			if got != want[i] {
				t.Fatalf("tick %d: changes %q, want %q", i, got, want[i])
			}
			sent = append(sent, m)
		} else if want[i] != "" {
			t.Fatalf("tick %d: nothing sent, want %q", i, want[i])
		}
	}
	if len(sent) != 6 || sent[5].Seq != 6 {
		t.Fatalf("%d messages, last seq %d", len(sent), sent[len(sent)-1].Seq)
	}
	// The webhook got each message once (the failed attempt not counted)
	// and Kafka has the same bodies in order, plus tick 3's first attempt,
	// which Kafka took although the webhook failed: a receiver applies the
	// whole plan, so a repeated sequence number is harmless.
	if len(rc.bodies) != 6 {
		t.Fatalf("webhook got %d bodies", len(rc.bodies))
	}
	for i, b := range rc.bodies {
		var m Message
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Seq != uint64(i+1) || changeStrings(m.Changes) != changeStrings(sent[i].Changes) {
			t.Fatalf("webhook body %d: %s", i, b)
		}
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: cluster.ListenAddrs(), Topic: "tm-plans", MaxWait: 50 * time.Millisecond})
	defer r.Close()
	var seqs []uint64
	for len(seqs) < 7 {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		km, err := r.ReadMessage(rctx)
		cancel()
		if err != nil {
			t.Fatalf("after %v: %v", seqs, err)
		}
		var m Message
		if err := json.Unmarshal(km.Value, &m); err != nil {
			t.Fatal(err)
		}
		if string(km.Key) != "traffic-manager" || string(km.Headers[0].Value) != strconv.FormatUint(m.Seq, 10) {
			t.Fatalf("kafka message %s %v", km.Key, km.Headers)
		}
		seqs = append(seqs, m.Seq)
		if m.Seq == 6 && changeStrings(m.Changes) != changeStrings(sent[5].Changes) {
			t.Fatalf("kafka seq 6: %s", km.Value)
		}
	}
	if got := seqsString(seqs); got != "1 2 3 3 4 5 6" {
		t.Fatalf("kafka seqs %s", got)
	}
}

func TestDryRunPublishesNothing(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	wh, _ := NewWebhook(srv.URL, "s3cret")
	ins, _ := inputs(t)
	d := &Driver{Mode: "dry-run", Publishers: []Publisher{wh}}
	n := 0
	for i, in := range ins {
		m, err := d.Tick(context.Background(), time.Unix(int64(i), 0), in)
		if err != nil {
			t.Fatal(err)
		}
		if m != nil {
			n++
		}
	}
	if n != 6 || len(rc.bodies) != 0 {
		t.Fatalf("dry-run: %d messages, %d delivered", n, len(rc.bodies))
	}
	if _, err := NewWebhook("ftp://x", ""); err == nil {
		t.Fatal("bad URL accepted")
	}
}

func seqsString(v []uint64) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.FormatUint(x, 10))
	}
	return strings.Join(s, " ")
}
