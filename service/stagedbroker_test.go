package service

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A staged process whose credentials the brokers refuse is not ready and
// says it is the SASL credentials, not a broker that is down.
func TestStagedReadyNamesSASLFailure(t *testing.T) {
	t.Setenv("OW_TEST_WRONG_PASSWORD", "guess")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "flows"), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "outagewatch", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	cfg, err := ParseConfig("sasl.yaml", []byte("kafka:\n  brokers: ["+c.ListenAddrs()[0]+"]\n  group_id: sasl\n"+
		"  topics: [{name: flows, stream: flows, format: goflow2-pb}]\n"+
		"  sasl: {mechanism: PLAIN, username: outagewatch, password_env: OW_TEST_WRONG_PASSWORD}\n"+
		"data_dir: "+dir+"\nhttp: {listen: 127.0.0.1:0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	base, stop := runStaged(t, cfg, quietLog())
	defer stop()
	var code int
	var body string
	waitFor(t, "readyz to name the refusal", waitLong, func() bool {
		code, body = get(t, base+"/readyz")
		return code != http.StatusOK && !strings.HasPrefix(body, "no consumer group")
	})
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "kafka refused the SASL credentials (kafka.sasl username or password): ") {
		t.Fatalf("readyz %d %q", code, body)
	}
}

// runStaged runs both stages of cfg in process until stop.
func runStaged(t *testing.T, cfg *Config, log *slog.Logger) (base string, stop func()) {
	t.Helper()
	base, _, stop = runStagedObj(t, cfg, log)
	return base, stop
}

// runStagedObj is runStaged that returns the stages too.
func runStagedObj(t *testing.T, cfg *Config, log *slog.Logger) (base string, st *Staged, stop func()) {
	t.Helper()
	f := loadFixture(t)
	return startStaged(t, cfg, Options{Rules: f.set, Map: f.m, Logger: log})
}

// With the broker gone, a staged process says so on /readyz, its
// watermark age keeps growing from the data time it has instead of
// reading 0, and its retries warn once, not once a second.
func TestStagedBrokerGone(t *testing.T) {
	f := loadFixture(t)
	c := startBroker(t, 0, "", f.topicNames()...)
	addr := c.ListenAddrs()[0]
	var in = f.recs[:0:0]
	for _, r := range f.recs {
		if r.Time >= raceFrom && r.Time < raceFrom+int64(6*time.Hour) {
			in = append(in, r)
		}
	}
	produceStreams(t, addr, f.topics, in)
	dir := t.TempDir()
	cfg := stagedConfig(childSpec{Broker: addr, Dir: dir, Stage: StageBoth, Topics: f.topics})
	var logs syncBuffer
	base, stop := runStaged(t, cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	defer stop()
	wm := func() float64 {
		_, m := get(t, base+"/metrics")
		for l := range strings.SplitSeq(m, "\n") {
			if v, ok := strings.CutPrefix(l, "outagewatch_watermark_timestamp_seconds "); ok {
				x, _ := strconv.ParseFloat(v, 64)
				return x
			}
		}
		return 0
	}
	waitFor(t, "buckets closed", waitLong, func() bool { return wm() > 0 })
	waitFor(t, "ready", waitLong, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })
	c.Close()
	var body string
	waitFor(t, "readyz to say the broker is gone", waitLong, func() bool {
		_, body = get(t, base+"/readyz")
		return strings.HasPrefix(body, "kafka unreachable: ")
	})
	_, m := get(t, base+"/metrics")
	var age, mark float64 = -1, wm()
	for l := range strings.SplitSeq(m, "\n") {
		if v, ok := strings.CutPrefix(l, "outagewatch_watermark_age_seconds "); ok {
			age, _ = strconv.ParseFloat(v, 64)
		}
	}
	// The fixture is of 2021: the age is the years since its data time.
	if want := float64(time.Now().Unix()) - mark; math.Abs(age-want) > 5 || mark <= 0 {
		t.Fatalf("watermark age %v with the watermark at %v, want about %v", age, mark, want)
	}
	// The page says it is not live, why, and the data time it has. Stage
	// two may still be closing buckets of records it fetched before the
	// broker went, so the data time is the watermark's when the page is
	// read, and the page is read until the two agree.
	var code int
	var page, wantBanner string
	for deadline := time.Now().Add(waitLong); ; time.Sleep(50 * time.Millisecond) {
		before := wm()
		code, page = get(t, base+"/")
		wantBanner = `Not live: kafka unreachable: broker ` + addr + `: failed to dial: failed to open connection to ` + addr +
			`: dial tcp ` + addr + `: connect: connection refused. The page shows data up to ` +
			time.Unix(int64(before), 0).UTC().Format("2006-01-02 15:04 MST") + `.</p>`
		if code == http.StatusOK && strings.Contains(page, wantBanner) && wm() == before {
			break
		}
		if time.Now().After(deadline) {
			banner, _, _ := strings.Cut(page[strings.Index(page, `<p id="not-live"`)+1:], "</p>")
			t.Fatalf("outage page %d without %q; its banner: %q", code, wantBanner, banner)
		}
	}
	if !strings.Contains(m, "\noutagewatch_ready 0\n") {
		t.Fatal("metrics say ready with the broker gone")
	}
	if n := strings.Count(logs.String(), `msg="kafka: not ready"`); n != 1 {
		t.Fatalf("%d broker warnings, want 1:\n%s", n, logs.String())
	}
}

