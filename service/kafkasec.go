package service

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// KafkaTLS turns on TLS to the brokers. An empty section (`tls: {}`)
// verifies the brokers against the system roots; verification is never
// off unless insecure_skip_verify says so.
type KafkaTLS struct {
	// CAFile is a PEM bundle of the CAs that signed the brokers'
	// certificates, used instead of the system roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client certificate and its key (PEM),
	// for brokers that authenticate clients by certificate (mTLS). Both or
	// neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name expected in the brokers' certificates; empty
	// takes the host of each broker address.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any broker certificate. For a test
	// cluster only: it makes TLS useless against an active attacker.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// KafkaSASL authenticates to the brokers. The password comes from the
// environment, like every other secret, so the config file can be shared.
type KafkaSASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism   string `yaml:"mechanism"`
	Username    string `yaml:"username"`
	PasswordEnv string `yaml:"password_env"`
}

// SASL mechanisms outagewatch speaks (kafka-go's sasl/plain and sasl/scram).
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// dialTimeout bounds a connection to a broker, TLS handshake and SASL
// exchange included.
const dialTimeout = 10 * time.Second

// KafkaDialer is the dialer every Kafka client of the service uses
// (consumer group, partition readers, dead-letter writer, `record`): the
// client id, TLS and SASL of the config.
func (c *Config) KafkaDialer() (*kafka.Dialer, error) {
	tc, err := c.Kafka.TLS.build(c.resolve)
	if err != nil {
		return nil, err
	}
	mech, err := c.Kafka.SASL.build()
	if err != nil {
		return nil, err
	}
	return &kafka.Dialer{ClientID: c.Kafka.ClientID, Timeout: dialTimeout, DualStack: true,
		TLS: tc, SASLMechanism: mech}, nil
}

// kafkaTransport is the Transport (kafka.Client, kafka.Writer) that
// matches a dialer, so producers and admin requests authenticate exactly
// like the consumers. It is never kafka-go's shared default transport:
// a transport keeps a connection pool per broker that redials and
// refreshes metadata until it is closed, so each owner closes its own
// (CloseIdleConnections) when it stops, and no pool outlives the service
// that opened it.
func kafkaTransport(d *kafka.Dialer) *kafka.Transport {
	if d == nil {
		return &kafka.Transport{DialTimeout: dialTimeout}
	}
	return &kafka.Transport{Dial: d.DialFunc, DialTimeout: d.Timeout, ClientID: d.ClientID,
		TLS: d.TLS, SASL: d.SASLMechanism}
}

// kafkaSecError is a TLS or SASL setting that cannot work; key is the
// config key to point at.
type kafkaSecError struct {
	key string
	err error
}

func (e *kafkaSecError) Error() string { return e.key + ": " + e.err.Error() }
func (e *kafkaSecError) Unwrap() error { return e.err }

func secErr(key, format string, args ...any) error {
	return &kafkaSecError{key: key, err: fmt.Errorf(format, args...)}
}

// build makes the tls.Config; nil when TLS is off.
func (t *KafkaTLS) build(resolve func(string) string) (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // only when the operator asks
	if t.CAFile != "" {
		pem, err := os.ReadFile(resolve(t.CAFile))
		if err != nil {
			return nil, secErr("kafka.tls.ca_file", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, secErr("kafka.tls.ca_file", "%s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case t.CertFile != "" && t.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(resolve(t.CertFile), resolve(t.KeyFile))
		if err != nil {
			return nil, secErr("kafka.tls.cert_file", "client certificate %s with key %s: %v", t.CertFile, t.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	case t.CertFile != "":
		return nil, secErr("kafka.tls.cert_file", "a client certificate needs key_file too")
	case t.KeyFile != "":
		return nil, secErr("kafka.tls.key_file", "a client key needs cert_file too")
	}
	return tc, nil
}

// build makes the SASL mechanism; nil when SASL is off.
func (s *KafkaSASL) build() (sasl.Mechanism, error) {
	if s == nil {
		return nil, nil
	}
	mech := strings.ToUpper(s.Mechanism)
	switch mech {
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
	case "":
		return nil, secErr("kafka.sasl.mechanism", "required (%s, %s or %s)", SASLPlain, SASLScramSHA256, SASLScramSHA512)
	default:
		return nil, secErr("kafka.sasl.mechanism", "unknown mechanism %q (%s, %s or %s)", s.Mechanism,
			SASLPlain, SASLScramSHA256, SASLScramSHA512)
	}
	if s.Username == "" {
		return nil, secErr("kafka.sasl.username", "required with SASL")
	}
	if s.PasswordEnv == "" {
		return nil, secErr("kafka.sasl.password_env", "required with SASL: the environment variable that holds the password")
	}
	pass := os.Getenv(s.PasswordEnv)
	if pass == "" {
		return nil, secErr("kafka.sasl.password_env", "environment variable %s is empty", s.PasswordEnv)
	}
	switch mech {
	case SASLPlain:
		return plain.Mechanism{Username: s.Username, Password: pass}, nil
	case SASLScramSHA256:
		m, err := scram.Mechanism(scram.SHA256, s.Username, pass)
		return m, wrapScram(err)
	default:
		m, err := scram.Mechanism(scram.SHA512, s.Username, pass)
		return m, wrapScram(err)
	}
}

func wrapScram(err error) error {
	if err == nil {
		return nil
	}
	return &kafkaSecError{key: "kafka.sasl.username", err: errors.Join(errors.New("SCRAM"), err)}
}
