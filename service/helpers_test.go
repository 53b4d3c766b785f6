package service

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	_ "github.com/outagewatch/outagewatch/ingest/flows"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/rules"
	"github.com/outagewatch/outagewatch/scenario"
)

const fixturePath = "../fixtures/uganda-2021-01-13.yaml"

// raceFrom is where the race-detector runs start the fixture: two days
// before the shutdown, enough history for the previous-days baseline to
// alert, and a fifth of the records.
var raceFrom = time.Date(2021, 1, 11, 12, 0, 0, 0, time.UTC).UnixNano()

// fixture is the Uganda shutdown rendered once for every test: its records
// with Kafka's millisecond timestamps (what a consumer sees), the mapping,
// rules and local ASNs that `outagewatch replay` would use, and what replay
// outputs for exactly these records.
type fixture struct {
	recs     []*ingest.Record
	m        *netmap.Map
	set      *rules.Set
	local    []uint32
	want     []string // alert JSON lines from replay
	stats    pipeline.Stats
	lastTime int64
	// topics has one topic per stream the fixture renders (flows, dns, ...),
	// named after the stream, with the format its records are in.
	topics []Topic
}

var (
	fixOnce sync.Once
	fix     fixture
	fixErr  error
)

func loadFixture(t testing.TB) *fixture {
	t.Helper()
	fixOnce.Do(func() { fixErr = buildFixture() })
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return &fix
}

func buildFixture() error {
	spec, err := scenario.Load(fixturePath)
	if err != nil {
		return err
	}
	fix.m, fix.local = spec.Map(), spec.LocalASNs
	if spec.Rules != "" {
		if fix.set, err = rules.Load(filepath.Join(filepath.Dir(fixturePath), spec.Rules)); err != nil {
			return err
		}
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		return err
	}
	all, err := replay.Collect(srcs...)
	if err != nil {
		return err
	}
	for _, r := range all {
		if raceEnabled && r.Time < raceFrom {
			continue
		}
		r.Time = r.Time / 1e6 * 1e6 // Kafka timestamps are milliseconds
		if !slices.ContainsFunc(fix.topics, func(t Topic) bool { return t.Name == r.Stream }) {
			fix.topics = append(fix.topics, Topic{Name: r.Stream, Stream: r.Stream, Format: r.Format})
		}
		fix.recs = append(fix.recs, r)
		fix.lastTime = max(fix.lastTime, r.Time)
	}
	// Replay of the very records the tests produce.
	var out bytes.Buffer
	sink := alerting.NewJSONL("replay", &out)
	send := func(ev *alerting.Event) { _ = sink.Send(context.Background(), ev) }
	p, err := pipeline.New(pipeline.Config{Rules: fix.set, Map: fix.m, LocalASNs: fix.local, Logger: quietLog(), Events: send}, send)
	if err != nil {
		return err
	}
	recs := make([]*ingest.Record, len(fix.recs))
	for i, r := range fix.recs {
		c := *r
		recs[i] = &c
	}
	if err := replay.Run(p, []replay.Source{replay.NewSliceSource("fixture", recs)}, nil); err != nil {
		return err
	}
	fix.want = lines(out.String())
	fix.stats = p.Stats()
	return nil
}

func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

const testPartitions = 3