// With the right SASL credentials (SCRAM-SHA-512) a staged process
// creates its topics, joins both groups, reads every record and is ready:
// every Kafka client of the runtime (group, readers, producer, admin,
// probe) authenticates.
func TestStagedWithSASL(t *testing.T) {
	f := loadFixture(t)
	t.Setenv("OW_TEST_KAFKA_PASSWORD", "s3cret")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(testPartitions, "flows", "dead"), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "outagewatch", "s3cret"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	dir := t.TempDir()
	cfg, err := ParseConfig("sasl.yaml", []byte("kafka:\n  brokers: ["+addr+"]\n  group_id: sasl\n  dead_letter_topic: dead\n"+
		"  session_timeout: 2s\n  poll_interval: 200ms\n  idle_partition_after: 2s\n  internal_partitions: 2\n"+
		"  topics: [{name: flows, stream: flows, format: goflow2-pb}]\n"+
		"  sasl: {mechanism: SCRAM-SHA-512, username: outagewatch, password_env: OW_TEST_KAFKA_PASSWORD}\n"+
		"data_dir: "+dir+"\ncheckpoint_interval: 1s\nhttp: {listen: 127.0.0.1:0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := cfg.KafkaDialer()
	if err != nil {
		t.Fatal(err)
	}
	var good []*ingest.Record
	for _, r := range f.recs {
		if r.Stream == "flows" && len(good) < 300 {
			good = append(good, r)
		}
	}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "flows", Balancer: &kafka.RoundRobin{},
		Transport: kafkaio.Transport(d), BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	msgs := []kafka.Message{{Value: []byte("not a flow"), Time: time.Unix(0, good[0].Time)}}
	for _, r := range good {
		msgs = append(msgs, kafka.Message{Value: r.Value, Time: time.Unix(0, r.Time)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	base, stop := runStaged(t, cfg, quietLog())
	defer stop()
	waitFor(t, "every record read, the bad one dead-lettered, ready", waitLong, func() bool {
		code, _ := get(t, base+"/readyz")
		_, m := get(t, base+"/metrics")
		return code == http.StatusOK && strings.Contains(m, `outagewatch_records_total{topic="flows"} `+strconv.Itoa(len(msgs))+"\n") &&
			strings.Contains(m, `outagewatch_dead_letters_total{reason="truncated",topic="flows"} 1`+"\n")
	})
}

// The broker goes away mid-stream and comes back on the same address with
// its data: the stages report not-ready meanwhile, then go on, and every
// line of the replay is delivered as the replay gives it, none extra.
func TestStagedBrokerOutage(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs days of the Uganda fixture through both stages")
	}
	f := loadFixture(t)
	sf := loadStagedFixture(t)
	kdir := t.TempDir()
	c := startBroker(t, 0, kdir, f.topicNames()...)
	addr := c.ListenAddrs()[0]
	port, err := strconv.Atoi(addr[strings.LastIndex(addr, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	produceStreams(t, addr, f.topics, sf.recs)
	dir := t.TempDir()
	cfg := stagedConfig(childSpec{Broker: addr, Dir: dir, Stage: StageBoth, Topics: f.topics})
	cfg.LocalASNs = f.local
	base, stop := runStaged(t, cfg, quietLog())
	defer stop()
	readyz := func() int { code, _ := get(t, base+"/readyz"); return code }
	waitFor(t, "ready", waitLong, func() bool { return readyz() == http.StatusOK })
	alerts := filepath.Join(dir, "alerts.jsonl")
	waitFor(t, "the first alert", waitLong, func() bool { return len(readLines(t, alerts)) > 0 })
	c.Close()
	waitFor(t, "not ready during the outage", waitLong, func() bool { return readyz() == http.StatusServiceUnavailable })
	delivered := len(readLines(t, alerts))
	time.Sleep(500 * time.Millisecond)

	c = startBroker(t, port, kdir)
	defer c.Close()
	waitFor(t, "ready again", waitLong, func() bool { return readyz() == http.StatusOK })
	waitLines(t, alerts, sf.want)
	stop()
	got, err := byDeliveryKey(readLines(t, alerts))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d lines delivered before the outage", delivered, len(sf.want))
	sameByKey(t, sf.want, got)
}
