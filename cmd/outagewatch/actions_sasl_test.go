package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Every Kafka client of actions serve (the decider, the Traffic Manager's
// load feed, its plan topic) dials with the configuration's kafka block,
// the service's own keys: SASL PLAIN, and TLS verified against a CA file
// with SCRAM-SHA-512; a wrong password stops it at start.
func TestActionsServeKafkaSASL(t *testing.T) {
	dir := t.TempDir()
	ca, serverCert := testCA(t, dir)
	serverTLS := &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}
	pool := x509.NewCertPool()
	b, _ := os.ReadFile(ca)
	pool.AppendCertsFromPEM(b)
	for _, tc := range []struct {
		name string
		opts []kfake.Opt
		yaml string
		kgo  []kgo.Opt
	}{
		{"sasl-plain", []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("PLAIN", "actions", "s3cret")},
			"  sasl: {mechanism: PLAIN, username: actions, password_env: OW_TEST_KAFKA_PASSWORD}\n",
			[]kgo.Opt{kgo.SASL(plain.Auth{User: "actions", Pass: "s3cret"}.AsMechanism())}},
		{"tls+scram-sha-512", []kfake.Opt{kfake.TLS(serverTLS), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "actions", "s3cret")},
			"  tls: {ca_file: " + ca + ", server_name: kafka.test}\n  sasl: {mechanism: SCRAM-SHA-512, username: actions, password_env: OW_TEST_KAFKA_PASSWORD}\n",
			[]kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "kafka.test", MinVersion: tls.VersionTLS12}),
				kgo.SASL(scram.Auth{User: "actions", Pass: "s3cret"}.AsSha512Mechanism())}},
	} {
		t.Run(tc.name, func(t *testing.T) { serveWithKafkaSecurity(t, tc.opts, tc.yaml, tc.kgo) })
	}
}

func serveWithKafkaSecurity(t *testing.T, opts []kfake.Opt, kafkaYAML string, kgoOpts []kgo.Opt) {
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "dcload", "plans"), kfake.SeedTopics(3, "deciders"),
		kfake.GroupMinSessionTimeout(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	broker := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(broker)}, kgoOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	b, err := os.ReadFile("../../trafficmanager/testdata/sections-and-loss.dcload.jsonl")
	dir := t.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "dcload", Value: []byte(l)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	addr := freeAddr(t)
	cfg := actionsConfig(t, dir, fmt.Sprintf(`serve:
  listen: %s
  decider_topic: deciders
kafka:
  brokers: [%s]
%straffic_manager:
  topology: ../../trafficmanager/testdata/sections-and-loss.yaml
  topic: dcload
  mode: enforce
  plan_topic: plans
`, addr, broker, kafkaYAML))
	// The topology path is relative to the configuration file's directory.
	b, _ = os.ReadFile(cfg)
	wd, _ := os.Getwd()
	os.WriteFile(cfg, []byte(strings.Replace(string(b), "../../trafficmanager", wd+"/../../trafficmanager", 1)), 0o644)

	t.Setenv("OW_TEST_KAFKA_PASSWORD", "wrong")
	if _, err := runActions(t, "", "serve", "--config", cfg); err == nil || !strings.HasPrefix(err.Error(), "decider: could not successfully authenticate") ||
		!strings.HasSuffix(err.Error(), "SASL Authentication failed") {
		t.Fatalf("serve with a wrong password: %v", err)
	}

	t.Setenv("OW_TEST_KAFKA_PASSWORD", "s3cret")
	t.Setenv("OUTAGEWATCH_WEBHOOK_SECRET", "hook")
	startServe(t, addr, "--config", cfg)
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// The same six closed windows as without SASL, and the decider holds
	// all three partitions.
	for i := 0; !strings.Contains(get("/metrics"), `outagewatch_tm_changes_total{op="revert"} 5`) ||
		!strings.Contains(get("/metrics"), "outagewatch_actions_decider_partitions 3"); i++ {
		if i > 1200 {
			t.Fatalf("metrics:\n%s", get("/metrics"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := get("/readyz"); got != "ready\n" {
		t.Errorf("readyz with the decider's partitions held: %q", got)
	}
	// The plans reached the plan topic through the authenticated writer:
	// plans 1 to 5, from the windows of 10:05 to 10:25 (the first window
	// changes nothing, so it is no plan; the last, 10:30, stays open), as
	// `actions tm` numbers them on the same reports.
	cons, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(broker), kgo.ConsumeTopics("plans"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, kgoOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var seqs []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(seqs) < 5 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "X-Outagewatch-Plan-Seq" {
					seqs = append(seqs, string(h.Value))
				}
			}
		})
	}
	if strings.Join(seqs, ",") != "1,2,3,4,5" {
		t.Fatalf("plan sequence numbers on the topic: %v", seqs)
	}
}

// testCA writes a CA certificate to dir and returns its path and a server
// certificate it signed for kafka.test and 127.0.0.1.
func testCA(t *testing.T, dir string) (string, tls.Certificate) {
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
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kafka.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"kafka.test"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
}