// startBroker starts an in-process Kafka (kfake speaks the real wire
// protocol) on port (0 for any), persisting to dir when dir is not empty.
func startBroker(t testing.TB, port int, dir string, topics ...string) *kfake.Cluster {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port), kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(1), kfake.GroupMinSessionTimeout(100 * time.Millisecond)}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(testPartitions, topics...))
	}
	if dir != "" {
		opts = append(opts, kfake.DataDir(dir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// produce writes records to topic, spreading them over the partitions in
// turn, so every partition is in event-time order like a real producer's.
func produce(t testing.TB, addr, topic string, recs []*ingest.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(1<<16))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var mu sync.Mutex
	var firstErr error
	for i, r := range recs {
		kr := &kgo.Record{Topic: topic, Partition: int32(i % testPartitions), Key: r.Key, Value: r.Value,
			Timestamp: time.Unix(0, r.Time)}
		cl.Produce(context.Background(), kr, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if firstErr != nil {
		t.Fatal(firstErr)
	}
}

// topicNames lists the fixture's topics, plus extra ones.
func (f *fixture) topicNames(extra ...string) []string {
	out := slices.Clone(extra)
	for _, t := range f.topics {
		out = append(out, t.Name)
	}
	return out
}

// produceFixture writes every record of the fixture to its stream's topic.
func produceFixture(t testing.TB, addr string, f *fixture) {
	t.Helper()
	produceStreams(t, addr, f.topics, f.recs)
}

// produceStreams writes each record to the topic of its stream.
func produceStreams(t testing.TB, addr string, topics []Topic, recs []*ingest.Record) {
	t.Helper()
	for _, tp := range topics {
		var part []*ingest.Record
		for _, r := range recs {
			if r.Stream == tp.Name {
				part = append(part, r)
			}
		}
		produce(t, addr, tp.Name, part)
	}
}

// testConfig is a service config for topics on addr (default: flows).
func testConfig(addr, dataDir string, topics ...Topic) *Config {
	if len(topics) == 0 {
		topics = []Topic{{Name: "flows", Stream: "flows", Format: "goflow2-pb"}}
	}
	return &Config{
		Kafka: KafkaConfig{Brokers: []string{addr}, GroupID: "outagewatch-test",
			Topics:    slices.Clone(topics),
			IdleAfter: 300 * time.Millisecond, PollInterval: 100 * time.Millisecond, SessionTimeout: time.Second},
		DataDir: dataDir, CheckpointInterval: 500 * time.Millisecond,
		Sinks: []Sink{{Name: "alerts", Type: "jsonl", Path: filepath.Join(dataDir, "alerts.jsonl")}},
		HTTP:  HTTP{Listen: "127.0.0.1:0"},
	}
}

func mustValidate(t testing.TB, c *Config) *Config {
	t.Helper()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// startStaged runs both stages in this process with opts (a listener of
// its own when opts has none) until stop, which fails the test if Run
// returned an error. base is the URL of its HTTP endpoints.
func startStaged(t testing.TB, cfg *Config, opts Options) (base string, st *Staged, stop func()) {
	t.Helper()
	return startStagedAs(t, cfg, opts, StageBoth)
}

// startStagedAs is startStaged running stage only.
func startStagedAs(t testing.TB, cfg *Config, opts Options, stage string) (base string, st *Staged, stop func()) {
	t.Helper()
	if opts.Listener == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		opts.Listener = ln
	}
	if opts.Logger == nil {
		opts.Logger = quietLog()
	}
	if opts.Outbox.InitialBackoff == 0 {
		opts.Outbox.InitialBackoff = 10 * time.Millisecond
	}
	st, err := NewStaged(cfg, opts, stage)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	var once sync.Once
	return "http://" + opts.Listener.Addr().String(), st, func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Error(err)
				}
			case <-time.After(60 * time.Second):
				t.Error("the stages did not stop")
			}
		})
	}
}

// metricLine is the value of the first series of /metrics at base whose
// line starts with prefix (name and labels, as exposed); "" when none.
func metricLine(t testing.TB, base, prefix string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, prefix+" "); ok {
			return v
		}
	}
	return ""
}

// waitLines waits until every line of want (by delivery key) is in the
// file of a jsonl sink, and returns what the file holds then.
func waitLines(t testing.TB, path string, want map[string]string) map[string]string {
	t.Helper()
	var got map[string]string
	deadline := time.Now().Add(waitLong)
	for {
		var err error
		if got, err = byDeliveryKey(readLines(t, path)); err != nil {
			t.Fatal(err)
		}
		var missing []string
		for k, line := range want {
			if _, ok := got[k]; !ok {
				missing = append(missing, line)
			}
		}
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			// What differs, so that a failure says which alert.
			var extra []string
			for k, line := range got {
				if _, ok := want[k]; !ok {
					extra = append(extra, line)
				}
			}
			slices.Sort(missing)
			slices.Sort(extra)
			t.Fatalf("timed out waiting for every line of the replay delivered: %d of %d missing:\n%s\ndelivered and not in the replay (%d):\n%s",
				len(missing), len(want), strings.Join(missing[:min(len(missing), 5)], "\n"), len(extra), strings.Join(extra[:min(len(extra), 5)], "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readLines reads the complete lines of a file another process may be
// appending to: a sink writes a line with one write call, but a reader can
// see part of it, so what follows the last newline is left for the next
// read.
func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return lines(string(b[:bytes.LastIndexByte(b, '\n')+1]))
}

func assertSameAlerts(t *testing.T, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
		if seen[l] > 1 {
			t.Errorf("duplicate alert: %s", l)
		}
	}
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("alerts differ from replay: got %d, want %d", len(got), len(want))
		for _, l := range w {
			if !slices.Contains(g, l) {
				t.Errorf("missing: %s", l)
			}
		}
		for _, l := range g {
			if !slices.Contains(w, l) {
				t.Errorf("extra: %s", l)
			}
		}
	}
}

// waitLong bounds how long a test waits for the service to work through a
// fixture: generous, because the race detector and a busy machine slow it
// down tenfold; a test that passes never waits that long.
const waitLong = 5 * time.Minute
