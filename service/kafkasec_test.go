package service

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
)

// Every duration of the config, written negative, is refused at load with
// the line it is on; zero still means the default.
func TestConfigNegativeDurations(t *testing.T) {
	base := "kafka:\n  brokers: [b:9092]\n  topics: [{name: flows, stream: flows, format: goflow2-pb}]\ndata_dir: /tmp/x\n"
	cases := map[string]string{
		base + "checkpoint_interval: -10s\n":                                         "c.yaml:5: checkpoint_interval: -10s is negative",
		base + "bucket_width: 5m\nlateness: -1m\n":                                   "c.yaml:6: lateness: -1m0s is negative",
		base + "bucket_width: -5m\n":                                                 "c.yaml:5: bucket_width: -5m0s is negative",
		base + "history_buckets: -1\n":                                               "c.yaml:5: history_buckets: -1 is negative",
		strings.Replace(base, "  topics:", "  max_queued_records: -5\n  topics:", 1): "c.yaml:3: kafka.max_queued_records: -5 is negative",
	}
	for _, k := range []string{"idle_partition_after", "session_timeout", "poll_interval"} {
		text := strings.Replace(base, "  topics:", "  "+k+": -2s\n  topics:", 1)
		cases[text] = "c.yaml:3: kafka." + k + ": -2s is negative"
	}
	for text, want := range cases {
		_, err := ParseConfig("c.yaml", []byte(text))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("config\n%s\nerror %v, want it to start with %q", text, err, want)
		}
	}
	c, err := ParseConfig("c.yaml", []byte(base+"checkpoint_interval: 0s\nlateness: 0s\n"))
	if err != nil || c.CheckpointInterval != DefaultCheckpointInterval || c.Lateness != 0 {
		t.Fatalf("zero durations: %+v %v", c, err)
	}
}

// TLS and SASL settings that cannot work are refused at load, naming the
// line of the key at fault.
func TestConfigKafkaSecurityErrors(t *testing.T) {
	dir := t.TempDir()
	pki := newTestPKI(t, dir)
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o644)
	t.Setenv("OW_TEST_KAFKA_PASSWORD", "s3cret")
	t.Setenv("OW_TEST_EMPTY", "")
	base := "kafka:\n  brokers: [b:9093]\n  topics: [{name: flows, stream: flows, format: goflow2-pb}]\n"
	tail := "data_dir: /tmp/x\n"
	sasl := func(body string) string { return base + "  sasl:\n" + body + tail }
	tlsc := func(body string) string { return base + "  tls:\n" + body + tail }
	cases := map[string]string{
		sasl("    mechanism: GSSAPI\n    username: ow\n    password_env: OW_TEST_KAFKA_PASSWORD\n"): `c.yaml:5: kafka.sasl.mechanism: unknown mechanism "GSSAPI"`,
		sasl("    username: ow\n    password_env: OW_TEST_KAFKA_PASSWORD\n"):                        "c.yaml:4: kafka.sasl.mechanism: required",
		sasl("    mechanism: PLAIN\n    password_env: OW_TEST_KAFKA_PASSWORD\n"):                    "c.yaml:4: kafka.sasl.username: required",
		sasl("    mechanism: SCRAM-SHA-512\n    username: ow\n"):                                    "c.yaml:4: kafka.sasl.password_env: required",
		sasl("    mechanism: SCRAM-SHA-256\n    username: ow\n    password_env: OW_TEST_EMPTY\n"):   "c.yaml:7: kafka.sasl.password_env: environment variable OW_TEST_EMPTY is empty",
		tlsc("    ca_file: " + filepath.Join(dir, "missing.pem") + "\n"):                            "c.yaml:5: kafka.tls.ca_file: open ",
		tlsc("    ca_file: " + notPEM + "\n"):                                                       "c.yaml:5: kafka.tls.ca_file: " + notPEM + " holds no PEM certificate",
		tlsc("    server_name: k\n    cert_file: " + pki.clientCert + "\n"):                         "c.yaml:6: kafka.tls.cert_file: a client certificate needs key_file too",
		tlsc("    key_file: " + pki.clientKey + "\n"):                                               "c.yaml:5: kafka.tls.key_file: a client key needs cert_file too",
		tlsc("    cert_file: " + pki.clientCert + "\n    key_file: " + pki.ca + "\n"):               "c.yaml:5: kafka.tls.cert_file: client certificate",
	}
	for text, want := range cases {
		_, err := ParseConfig("c.yaml", []byte(text))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("config\n%s\nerror %v, want it to start with %q", text, err, want)
		}
	}
	// Good settings load, and relative paths are taken from the config's
	// directory.
	cfgFile := filepath.Join(dir, "ow.yaml")
	text := base + "  tls:\n    ca_file: ca.pem\n    cert_file: client.pem\n    key_file: client.key\n    server_name: kafka.test\n" +
		"  sasl: {mechanism: scram-sha-512, username: ow, password_env: OW_TEST_KAFKA_PASSWORD}\n" + tail
	os.WriteFile(cfgFile, []byte(text), 0o644)
	c, err := LoadConfig(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.KafkaDialer()
	if err != nil {
		t.Fatal(err)
	}
	if d.TLS == nil || d.TLS.ServerName != "kafka.test" || d.TLS.InsecureSkipVerify || len(d.TLS.Certificates) != 1 ||
		d.TLS.RootCAs == nil || d.SASLMechanism == nil || d.SASLMechanism.Name() != SASLScramSHA512 || d.ClientID != "outagewatch" {
		t.Errorf("dialer: %+v", d)
	}
}

