package kafkaio

import (
	"time"

	"github.com/segmentio/kafka-go"
)

// NewWriter is the one way outagewatch writes to Kafka outside the
// service's own produce requests: dead letters, the Traffic Manager's
// plans, a recording or fixture pushed into topics. Records with the same
// key stay in order on one partition (hash balancer), a write returns once
// every in-sync replica has it, and a write is sent at once rather than
// waiting a second for company (kafka-go's default BatchTimeout), since
// every caller hands over whole batches. topic "" leaves the topic to each
// message. tr carries the brokers' TLS and SASL (see Transport); nil is
// plain TCP.
func NewWriter(brokers []string, topic string, tr *kafka.Transport) *kafka.Writer {
	w := &kafka.Writer{
		Addr: kafka.TCP(brokers...), Topic: topic,
		Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, AllowAutoTopicCreation: true,
		BatchTimeout: time.Millisecond, MaxAttempts: 3, WriteTimeout: 10 * time.Second,
	}
	if tr != nil {
		// Not a nil *Transport in the interface: the writer would call it.
		w.Transport = tr
	}
	return w
}
