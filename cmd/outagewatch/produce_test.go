package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/recordfile"
	"github.com/outagewatch/outagewatch/internal/gztest"
	"github.com/outagewatch/outagewatch/replay"
)

func startKfake(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// consumed is a record as a consumer reads it back.
type consumed struct {
	partition int32
	offset    int64
	ts        int64 // ms
	key       string
	value     string
	headers   string
}

// consumeAll reads every topic from its start, with franz-go (another
// client than the one produce writes with), until want records came or a
// poll brings nothing more.
func consumeAll(t *testing.T, addr string, topics []string, want int) map[string][]consumed {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string][]consumed{}
	n := 0
	for n < want {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if ctx.Err() != nil && fs.NumRecords() == 0 {
			break
		}
		if errs := fs.Errors(); len(errs) > 0 && ctx.Err() == nil {
			t.Fatalf("fetch: %v", errs)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var h []string
			for _, x := range r.Headers {
				h = append(h, x.Key+"="+string(x.Value))
			}
			out[r.Topic] = append(out[r.Topic], consumed{r.Partition, r.Offset, r.Timestamp.UnixMilli(), string(r.Key), string(r.Value), strings.Join(h, ",")})
			n++
		})
	}
	if n != want {
		t.Fatalf("read back %d records, want %d", n, want)
	}
	return out
}

func runProduce(t *testing.T, args ...string) {
	t.Helper()
	c := produceCmd()
	c.SetArgs(args)
	c.SilenceUsage, c.SilenceErrors = true, true
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
}

