package kafkaio

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

// DeadLetters batches refused records for the dead-letter topic. Its
// owner writes a batch before the offset or checkpoint that passes the
// records, so a record whose offset is committed has reached the
// dead-letter topic.
type DeadLetters struct {
	w     *kafka.Writer
	topic string
	batch []kafka.Message
}

// NewDeadLetters writes dead letters to topic on brokers through d.
func NewDeadLetters(brokers []string, topic string, d *kafka.Dialer) *DeadLetters {
	return &DeadLetters{w: NewWriter(brokers, topic, Transport(d)), topic: topic}
}

// Add queues a dead letter of m, refused for reason (the decoder's) with
// err.
func (d *DeadLetters) Add(m *kafka.Message, reason string, err error) {
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

// Pending is the number of dead letters queued.
func (d *DeadLetters) Pending() int { return len(d.batch) }

// Counters count what Flush writes: Written once per dead letter written,
// with its source topic and reason, Failed once per failed write.
type Counters struct {
	Written func(topic, reason string)
	Failed  func()
}

// Flush writes the batch, retrying with backoff until ctx ends: losing a
// dead letter would lose the only copy once the offset is committed.
func (d *DeadLetters) Flush(ctx context.Context, c Counters, log *slog.Logger) error {
	if len(d.batch) == 0 {
		return nil
	}
	backoff := 100 * time.Millisecond
	for {
		err := d.w.WriteMessages(ctx, d.batch...)
		if err == nil {
			for _, m := range d.batch {
				if c.Written != nil {
					c.Written(headerValue(m.Headers, HeaderTopic), headerValue(m.Headers, HeaderReason))
				}
			}
			d.batch = d.batch[:0]
			return nil
		}
		if c.Failed != nil {
			c.Failed()
		}
		log.Warn("dead-letter write failed; retrying", "topic", d.topic, "records", len(d.batch), "err", err)
		if Sleep(ctx, backoff) != nil {
			return fmt.Errorf("dead-letter topic %s: %w", d.topic, err)
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// Close closes the writer.
func (d *DeadLetters) Close() { _ = d.w.Close() }

func headerValue(hs []kafka.Header, k string) string {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == k {
			return string(hs[i].Value)
		}
	}
	return ""
}
