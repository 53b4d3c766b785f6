package kafkaio

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// On a real broker (kfake speaks the wire protocol): topics are created
// once (again is no error), records produced to a partition come back by
// FetchBatches and ReadRange in order with their offsets, the high
// watermarks count them, and an offset committed in a group generation is
// read back with its metadata.
func TestClientsRoundTrip(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := Conn{Brokers: brokers, ClientID: "kafkaio-test"}.Dialer(nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := Transport(d)
	defer tr.CloseIdleConnections()
	cl := NewClient(brokers, tr)
	topics := []kafka.TopicConfig{{Topic: "in", NumPartitions: 2, ReplicationFactor: -1},
		{Topic: "log", NumPartitions: 1, ReplicationFactor: -1, ConfigEntries: Compacted}}
	for range 2 {
		if err := CreateTopics(ctx, cl, quiet(), topics); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := Partitions(ctx, cl, []string{"log", "in"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []TP{{"in", 0}, {"in", 1}, {"log", 0}}; !slices.Equal(ps, want) {
		t.Fatalf("partitions %v, want %v", ps, want)
	}
	var recs []kafka.Record
	for _, v := range []string{"a", "b", "c"} {
		recs = append(recs, kafka.Record{Value: kafka.NewBytes([]byte(v))})
	}
	if off, err := Produce(ctx, cl, "in", 1, recs); err != nil || off != 0 {
		t.Fatalf("produce: first offset %d, %v", off, err)
	}
	h, err := HighWatermarks(ctx, cl, []string{"in"})
	if err != nil || h[TP{"in", 0}] != 0 || h[TP{"in", 1}] != 3 {
		t.Fatalf("high watermarks %v, %v", h, err)
	}
	var got []string
	err = ReadRange(ctx, brokers, d, quiet(), "in", 1, 1, 3, func(m kafka.Message) error {
		got = append(got, string(m.Value)+"@"+strconv.FormatInt(m.Offset, 10))
		return nil
	})
	if err != nil || strings.Join(got, " ") != "b@1 c@2" {
		t.Fatalf("read range: %q, %v", got, err)
	}
	got = got[:0]
	fctx, fcancel := context.WithCancel(ctx)
	FetchBatches(fctx, brokers, d, quiet(), "in", 1, kafka.FirstOffset, func(b []kafka.Message) bool {
		for _, m := range b {
			got = append(got, string(m.Value))
		}
		if len(got) >= 3 {
			fcancel()
		}
		return len(got) < 3
	})
	fcancel()
	if strings.Join(got, "") != "abc" {
		t.Fatalf("fetched %q", got)
	}

	cg, gens, err := JoinGroup(ctx, Group{ID: "g", Brokers: brokers, Dialer: d, Topics: []string{"in"},
		SessionTimeout: time.Second, Log: quiet(), Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	var gen *kafka.Generation
	select {
	case gen = <-gens:
	case <-ctx.Done():
		t.Fatal("no generation")
	}
	if err := CommitGroup(ctx, cl, gen, map[string][]kafka.OffsetCommit{"in": {{Partition: 1, Offset: 2, Metadata: "flushed=42"}}}); err != nil {
		t.Fatal(err)
	}
	cm, err := Committed(ctx, cl, "g", map[string][]int{"in": {1}})
	if err != nil || cm[TP{"in", 1}].CommittedOffset != 2 || cm[TP{"in", 1}].Metadata != "flushed=42" {
		t.Fatalf("committed %+v, %v", cm, err)
	}
}

// A broker that refuses the credentials is named as such by Trouble, not
// as one that is down; a closed port is "unreachable".
func TestTroubleNamesAuthentication(t *testing.T) {
	t.Setenv("KAFKAIO_TEST_PASSWORD", "guess")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "ow", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	brokers := c.ListenAddrs()
	d, err := Conn{Brokers: brokers, SASL: &SASL{Mechanism: "plain", Username: "ow", PasswordEnv: "KAFKAIO_TEST_PASSWORD"}}.Dialer(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = DialAny(ctx, d, brokers)
	if why := Trouble(err); !strings.HasPrefix(why, "kafka refused the SASL credentials (kafka.sasl username or password): broker "+brokers[0]) {
		t.Fatalf("wrong password: %q", why)
	}
	c.Close()
	err = DialAny(ctx, d, brokers)
	if why := Trouble(err); !strings.HasPrefix(why, "kafka unreachable: broker "+brokers[0]) {
		t.Fatalf("closed broker: %q", why)
	}
	// A setting that cannot work names its key.
	_, err = Conn{SASL: &SASL{Mechanism: "GSSAPI"}}.Dialer(nil)
	var se *SecError
	if !errors.As(err, &se) || se.Key != "kafka.sasl.mechanism" {
		t.Fatalf("unknown mechanism: %v", err)
	}
}