// The service, `record` and the dead-letter producer reach a broker that
// requires SASL (each mechanism), TLS with client certificates, or both;
// a wrong password or an unknown CA fails instead of falling back.
func TestKafkaSecurityAgainstKfake(t *testing.T) {
	f := loadFixture(t)
	dir := t.TempDir()
	pki := newTestPKI(t, dir)
	t.Setenv("OW_TEST_KAFKA_PASSWORD", "s3cret")
	t.Setenv("OW_TEST_WRONG_PASSWORD", "guess")
	serverTLS := &tls.Config{Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	tlsYAML := "  tls: {ca_file: " + pki.ca + ", cert_file: " + pki.clientCert + ", key_file: " + pki.clientKey +
		", server_name: kafka.test}\n"
	saslYAML := func(mech, env string) string {
		return "  sasl: {mechanism: " + mech + ", username: outagewatch, password_env: " + env + "}\n"
	}
	cases := []struct {
		name  string
		opts  []kfake.Opt
		yaml  string
		wrong string // the same broker with a setting that must fail
	}{
		{"plain", []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("PLAIN", "outagewatch", "s3cret")},
			saslYAML("PLAIN", "OW_TEST_KAFKA_PASSWORD"), saslYAML("PLAIN", "OW_TEST_WRONG_PASSWORD")},
		{"scram-sha-256", []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "outagewatch", "s3cret")},
			saslYAML("SCRAM-SHA-256", "OW_TEST_KAFKA_PASSWORD"), saslYAML("SCRAM-SHA-256", "OW_TEST_WRONG_PASSWORD")},
		{"scram-sha-512", []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "outagewatch", "s3cret")},
			saslYAML("SCRAM-SHA-512", "OW_TEST_KAFKA_PASSWORD"), saslYAML("SCRAM-SHA-256", "OW_TEST_KAFKA_PASSWORD")},
		{"mtls", []kfake.Opt{kfake.TLS(serverTLS)}, tlsYAML,
			"  tls: {cert_file: " + pki.clientCert + ", key_file: " + pki.clientKey + ", server_name: kafka.test}\n"},
		{"mtls+scram-sha-512", []kfake.Opt{kfake.TLS(serverTLS), kfake.EnableSASL(),
			kfake.Superuser("SCRAM-SHA-512", "outagewatch", "s3cret")},
			tlsYAML + saslYAML("SCRAM-SHA-512", "OW_TEST_KAFKA_PASSWORD"), saslYAML("SCRAM-SHA-512", "OW_TEST_KAFKA_PASSWORD")},
	}
	var good []*ingest.Record
	for _, r := range f.recs {
		if r.Stream == "flows" && len(good) < 300 {
			good = append(good, r)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(testPartitions, "flows", "dead"),
				kfake.GroupMinSessionTimeout(100 * time.Millisecond)}, tc.opts...)
			c, err := kfake.NewCluster(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			addr := c.ListenAddrs()[0]
			data := t.TempDir()
			head := "kafka:\n  brokers: [" + addr + "]\n  group_id: sec\n  dead_letter_topic: dead\n" +
				"  session_timeout: 1s\n  poll_interval: 100ms\n  idle_partition_after: 300ms\n  internal_partitions: 2\n" +
				"  topics: [{name: flows, stream: flows, format: goflow2-pb}]\n"
			tail := "data_dir: " + data + "\ncheckpoint_interval: 1s\nhttp: {listen: 127.0.0.1:0}\n"
			cfg, err := ParseConfig("sec.yaml", []byte(head+tc.yaml+tail))
			if err != nil {
				t.Fatal(err)
			}
			d, err := cfg.KafkaDialer()
			if err != nil {
				t.Fatal(err)
			}
			// Produce through the same transport the dead-letter writer
			// uses: the good records and one that does not decode.
			w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "flows", Balancer: &kafka.RoundRobin{},
				Transport: kafkaio.Transport(d), BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
			msgs := []kafka.Message{{Value: []byte("not a flow"), Time: time.Unix(0, good[0].Time)}}
			for _, r := range good {
				msgs = append(msgs, kafka.Message{Value: r.Value, Time: time.Unix(0, r.Time)})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				t.Fatal(err)
			}
			w.Close()

			base, _, stop := startStaged(t, cfg, Options{Rules: f.set, Map: f.m})
			waitFor(t, "every record consumed, the bad one dead-lettered", waitLong, func() bool {
				return metricLine(t, base, `outagewatch_records_total{topic="flows"}`) == itoa(len(msgs)) &&
					metricLine(t, base, `outagewatch_dead_letters_total{reason="truncated",topic="flows"}`) == "1"
			})
			stop()

			var buf bytes.Buffer
			n, err := kafkaio.Record(ctx, kafkaio.RecordOptions{Brokers: []string{addr}, Topic: "dead", Stream: "flows",
				Format: "goflow2-pb", Dialer: d}, &buf)
			if err != nil || n != 1 || !bytes.Contains(buf.Bytes(), []byte(`"`+kafkaio.HeaderReason+`"`)) {
				t.Fatalf("dead-letter topic read back: %d records, %v", n, err)
			}
			n, err = kafkaio.Record(ctx, kafkaio.RecordOptions{Brokers: []string{addr}, Topic: "flows", Stream: "flows",
				Format: "goflow2-pb", Dialer: d}, &buf)
			if err != nil || n != int64(len(msgs)) {
				t.Fatalf("record: %d of %d, %v", n, len(msgs), err)
			}

			bad, err := ParseConfig("sec.yaml", []byte(head+tc.wrong+tail))
			if err != nil {
				t.Fatal(err)
			}
			bd, err := bad.KafkaDialer()
			if err != nil {
				t.Fatal(err)
			}
			wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer wcancel()
			if n, err := kafkaio.Record(wctx, kafkaio.RecordOptions{Brokers: []string{addr}, Topic: "flows", Stream: "flows",
				Format: "goflow2-pb", Dialer: bd}, &buf); err == nil {
				t.Fatalf("wrong setting read %d records", n)
			} else {
				t.Logf("wrong setting refused: %v", err)
			}
		})
	}
}

