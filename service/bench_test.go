package service

import (
	"context"
	"math"
	"os"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
)

// benchBroker is a kfake broker holding benchFixture's records, one topic
// per stream.
func benchBroker(b *testing.B) (string, *fixture, func()) {
	f := benchFixture(b)
	c := startBroker(b, 0, "", f.topicNames()...)
	addr := c.ListenAddrs()[0]
	produceFixture(b, addr, f)
	return addr, f, c.Close
}

// benchFixture is the rendered fixture as the benchmarks take it. With
// OUTAGEWATCH_BENCH_STREAM set (e.g. "flows") it holds only that stream,
// to measure the high-volume input on its own. With
// OUTAGEWATCH_BENCH_SQUEEZE=N the records' times are pressed into a span N
// times shorter: the fixture's four weeks hold about 12 records per input
// partition and bucket, and the staged runtime's cost per bucket (a
// partial record per place and a marker per internal partition) weighs
// less on a busier stream.
func benchFixture(b *testing.B) *fixture {
	f := loadFixture(b)
	if only := os.Getenv("OUTAGEWATCH_BENCH_STREAM"); only != "" {
		g := *f
		g.recs, g.topics = nil, nil
		for _, r := range f.recs {
			if r.Stream == only {
				g.recs = append(g.recs, r)
			}
		}
		for _, t := range f.topics {
			if t.Name == only {
				g.topics = append(g.topics, t)
			}
		}
		f = &g
	}
	if sq, _ := strconv.Atoi(os.Getenv("OUTAGEWATCH_BENCH_SQUEEZE")); sq > 1 {
		// The same records in a span sq times shorter: sq times as many
		// a bucket, as a busier network sends.
		g := *f
		g.recs = make([]*ingest.Record, len(f.recs))
		t0 := f.recs[0].Time
		for _, r := range f.recs {
			t0 = min(t0, r.Time)
		}
		for i, r := range f.recs {
			c := *r
			c.Time = t0 + (r.Time-t0)/int64(sq)/1e6*1e6
			g.recs[i] = &c
		}
		f = &g
	}
	return f
}

// End to end: Kafka wire protocol in, stage one (decode, pre-aggregate,
// the internal topic), stage two (merge, detect, alert events into the
// persisted outbox and the JSON-lines sink), both in one process as `run`
// runs them. A run ends when every record is counted in and stage two's
// watermark has reached the last bucket the input partitions' own records
// close (benchWatermark): the records went through both stages, not only
// into stage one.
func BenchmarkEndToEnd(b *testing.B) {
	addr, f, stop := benchBroker(b)
	defer stop()
	b.ResetTimer()
	var total int64
	var steady, cpu time.Duration
	var st0 *Staged
	for i := 0; i < b.N; i++ {
		cfg := testConfig(addr, b.TempDir(), f.topics...)
		cfg.Kafka.GroupID = "bench-" + itoa(i)
		cfg.Kafka.InternalTopic = "bench-internal-" + itoa(i)
		cfg.Kafka.ChangelogTopic = "bench-changelog-" + itoa(i)
		cfg.Kafka.SilenceTopic = "bench-silences-" + itoa(i)
		cfg.Kafka.ViewTopic = "bench-view-" + itoa(i)
		cfg.CheckpointInterval = 10 * time.Second
		_, st, shutdown := startStaged(b, mustValidate(b, cfg), Options{Rules: f.set, Map: f.m})
		st0 = st
		last := benchWatermark(f, st)
		// Joining the consumer groups takes the same time whatever the
		// stream; the steady rate counts from the first record in.
		waitFor(b, "first record", 60*time.Second, func() bool { return recordsIn(st, f) > 0 })
		first, cpu0 := time.Now(), cpuTime(b)
		stopProfile := profileSteady(b)
		waitFor(b, "all records through both stages", 120*time.Second, func() bool {
			return recordsIn(st, f) >= int64(len(f.recs)) && stageTwoWatermark(st, cfg.Kafka.InternalPartitions) >= last
		})
		steady += time.Since(first)
		cpu += cpuTime(b) - cpu0
		stopProfile()
		b.StopTimer()
		shutdown()
		b.StartTimer()
		total += int64(len(f.recs))
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(total)/steady.Seconds(), "steady-records/s")
	// Per second of processor time (the in-process broker's included, as
	// for the yardstick): a shared machine's load moves it far less.
	b.ReportMetric(float64(total)/cpu.Seconds(), "records/cpu-s")
	b.ReportMetric(density(f, st0), "records/part-bucket")
}