// A bundled fixture rendered into Kafka: every record on the topic of its
// stream, with its event time (in Kafka's milliseconds) as timestamp, and
// each partition in event-time order, as a live feed would be.
func TestProduceFixture(t *testing.T) {
	const name = "bgp-session-reset-2024-05-14"
	spec, err := loadFixture("fixtures/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := replay.Collect(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{} // topic → timestamps (ms), sorted
	for _, r := range recs {
		want["trial."+r.Stream] = append(want["trial."+r.Stream], r.Time/1e6)
	}
	if len(want) != 1 || len(want["trial.bgp"]) < 100 {
		t.Fatalf("fixture renders %d topics, %d BGP records: not the fixture this test expects", len(want), len(want["trial.bgp"]))
	}

	addr := startKfake(t)
	runProduce(t, name, "--brokers", addr, "--topic-prefix", "trial.", "--partitions", "2")
	got := consumeAll(t, addr, []string{"trial.bgp"}, len(recs))
	for topic, ts := range want {
		rs := got[topic]
		var gts []int64
		last := map[int32]int64{}
		parts := map[int32]int{}
		for _, r := range rs {
			gts = append(gts, r.ts)
			if r.ts < last[r.partition] {
				t.Fatalf("%s partition %d: timestamp %d after %d: out of event-time order", topic, r.partition, r.ts, last[r.partition])
			}
			last[r.partition] = r.ts
			parts[r.partition]++
		}
		slices.Sort(gts)
		if !slices.Equal(gts, ts) {
			t.Fatalf("%s: %d records with timestamps %v…, want %d with %v…", topic, len(gts), gts[:min(3, len(gts))], len(ts), ts[:3])
		}
		if len(parts) != 2 {
			t.Errorf("%s: records on partitions %v, want both of 2", topic, parts)
		}
	}
}

// A recording plays back with its keys, headers, values and timestamps,
// each stream to its own topic, keyed records on their key's partition;
// the records of each partition keep the order of the recording.
func TestProduceRecording(t *testing.T) {
	base := time.Date(2021, 1, 13, 17, 0, 0, 0, time.UTC).UnixNano()
	var b bytes.Buffer
	var recs []*ingest.Record
	for i := range 60 {
		r := &ingest.Record{Stream: "flows", Format: "goflow2-pb", Topic: "old-flows", Offset: int64(i),
			Time: base + int64(i)*1_500_000_123, Value: fmt.Appendf(nil, "flow %d", i)}
		if i%3 == 0 {
			r.Stream, r.Format, r.Topic = "dns", "dnstap", "old-dns"
			r.Key = fmt.Appendf(nil, "resolver-%d", i%2)
			r.Headers = []ingest.Header{{Key: "site", Value: []byte("lis01")}}
		}
		recs = append(recs, r)
		if err := recordfile.Write(&b, r); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "trial"+recordfile.Ext)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	addr := startKfake(t)
	runProduce(t, path, "--brokers", addr)
	got := consumeAll(t, addr, []string{"flows", "dns"}, len(recs))
	if len(got["flows"]) != 40 || len(got["dns"]) != 20 {
		t.Fatalf("flows %d, dns %d records; want 40 and 20", len(got["flows"]), len(got["dns"]))
	}
	keyPart := map[string]int32{}
	for topic, rs := range got {
		// Offsets order a partition; the values say which record each is.
		slices.SortFunc(rs, func(a, b consumed) int {
			if a.partition != b.partition {
				return int(a.partition - b.partition)
			}
			return int(a.offset - b.offset)
		})
		prev := map[int32]int{}
		for _, c := range rs {
			var i int
			if _, err := fmt.Sscanf(c.value, "flow %d", &i); err != nil {
				t.Fatalf("%s: value %q", topic, c.value)
			}
			r := recs[i]
			if r.Stream != topic || c.ts != r.Time/1e6 || c.key != string(r.Key) {
				t.Errorf("%s: record %d read back as %+v, want stream %s, ts %d, key %q", topic, i, c, r.Stream, r.Time/1e6, r.Key)
			}
			wantHeaders := ""
			if r.Headers != nil {
				wantHeaders = "site=lis01"
			}
			if c.headers != wantHeaders {
				t.Errorf("%s: record %d headers %q, want %q", topic, i, c.headers, wantHeaders)
			}
			if p, ok := prev[c.partition]; ok && i < p {
				t.Errorf("%s partition %d: record %d after %d", topic, c.partition, i, p)
			}
			prev[c.partition] = i
			if c.key != "" {
				if p, ok := keyPart[c.key]; ok && p != c.partition {
					t.Errorf("key %s on partitions %d and %d", c.key, p, c.partition)
				}
				keyPart[c.key] = c.partition
			}
		}
	}
	if len(keyPart) != 2 {
		t.Errorf("keys seen %v, want resolver-0 and resolver-1", keyPart)
	}
}

// Bad arguments fail before any broker is dialled.
func TestProduceBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"uganda-2021-01-13"}, "--brokers (or a --config that names them) is required"},
		{[]string{"uganda-2021-01-13", "--brokers", "127.0.0.1:1", "--speed", "-2"}, "--speed -2: want 0"},
		{[]string{"uganda-2021-01-13", "--brokers", "127.0.0.1:1", "--fast-until", "tomorrow"}, `--fast-until "tomorrow": want an RFC 3339 time`},
		{[]string{"uganda-2021-01-13", "--brokers", "127.0.0.1:1", "--topic-prefix", "a/b"}, `--topic-prefix "a/b"`},
		{[]string{"uganda-2021-01-13", "--brokers", "127.0.0.1:1", "--partitions", "0"}, "--partitions 0: want at least 1"},
		{[]string{"no-such.owrec", "--brokers", "127.0.0.1:1"}, "no-such.owrec"},
	} {
		c := produceCmd()
		c.SetArgs(tc.args)
		c.SilenceUsage, c.SilenceErrors = true, true
		err := c.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

// fakeClock moves only when play sleeps, and notes each sleep with the
// records written by then.
type fakeClock struct {
	now     time.Time
	written *int
	sleeps  []string
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(_ context.Context, d time.Duration) bool {
	c.sleeps = append(c.sleeps, fmt.Sprintf("%v after %d", d, *c.written))
	c.now = c.now.Add(d)
	return true
}

// countingWriter passes writes to the real writer and counts them.
type countingWriter struct {
	w *kafka.Writer
	n int
}

func (c *countingWriter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	if err := c.w.WriteMessages(ctx, msgs...); err != nil {
		return err
	}
	c.n += len(msgs)
	return nil
}

// Records before --fast-until go at once; from it on each is released at
// its event time's distance from the first paced record, divided by the
// speed, and everything due is in Kafka before play waits.
func TestPlayPacesByEventTime(t *testing.T) {
	t0 := time.Date(2021, 1, 13, 15, 0, 0, 0, time.UTC)
	var recs []*ingest.Record
	var wantMs []int64
	for i, d := range []time.Duration{-2 * time.Hour, -time.Hour, 0, 10 * time.Minute, 10 * time.Minute, 30 * time.Minute} {
		recs = append(recs, &ingest.Record{Stream: "flows", Time: t0.Add(d).UnixNano(), Value: []byte{byte(i)}})
		wantMs = append(wantMs, t0.Add(d).UnixMilli())
	}
	addr := startKfake(t)
	if err := createTopics(context.Background(), []string{addr}, &kafka.Transport{}, []string{"flows"}, 1); err != nil {
		t.Fatal(err)
	}
	w := &countingWriter{w: newProducer([]string{addr}, &kafka.Transport{})}
	defer w.w.Close()
	clk := &fakeClock{now: time.Unix(1e9, 0), written: &w.n}
	st, err := play(context.Background(), w, replay.NewSliceSource("t", recs), playOptions{topics: map[streamFormat]string{{"flows", ""}: "flows"}, speed: 600, fastUntil: t0.UnixNano()}, clk)
	if err != nil {
		t.Fatal(err)
	}
	// 10 minutes at 600× is one second; the record at 30 minutes is due
	// two seconds after that.
	if want := []string{"1s after 3", "2s after 5"}; !slices.Equal(clk.sleeps, want) {
		t.Fatalf("sleeps %v, want %v", clk.sleeps, want)
	}
	if w.n != 6 || st.records["flows"] != 6 || st.elapsed != 3*time.Second {
		t.Fatalf("wrote %d (%v) in %v, want 6 in 3s", w.n, st.records, st.elapsed)
	}
	got := consumeAll(t, addr, []string{"flows"}, 6)
	for i, c := range got["flows"] {
		if c.value != string([]byte{byte(i)}) || c.ts != wantMs[i] {
			t.Errorf("record %d: %+v", i, c)
		}
	}
}

// With --config, produce authenticates as the config says (SASL here) and
// sends each stream to the topic the config binds to it; a wrong password
// is an error, and so is a stream the config has no topic for.
func TestProduceWithConfig(t *testing.T) {
	const name = "bgp-session-reset-2024-05-14"
	spec, err := loadFixture("fixtures/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := replay.Collect(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	format := recs[0].Format
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.EnableSASL(), kfake.Superuser("PLAIN", "producer", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	dir := t.TempDir()
	writeCfg := func(topics string) string {
		path := filepath.Join(dir, "ow.yaml")
		os.WriteFile(path, []byte("kafka:\n  brokers: ["+addr+"]\n  topics: "+topics+"\n"+
			"  sasl: {mechanism: PLAIN, username: producer, password_env: OW_TEST_PRODUCE_PASSWORD}\ndata_dir: "+dir+"\n"), 0o644)
		return path
	}
	cfg := writeCfg("[{name: flows, stream: flows, format: goflow2-pb}, {name: routing, stream: bgp, format: " + format + "}]")
	produce := func(args ...string) error {
		cmd := produceCmd()
		cmd.SetArgs(append([]string{name}, args...))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		return cmd.Execute()
	}
	t.Setenv("OW_TEST_PRODUCE_PASSWORD", "wrong")
	if err := produce("--config", cfg); err == nil {
		t.Fatal("produced with a wrong password")
	}
	t.Setenv("OW_TEST_PRODUCE_PASSWORD", "s3cret")
	if err := produce("--config", cfg); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "producer", Pass: "s3cret"}.AsMechanism()),
		kgo.ConsumeTopics("routing"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []int64
	for polls := 0; polls < 100 && len(got) < len(recs); polls++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, r.Timestamp.UnixMilli()) })
		cancel()
	}
	var want []int64
	for _, r := range recs {
		want = append(want, r.Time/1e6)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("topic routing holds %d records, want the fixture's %d with their timestamps", len(got), len(want))
	}

	cfg = writeCfg("[{name: flows, stream: flows, format: goflow2-pb}]")
	if err := produce("--config", cfg); err == nil || !strings.Contains(err.Error(), "no topic of stream bgp") {
		t.Fatalf("a config without a BGP topic: err %v", err)
	}
	if err := produce("--config", cfg, "--topic-prefix", "x."); err == nil || !strings.Contains(err.Error(), "--topic-prefix names topics without a config") {
		t.Fatalf("--topic-prefix with --config: err %v", err)
	}
}

