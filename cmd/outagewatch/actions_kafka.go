package main

import (
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/actions"
	"github.com/outagewatch/outagewatch/service"
)

// kafkaDialer builds the actions process's Kafka dialer with the service's
// own code (client id, TLS, SASL from the environment), so the two
// processes reach the brokers the same way; nil with no brokers.
func kafkaDialer(cfg *actions.Config) (*kafka.Dialer, error) {
	k := cfg.Kafka
	if len(k.Brokers) == 0 {
		return nil, nil
	}
	sc := &service.Config{Kafka: service.KafkaConfig{Brokers: k.Brokers, ClientID: k.ClientID}}
	if k.TLS != nil {
		sc.Kafka.TLS = &service.KafkaTLS{CAFile: k.TLS.CAFile, CertFile: k.TLS.CertFile, KeyFile: k.TLS.KeyFile,
			ServerName: k.TLS.ServerName, InsecureSkipVerify: k.TLS.InsecureSkipVerify}
	}
	if k.SASL != nil {
		sc.Kafka.SASL = &service.KafkaSASL{Mechanism: k.SASL.Mechanism, Username: k.SASL.Username, PasswordEnv: k.SASL.PasswordEnv}
	}
	d, err := sc.KafkaDialer()
	if err != nil {
		return nil, fmt.Errorf("%s: kafka: %w", cfg.File, err)
	}
	return d, nil
}

// kafkaTransportOf is the producer transport matching a dialer, as the
// service builds its own.
func kafkaTransportOf(d *kafka.Dialer) *kafka.Transport {
	if d == nil {
		return &kafka.Transport{}
	}
	return &kafka.Transport{Dial: d.DialFunc, DialTimeout: d.Timeout, ClientID: d.ClientID, TLS: d.TLS, SASL: d.SASLMechanism}
}
