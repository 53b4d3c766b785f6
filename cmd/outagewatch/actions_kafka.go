package main

import (
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/actions"
)

// kafkaDialer builds the actions process's Kafka dialer from its kafka
// block with the service's own code (kafkaio: client id, TLS, SASL from
// the environment), so the two processes reach the brokers the same way;
// nil with no brokers. The config has resolved the block's file names.
func kafkaDialer(cfg *actions.Config) (*kafka.Dialer, error) {
	if len(cfg.Kafka.Brokers) == 0 {
		return nil, nil
	}
	d, err := cfg.Kafka.Conn().Dialer(nil)
	if err != nil {
		return nil, fmt.Errorf("%s: kafka: %w", cfg.File, err)
	}
	return d, nil
}
