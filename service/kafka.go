package service

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
)

// tp names one topic partition.
type tp struct {
	topic string
	part  int32
}

// fetchBatches reads one partition from off until ctx ends or send refuses
// a batch. Messages travel in batches: one channel hand-over per batch
// instead of per message. A batch closes when full or when the partition
// has nothing more within a few milliseconds.
func fetchBatches(ctx context.Context, cfg *Config, dialer *kafka.Dialer, log *slog.Logger, k tp, off int64, send func([]kafka.Message) bool) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: cfg.Kafka.Brokers, Topic: k.topic, Partition: int(k.part), Dialer: dialer,
		MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, QueueCapacity: 1024,
		ReadBackoffMin: 100 * time.Millisecond, ReadBackoffMax: 2 * time.Second,
		ErrorLogger: kafkaLogger(log),
	})
	defer r.Close()
	if err := r.SetOffset(off); err != nil {
		log.Error("set offset", "topic", k.topic, "partition", k.part, "offset", off, "err", err)
		return
	}
	const batchMax, batchWait = 512, 5 * time.Millisecond
	retry := newRetry()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if sleepCtx(ctx, retry.fail(time.Now(), log, "fetch: retrying", err, "topic", k.topic, "partition", k.part)) != nil {
				return
			}
			continue
		}
		retry.ok(log, "fetch: reading again")
		batch := make([]kafka.Message, 1, batchMax)
		batch[0] = m
		bctx, cancel := context.WithTimeout(ctx, batchWait)
		for len(batch) < batchMax {
			m, err := r.FetchMessage(bctx)
			if err != nil {
				break // the batch wait is over (or the reader is stopping)
			}
			batch = append(batch, m)
		}
		cancel()
		if !send(batch) {
			return
		}
	}
}

// highWatermarks reads the high watermark of every partition of topics.
func highWatermarks(ctx context.Context, c *kafka.Client, topics []string) (map[tp]int64, error) {
	md, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, err
	}
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for _, t := range md.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			req.Topics[t.Name] = append(req.Topics[t.Name], kafka.LastOffsetOf(p.ID))
		}
	}
	res, err := c.ListOffsets(ctx, req)
	if err != nil {
		return nil, err
	}
	out := map[tp]int64{}
	for t, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("topic %s partition %d: %w", t, p.Partition, p.Error)
			}
			out[tp{t, int32(p.Partition)}] = p.LastOffset
		}
	}
	return out, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kafkaLogger routes kafka-go's error log to slog at debug level: the
// service reports outages itself (readiness, one warning), and kafka-go
// repeats each retry.
func kafkaLogger(log *slog.Logger) kafka.LoggerFunc {
	return func(msg string, args ...any) {
		log.Debug("kafka-go: " + fmt.Sprintf(msg, args...))
	}
}
