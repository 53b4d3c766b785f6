package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
)

// TP names one topic partition.
type TP struct {
	Topic     string
	Partition int32
}

// FetchBatches reads partition part of topic on brokers from off until ctx ends or send refuses
// a batch. Messages travel in batches: one channel hand-over per batch
// instead of per message. A batch closes when full or when the partition
// has nothing more within a few milliseconds.
func FetchBatches(ctx context.Context, brokers []string, dialer *kafka.Dialer, log *slog.Logger, topic string, part int32, off int64, send func([]kafka.Message) bool) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: brokers, Topic: topic, Partition: int(part), Dialer: dialer,
		MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, QueueCapacity: 1024,
		ReadBackoffMin: 100 * time.Millisecond, ReadBackoffMax: 2 * time.Second,
		ErrorLogger: Logger(log),
	})
	defer r.Close()
	if err := r.SetOffset(off); err != nil {
		log.Error("set offset", "topic", topic, "partition", part, "offset", off, "err", err)
		return
	}
	const batchMax, batchWait = 512, 5 * time.Millisecond
	retry := NewRetry()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if Sleep(ctx, retry.Fail(time.Now(), log, "fetch: retrying", err, "topic", topic, "partition", part)) != nil {
				return
			}
			continue
		}
		retry.OK(log, "fetch: reading again")
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

// HighWatermarks reads the high watermark of every partition of topics:
// consumer lag, and whether a silent partition is caught up.
func HighWatermarks(ctx context.Context, c *kafka.Client, topics []string) (map[TP]int64, error) {
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
	out := map[TP]int64{}
	for t, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("topic %s partition %d: %w", t, p.Partition, p.Error)
			}
			out[TP{t, int32(p.Partition)}] = p.LastOffset
		}
	}
	return out, nil
}

// CommitGroup commits offsets as a member of gen, and fails with every
// partition the brokers refused.
func CommitGroup(ctx context.Context, c *kafka.Client, gen *kafka.Generation, topics map[string][]kafka.OffsetCommit) error {
	res, err := c.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: gen.GroupID, GenerationID: int(gen.ID),
		MemberID: gen.MemberID, Topics: topics})
	if err != nil {
		return err
	}
	var errs []error
	for t, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				errs = append(errs, fmt.Errorf("topic %s partition %d: %w", t, p.Partition, p.Error))
			}
		}
	}
	return errors.Join(errs...)
}

// Sleep waits d, or less when ctx ends first (its error then).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Logger routes kafka-go's error log to slog at debug level: the
// service reports outages itself (readiness, one warning), and kafka-go
// repeats each retry.
func Logger(log *slog.Logger) kafka.LoggerFunc {
	return func(msg string, args ...any) {
		log.Debug("kafka-go: " + fmt.Sprintf(msg, args...))
	}
}
