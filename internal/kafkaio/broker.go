package kafkaio

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// DialAny connects (TCP, TLS, SASL) to brokers in turn until one accepts;
// the first broker's error when none does. Readiness probes with it: a
// connection of its own, not a request through a shared transport, which
// answers metadata from its cache for seconds after the brokers are gone
// and reports a refused SASL handshake as a broker "not available".
func DialAny(ctx context.Context, d *kafka.Dialer, brokers []string) error {
	var first error
	for _, b := range brokers {
		dctx, cancel := context.WithTimeout(ctx, DialTimeout)
		conn, err := d.DialContext(dctx, "tcp", b)
		cancel()
		if err == nil {
			conn.Close()
			return nil
		}
		if first == nil {
			first = fmt.Errorf("broker %s: %w", b, err)
		}
	}
	return first
}

// Trouble says what a failed broker request means for an operator: an
// authentication failure is named as one, not as a broker that is down.
func Trouble(err error) string {
	switch {
	case errors.Is(err, kafka.SASLAuthenticationFailed):
		return "kafka refused the SASL credentials (kafka.sasl username or password): " + err.Error()
	case errors.Is(err, kafka.UnsupportedSASLMechanism), errors.Is(err, kafka.IllegalSASLState):
		return "kafka refused the SASL mechanism (kafka.sasl.mechanism): " + err.Error()
	case errors.Is(err, kafka.TopicAuthorizationFailed), errors.Is(err, kafka.GroupAuthorizationFailed),
		errors.Is(err, kafka.ClusterAuthorizationFailed):
		return "kafka denied access (ACLs): " + err.Error()
	default:
		return "kafka unreachable: " + err.Error()
	}
}
