package tmfeed

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outagewatch/outagewatch/planhook"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

// The scenario's reports on a Kafka topic (kfake), with one malformed
// record among them, drive the live planner: each plan change reaches the
// webhook, and capacity queries answer from the latest window.
func TestLiveFromKafka(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "dcload"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := os.Open("../trafficmanager/testdata/sections-and-loss.dcload.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []kafka.Message
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		msgs = append(msgs, kafka.Message{Value: append([]byte(nil), sc.Bytes()...)})
		if len(msgs) == 3 {
			msgs = append(msgs, kafka.Message{Value: []byte(`{"dc": "IAD.s1"}`)})
		}
	}
	f.Close()
	// A report in the next window closes the last one.
	msgs = append(msgs, kafka.Message{Value: []byte(`{"time":"2025-04-28T10:36:00Z","dc":"ATL","plans":{"free":300}}`)})
	w := &kafka.Writer{Addr: kafka.TCP(c.ListenAddrs()...), Topic: "dcload", BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	var mu sync.Mutex
	var bodies int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		bodies++
		mu.Unlock()
	}))
	defer srv.Close()
	wh, err := planhook.NewWebhook(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	sc2, err := trafficmanager.LoadScenario("../trafficmanager/testdata/sections-and-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := &planhook.Driver{Mode: "enforce", Publishers: []planhook.Publisher{wh}}
	live := NewLive(New(sc2), func(ctx context.Context, tk *Tick) (trafficmanager.State, error) {
		_, err := d.Tick(ctx, tk.At, tk.Input)
		return d.State(), err
	})
	// Before any window closes, capacity answers from the topology.
	in, st := live.Capacity()
	if a, err := trafficmanager.Capacity(in, st, "ATL", 500); err != nil || !a.OK {
		t.Fatalf("capacity before: %+v %v", a, err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.ListenAddrs(), Topic: "dcload", Partition: 0, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- live.Run(ctx, r) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if planned, _ := live.Counts(); planned == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("live planner did not plan seven windows")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, skipped := live.Counts()
	mu.Lock()
	n := bodies
	mu.Unlock()
	if n != 6 || skipped != 1 {
		t.Fatalf("%d plans delivered, %d reports skipped; want 6 and 1", n, skipped)
	}
	// After the last window everything is home: ORD (400 of 1,000) has
	// 300, and its nearest with room are IAD (15 ms) then ATL.
	in, st = live.Capacity()
	a, err := trafficmanager.Capacity(in, st, "ORD", 1200)
	if err != nil || a.Room != 300 || len(a.Nearest) != 2 || a.Nearest[0].Location != "IAD" || a.Nearest[1].Location != "ATL" {
		t.Fatalf("capacity after: %+v %v", a, err)
	}
}
