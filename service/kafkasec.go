package service

import (
	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/internal/kafkaio"
)

// KafkaTLS turns on TLS to the brokers (kafka.tls); see kafkaio.TLS.
type KafkaTLS = kafkaio.TLS

// KafkaSASL authenticates to the brokers (kafka.sasl); see kafkaio.SASL.
type KafkaSASL = kafkaio.SASL

// SASL mechanisms outagewatch speaks (kafka-go's sasl/plain and sasl/scram).
const (
	SASLPlain       = kafkaio.SASLPlain
	SASLScramSHA256 = kafkaio.SASLScramSHA256
	SASLScramSHA512 = kafkaio.SASLScramSHA512
)

// KafkaConn is the kafka section's brokers, client id, TLS and SASL: what
// every Kafka client of the service is built from.
func (c *Config) KafkaConn() kafkaio.Conn {
	return kafkaio.Conn{Brokers: c.Kafka.Brokers, ClientID: c.Kafka.ClientID, TLS: c.Kafka.TLS, SASL: c.Kafka.SASL}
}

// KafkaDialer is the dialer every Kafka client of the service uses
// (consumer groups, partition readers, producers, dead-letter writer,
// `record`): the client id, TLS and SASL of the config, its files relative
// to the config file.
func (c *Config) KafkaDialer() (*kafka.Dialer, error) {
	return c.KafkaConn().Dialer(c.resolve)
}
