package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// Every Kafka client of actions serve (the decider, the Traffic Manager's
// load feed, its plan topic) authenticates with the configuration's kafka
// block, the service's own keys; a wrong password stops it at start.
func TestActionsServeKafkaSASL(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "dcload", "plans"), kfake.SeedTopics(3, "deciders"),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "actions", "s3cret"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	broker := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.SASL(plain.Auth{User: "actions", Pass: "s3cret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	b, err := os.ReadFile("../../trafficmanager/testdata/sections-and-loss.dcload.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "dcload", Value: []byte(l)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := actionsConfig(t, dir, fmt.Sprintf(`serve:
  listen: %s
  decider_topic: deciders
kafka:
  brokers: [%s]
  sasl: {mechanism: PLAIN, username: actions, password_env: OW_TEST_KAFKA_PASSWORD}
traffic_manager:
  topology: ../../trafficmanager/testdata/sections-and-loss.yaml
  topic: dcload
  mode: enforce
  plan_topic: plans
`, addr, broker))
	// The topology path is relative to the configuration file's directory.
	b, _ = os.ReadFile(cfg)
	wd, _ := os.Getwd()
	os.WriteFile(cfg, []byte(strings.Replace(string(b), "../../trafficmanager", wd+"/../../trafficmanager", 1)), 0o644)

	t.Setenv("OW_TEST_KAFKA_PASSWORD", "wrong")
	if _, err := runActions(t, "", "serve", "--config", cfg); err == nil || !strings.Contains(err.Error(), "decider") {
		t.Fatalf("serve with a wrong password: %v", err)
	}

	t.Setenv("OW_TEST_KAFKA_PASSWORD", "s3cret")
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
	// The plans reached the plan topic through the authenticated writer:
	// plans 1 to 5, from the windows of 10:05 to 10:25 (the first window
	// changes nothing, so it is no plan; the last, 10:30, stays open), as
	// `actions tm` numbers them on the same reports.
	cons, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.SASL(plain.Auth{User: "actions", Pass: "s3cret"}.AsMechanism()),
		kgo.ConsumeTopics("plans"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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
