package service

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// Dead-letter headers. The original record's key, value, headers and
// timestamp are kept as they were; these say where it came from and why it
// was refused, so an operator can count by reason and replay after a fix.
const (
	HeaderReason    = "outagewatch-reason"
	HeaderError     = "outagewatch-error"
	HeaderTopic     = "outagewatch-topic"
	HeaderPartition = "outagewatch-partition"
	HeaderOffset    = "outagewatch-offset"
	HeaderFormat    = "outagewatch-format"
)

// deadLetters batches refused records for the dead-letter topic. The main
// loop writes a batch when it is large and always before a checkpoint, so
// a record whose offset is committed has reached the dead-letter topic.
type deadLetters struct {
	w     *kafka.Writer
	topic string
	batch []kafka.Message
}

func newDeadLetters(cfg *Config, d *kafka.Dialer) *deadLetters {
	w := &kafka.Writer{
		Addr: kafka.TCP(cfg.Kafka.Brokers...), Topic: cfg.Kafka.DeadLetterTopic,
		Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, AllowAutoTopicCreation: true,
		BatchTimeout: time.Millisecond, MaxAttempts: 3, WriteTimeout: 10 * time.Second,
		Transport: kafkaTransport(d),
	}
	return &deadLetters{w: w, topic: cfg.Kafka.DeadLetterTopic}
}

func (d *deadLetters) add(m *kafka.Message, reason string, err error) {
	hs := make([]kafka.Header, 0, len(m.Headers)+6)
	hs = append(hs, m.Headers...)
	hs = append(hs,
		kafka.Header{Key: HeaderReason, Value: []byte(reason)},
		kafka.Header{Key: HeaderError, Value: []byte(err.Error())},
		kafka.Header{Key: HeaderTopic, Value: []byte(m.Topic)},
		kafka.Header{Key: HeaderPartition, Value: strconv.AppendInt(nil, int64(m.Partition), 10)},
		kafka.Header{Key: HeaderOffset, Value: strconv.AppendInt(nil, m.Offset, 10)},
	)
	d.batch = append(d.batch, kafka.Message{Key: m.Key, Value: m.Value, Headers: hs, Time: m.Time})
}

func (d *deadLetters) pending() int { return len(d.batch) }

// flush writes the batch, retrying with backoff until ctx ends: losing a
// dead letter would lose the only copy once the offset is committed.
func (d *deadLetters) flush(ctx context.Context, met *metrics, log *slog.Logger) error {
	if len(d.batch) == 0 {
		return nil
	}
	backoff := 100 * time.Millisecond
	for {
		err := d.w.WriteMessages(ctx, d.batch...)
		if err == nil {
			for _, m := range d.batch {
				met.deadLetters.WithLabelValues(headerValue(m.Headers, HeaderTopic), headerValue(m.Headers, HeaderReason)).Inc()
			}
			d.batch = d.batch[:0]
			return nil
		}
		met.deadLetterErrors.Inc()
		log.Warn("dead-letter write failed; retrying", "topic", d.topic, "records", len(d.batch), "err", err)
		if sleepCtx(ctx, backoff) != nil {
			return fmt.Errorf("dead-letter topic %s: %w", d.topic, err)
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (d *deadLetters) close() { _ = d.w.Close() }

func headerValue(hs []kafka.Header, k string) string {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == k {
			return string(hs[i].Value)
		}
	}
	return ""
}