// testPKI is a CA, a broker certificate for kafka.test and 127.0.0.1, and
// a client certificate, written as PEM files.
type testPKI struct {
	pool                      *x509.CertPool
	server                    tls.Certificate
	ca, clientCert, clientKey string
}

func newTestPKI(t *testing.T, dir string) *testPKI {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "outagewatch test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{cn}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pki := &testPKI{pool: x509.NewCertPool(), ca: write("ca.pem", "CERTIFICATE", caDER)}
	pki.pool.AddCert(caCert)
	sDER, sKey := issue(2, "kafka.test", x509.ExtKeyUsageServerAuth)
	pki.server = tls.Certificate{Certificate: [][]byte{sDER}, PrivateKey: sKey}
	cDER, cKey := issue(3, "outagewatch", x509.ExtKeyUsageClientAuth)
	pki.clientCert = write("client.pem", "CERTIFICATE", cDER)
	pki.clientKey = write("client.key", "EC PRIVATE KEY", keyDER(cKey))
	return pki
}

// The TLS and SASL keys documented (commented out) in the example config
// load as written once uncommented, with the files and password present.
func TestExampleConfigSecurity(t *testing.T) {
	b, err := os.ReadFile("../deploy/outagewatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pki := newTestPKI(t, t.TempDir())
	key := regexp.MustCompile(`^  # (\s*[a-z_]+:)`)
	var out []string
	n := 0
	for l := range strings.SplitSeq(string(b), "\n") {
		if m := key.FindStringSubmatch(l); m != nil && !strings.Contains(l, "{") {
			l = "  " + m[1] + l[len(m[0]):]
			n++
		}
		out = append(out, l)
	}
	text := strings.Join(out, "\n")
	text = strings.NewReplacer("/etc/outagewatch/kafka-ca.pem", pki.ca, "/etc/outagewatch/kafka-client.pem", pki.clientCert,
		"/etc/outagewatch/kafka-client.key", pki.clientKey).Replace(text)
	t.Setenv("OUTAGEWATCH_KAFKA_PASSWORD", "s3cret")
	c, err := ParseConfig("outagewatch.yaml", []byte(text))
	if err != nil {
		t.Fatalf("%v (%d keys uncommented)", err, n)
	}
	d, err := c.KafkaDialer()
	if err != nil {
		t.Fatal(err)
	}
	if d.TLS == nil || d.TLS.ServerName != "kafka.example.net" || d.TLS.InsecureSkipVerify || len(d.TLS.Certificates) != 1 ||
		d.SASLMechanism == nil || d.SASLMechanism.Name() != SASLScramSHA512 {
		t.Errorf("example TLS/SASL: %+v", d)
	}
	t.Setenv("OUTAGEWATCH_KAFKA_PASSWORD", "")
	if _, err := ParseConfig("outagewatch.yaml", []byte(text)); err == nil ||
		!strings.Contains(err.Error(), "kafka.sasl.password_env: environment variable OUTAGEWATCH_KAFKA_PASSWORD is empty") {
		t.Errorf("unset password: %v", err)
	}
}
