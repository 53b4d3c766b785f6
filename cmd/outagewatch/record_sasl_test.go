package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// `record --config` authenticates with the config's SASL settings, and a
// wrong password is an error, not an empty recording.
func TestRecordWithSASLFromConfig(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "flows"), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "recorder", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "recorder", Pass: "s3cret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "flows", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "ow.yaml")
	os.WriteFile(cfg, []byte("kafka:\n  brokers: ["+addr+"]\n  topics: [{name: flows, stream: flows, format: goflow2-pb}]\n"+
		"  sasl: {mechanism: PLAIN, username: recorder, password_env: OW_TEST_RECORD_PASSWORD}\ndata_dir: "+dir+"\n"), 0o644)
	out := filepath.Join(dir, "flows.owrec")
	record := func() error {
		cmd := recordCmd()
		cmd.SetArgs([]string{"--config", cfg, "--topic", "flows", "--out", out})
		return cmd.Execute()
	}
	t.Setenv("OW_TEST_RECORD_PASSWORD", "s3cret")
	if err := record(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if n := strings.Count(string(b), "\n"); n != 25 {
		t.Fatalf("recorded %d records, want 25", n)
	}
	t.Setenv("OW_TEST_RECORD_PASSWORD", "wrong")
	if err := record(); err == nil {
		t.Fatal("recorded with a wrong password")
	}
}
