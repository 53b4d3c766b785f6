package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The brokers it prints take a record and give it back, on loopback, and
// it stops when its context ends.
func TestBrokersAnswerAndStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, "0,0", w) }()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	addrs, ok := strings.CutPrefix(strings.TrimSpace(line), "brokers: ")
	if !ok || len(strings.Split(addrs, ",")) != 2 {
		t.Fatalf("printed %q, want brokers: and two addresses", line)
	}
	for _, a := range strings.Split(addrs, ",") {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("broker %s is not on loopback", a)
		}
	}

	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	// As `outagewatch produce` does, with another client: the topic first.
	admin := &kafka.Client{Addr: kafka.TCP(strings.Split(addrs, ",")[1]), Timeout: 10 * time.Second}
	if _, err := admin.CreateTopics(pctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: "flows", NumPartitions: 3, ReplicationFactor: -1}}}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")[0]),
		kgo.ConsumeTopics("flows"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: "flows", Value: []byte("a flow")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	fs := cl.PollFetches(pctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "a flow" {
		t.Fatalf("fetched %d records, want the one produced", len(recs))
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after its context ended")
	}
}

func TestBadPorts(t *testing.T) {
	err := run(context.Background(), "9092,kafka", io.Discard)
	if err == nil || err.Error() != `-ports "9092,kafka": want port numbers such as 9092,9094` {
		t.Fatalf("got %v", err)
	}
}