// density is the mean number of records an input partition holds in a
// bucket over the fixture's span: the staged runtime's cost is partly per
// record and partly per partition and bucket, so its ratio to a bare
// reader depends on it, and the figure says which density was measured.
func density(f *fixture, st *Staged) float64 {
	width := bucketConfig(st).Width
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range f.recs {
		lo, hi = min(lo, r.Time), max(hi, r.Time)
	}
	buckets := (hi-lo)/width + 1
	return float64(len(f.recs)) / float64(buckets) / float64(testPartitions*len(f.topics))
}

// bucketConfig is the staged runtime's bucket width and lateness, with
// the aggregator's defaults filled in.
func bucketConfig(st *Staged) aggregate.Config {
	return aggregate.New(st.pipelineConfig(st.m).Aggregate).Config()
}

// profileSteady writes a CPU profile of the steady run alone (not the
// fixture's rendering nor the broker's loading, which -test.cpuprofile
// takes in) to the file OUTAGEWATCH_BENCH_CPUPROFILE names, if set.
func profileSteady(b *testing.B) func() {
	path := os.Getenv("OUTAGEWATCH_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// cpuTime is the processor time (user and system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchWatermark is the watermark stage two reaches once every record
// has gone through both stages: each input partition flushes the buckets
// its own latest record, less the lateness, has passed, and stage two
// closes up to the least of those. The buckets after it close only when
// the partitions are found idle, a wait of the configured idle time that
// measures the clock, not the pipeline, so the run ends before it.
func benchWatermark(f *fixture, st *Staged) int64 {
	ac := bucketConfig(st)
	width, late := ac.Width, ac.Lateness
	wm := int64(math.MaxInt64)
	for _, t := range f.topics {
		// produce spreads a topic's records over the partitions in turn.
		var hi [testPartitions]int64
		i := 0
		for _, r := range f.recs {
			if r.Stream == t.Name {
				hi[i%testPartitions] = max(hi[i%testPartitions], r.Time)
				i++
			}
		}
		for _, h := range hi[:min(i, testPartitions)] {
			w := h - late
			wm = min(wm, w-w%width)
		}
	}
	return wm
}

// recordsIn is the records stage one has counted in, over f's topics,
// read from the counters themselves: a scrape of /metrics every few
// milliseconds would take a share of the processor measured.
func recordsIn(st *Staged, f *fixture) int64 {
	var n float64
	for _, t := range f.topics {
		n += testutil.ToFloat64(st.status.met.records.WithLabelValues(t.Name))
	}
	return int64(n)
}

// stageTwoWatermark is the least watermark of the stage-two tasks, 0
// until all parts of the internal topic are held here.
func stageTwoWatermark(st *Staged, parts int) int64 {
	held := st.status.held()
	if len(held) < parts {
		return 0
	}
	var wm int64
	for i, p := range held {
		if w := p.Stats().Watermark; i == 0 || w < wm {
			wm = w
		}
	}
	return wm
}

// The same records (benchFixture's) through the pipeline with no Kafka,
// on one goroutine: the work of decoding, aggregating and judging alone.
func BenchmarkPipelineOnly(b *testing.B) {
	f := benchFixture(b)
	b.ResetTimer()
	b.StopTimer()
	var total int64
	for i := 0; i < b.N; i++ {
		p, err := pipeline.New(pipeline.Config{Rules: f.set, Map: f.m, LocalASNs: f.local, Logger: quietLog()},
			func(*alerting.Event) {})
		if err != nil {
			b.Fatal(err)
		}
		recs := make([]*ingest.Record, len(f.recs))
		for j, r := range f.recs {
			c := *r
			recs[j] = &c
		}
		b.StartTimer()
		if err := replay.Run(p, []replay.Source{replay.NewSliceSource("fixture", recs)}, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		total += int64(len(f.recs))
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
}

// Bare kafka-go consumer-group reader on the same broker and records (every
// topic of the fixture): the ceiling for end to end.
func BenchmarkBareKafkaGo(b *testing.B) {
	addr, f, stop := benchBroker(b)
	defer stop()
	b.ResetTimer()
	var total int64
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		cpu0 := cpuTime(b)
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, GroupID: "bare-" + itoa(i), GroupTopics: f.topicNames(),
			MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, StartOffset: kafka.FirstOffset})
		var n atomic.Int64
		ctx := context.Background()
		for n.Load() < int64(len(f.recs)) {
			if _, err := r.FetchMessage(ctx); err != nil {
				b.Fatal(err)
			}
			n.Add(1)
		}
		cpu += cpuTime(b) - cpu0
		b.StopTimer()
		r.Close()
		b.StartTimer()
		total += n.Load()
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(total)/cpu.Seconds(), "records/cpu-s")
}