// A gzipped recording cut short plays the records before the cut into
// Kafka, and says it was cut.
func TestProduceARecordingCutShort(t *testing.T) {
	logs := captureLog(t)
	var b bytes.Buffer
	for i := range 400 {
		r := &ingest.Record{Stream: "flows", Format: "goflow2-pb", Topic: "old-flows", Offset: int64(i),
			Time: 1610496000e9 + int64(i)*1e9, Value: fmt.Appendf(nil, "flow %d with some padding to fill the compressed stream", i)}
		if err := recordfile.Write(&b, r); err != nil {
			t.Fatal(err)
		}
	}
	z := gztest.Gzip(b.Bytes())
	path := filepath.Join(t.TempDir(), "cut"+recordfile.Ext+".gz")
	if err := os.WriteFile(path, z[:len(z)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	var whole int
	if _, err := recordfile.ReadFile(path, func(*ingest.Record) error { whole++; return nil }); err == nil || whole < 10 || whole >= 400 {
		t.Fatalf("the cut file reads %d records, then %v", whole, err)
	}
	addr := startKfake(t)
	runProduce(t, path, "--brokers", addr)
	if got := consumeAll(t, addr, []string{"flows"}, whole)["flows"]; len(got) != whole {
		t.Fatalf("%d records in Kafka, want the %d before the cut", len(got), whole)
	}
	if want := fmt.Sprintf("input cut short: playing the records before the cut\" file=%s cut=\"the compressed file ends inside line %d", path, whole+1); !strings.Contains(logs.String(), want) {
		t.Fatalf("log has no %q:\n%s", want, logs)
	}
}
