package service

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
)

// benchBroker is a kfake broker holding the rendered fixture, one topic
// per stream. With OUTAGEWATCH_BENCH_STREAM set (e.g. "flows") it holds
// only that stream, to measure the high-volume input on its own.
func benchBroker(b *testing.B) (string, *fixture, func()) {
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
	c := startBroker(b, 0, "", f.topicNames()...)
	addr := c.ListenAddrs()[0]
	produceFixture(b, addr, f)
	return addr, f, c.Close
}

// End to end: Kafka wire protocol in, decode, bucket, detect, alert
// events into the persisted outbox and the JSON-lines sink.
func BenchmarkEndToEnd(b *testing.B) {
	addr, f, stop := benchBroker(b)
	defer stop()
	b.ResetTimer()
	var total int64
	var steady time.Duration
	for i := 0; i < b.N; i++ {
		cfg := testConfig(addr, b.TempDir(), f.topics...)
		cfg.Kafka.GroupID = "bench-" + itoa(i)
		cfg.CheckpointInterval = 10 * time.Second
		r := startService(b, mustValidate(b, cfg), f)
		// Joining the consumer group takes the same time whatever the
		// stream; the steady rate counts from the first record in.
		waitFor(b, "first record", 60*time.Second, func() bool {
			return totalRecords(r.svc.Pipeline().Stats()) > 0
		})
		first := time.Now()
		waitFor(b, "all records", 120*time.Second, func() bool {
			return totalRecords(r.svc.Pipeline().Stats()) >= int64(len(f.recs))
		})
		steady += time.Since(first)
		b.StopTimer()
		r.shutdown(b)
		b.StartTimer()
		total += int64(len(f.recs))
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(total)/steady.Seconds(), "steady-records/s")
}

// Decode only: the same records through the pipeline with no Kafka.
func BenchmarkPipelineOnly(b *testing.B) {
	f := loadFixture(b)
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
	for i := 0; i < b.N; i++ {
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
		b.StopTimer()
		r.Close()
		b.StartTimer()
		total += n.Load()
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
}
