// Package kafkaio owns how outagewatch talks to Kafka: the one config of
// brokers, TLS and SASL every client is built from (Conn), the dialer and
// transport that carry it, consumer group joins, partition reads in
// batches, high watermarks, offset commits with their metadata, dead
// letters, retries that back off, and the broker probe behind readiness,
// which names an authentication failure as one. The live service, the
// actions process (decider, plan hooks, Traffic Manager feed), `produce`
// and `record` all build their clients here, so a TLS or SASL setting
// means the same to each.
package kafkaio

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

// TLS turns on TLS to the brokers. An empty section (`tls: {}`)
// verifies the brokers against the system roots; verification is never
// off unless insecure_skip_verify says so.
type TLS struct {
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

// SASL authenticates to the brokers. The password comes from the
// environment, like every other secret, so the config file can be shared.
type SASL struct {
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

// DialTimeout bounds a connection to a broker, TLS handshake and SASL
// exchange included.
const DialTimeout = 10 * time.Second

// Conn is how to reach the brokers: the one small config every Kafka
// client of outagewatch is built from (the service's kafka section, the
// actions process's, `produce` and `record`).
type Conn struct {
	Brokers  []string
	ClientID string
	TLS      *TLS
	SASL     *SASL
}

// Dialer is the dialer of every Kafka client built from c (consumer
// groups, partition readers, producers, the broker probe): the client id,
// TLS and SASL of c. resolve turns the file names of c.TLS into paths (a
// config file's are relative to it); nil takes them as they are. An error
// is a *SecError naming the key at fault.
func (c Conn) Dialer(resolve func(string) string) (*kafka.Dialer, error) {
	if resolve == nil {
		resolve = func(s string) string { return s }
	}
	tc, err := c.TLS.build(resolve)
	if err != nil {
		return nil, err
	}
	mech, err := c.SASL.build()
	if err != nil {
		return nil, err
	}
	return &kafka.Dialer{ClientID: c.ClientID, Timeout: DialTimeout, DualStack: true,
		TLS: tc, SASLMechanism: mech}, nil
}

// Transport is the Transport (kafka.Client, kafka.Writer) that
// matches a dialer, so producers and admin requests authenticate exactly
// like the consumers. It is never kafka-go's shared default transport:
// a transport keeps a connection pool per broker that redials and
// refreshes metadata until it is closed, so each owner closes its own
// (CloseIdleConnections) when it stops, and no pool outlives the service
// that opened it.
func Transport(d *kafka.Dialer) *kafka.Transport {
	if d == nil {
		return &kafka.Transport{DialTimeout: DialTimeout}
	}
	return &kafka.Transport{Dial: d.DialFunc, DialTimeout: d.Timeout, ClientID: d.ClientID,
		TLS: d.TLS, SASL: d.SASLMechanism}
}

// SecError is a TLS or SASL setting that cannot work; Key is the config
// key to point at (kafka.tls.ca_file, kafka.sasl.mechanism, ...).
type SecError struct {
	Key string
	Err error
}

func (e *SecError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *SecError) Unwrap() error { return e.Err }

func secErr(key, format string, args ...any) error {
	return &SecError{Key: key, Err: fmt.Errorf(format, args...)}
}

// build makes the tls.Config; nil when TLS is off.
func (t *TLS) build(resolve func(string) string) (*tls.Config, error) {
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
func (s *SASL) build() (sasl.Mechanism, error) {
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
	return &SecError{Key: "kafka.sasl.username", Err: errors.Join(errors.New("SCRAM"), err)}
}

// PlainDialer is the dialer of a client given no Conn: plain TCP, the
// same timeout as every other.
func PlainDialer() *kafka.Dialer { return &kafka.Dialer{Timeout: DialTimeout, DualStack: true} }
