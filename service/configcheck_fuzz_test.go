package service

import (
	"os"
	"strings"
	"testing"
)

// Any config text either loads or fails with an error that starts with the
// file name; the line lookup and the duration walk never panic. The seeds
// are the shipped configs and TLS/SASL sections with each kind of mistake.
func FuzzParseConfig(f *testing.F) {
	for _, p := range []string{"../deploy/outagewatch.yaml", "../deploy/compose.outagewatch.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	base := "kafka:\n  brokers: [b:9092]\n  topics: [{name: flows, stream: flows, format: goflow2-pb}]\ndata_dir: /tmp/x\n"
	for _, s := range []string{
		base + "checkpoint_interval: -1s\n",
		base + "sinks: [{name: a, type: jsonl, path: -}]\nlateness: -3m\n",
		strings.Replace(base, "  topics:", "  sasl: {mechanism: PLAIN, username: u, password_env: NOPE_NOT_SET}\n  topics:", 1),
		strings.Replace(base, "  topics:", "  tls: {cert_file: x.pem}\n  topics:", 1),
		strings.Replace(base, "  topics:", "  tls:\n  sasl: [1, 2]\n  topics:", 1),
		"- a\n- b\n",
		"kafka: [x]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig("f.yaml", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if c.CheckpointInterval <= 0 || c.Kafka.SessionTimeout <= 0 || c.Lateness < 0 || c.BucketWidth < 0 {
			t.Fatalf("loaded with a duration out of range: %+v", c)
		}
	})
}
