package service

import (
	"log/slog"
	"net"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/rules"
)

// Options carry what a config file cannot: the parts a caller (the command,
// a test, an embedding program) builds itself.
type Options struct {
	// Rules and Map override the files named in the config.
	Rules *rules.Set
	Map   *netmap.Map
	// Sinks are added to the ones the config builds.
	Sinks  []alerting.Sink
	Logger *slog.Logger
	// Outbox tunes every sink's outbox (backoff, rate limit).
	Outbox alerting.OutboxConfig
	// Listener serves the HTTP endpoints instead of listening on
	// Config.HTTP.Listen; nil listens there.
	Listener net.Listener
	// Dialer overrides kafka-go's dialer (timeouts, TLS, SASL).
	Dialer *kafka.Dialer
}
