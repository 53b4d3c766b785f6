package service

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The shipped example config parses, and every key it documents lands in
// the struct.
func TestExampleConfig(t *testing.T) {
	for _, f := range []string{"../deploy/outagewatch.yaml", "../deploy/compose.outagewatch.yaml"} {
		c, err := LoadConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		if c.Kafka.Brokers[0] != "kafka:9092" || c.Kafka.Topics[0].Format != "goflow2-pb" ||
			c.Kafka.DeadLetterTopic != "outagewatch.dead-letter" || c.CheckpointInterval != 10*time.Second ||
			c.Kafka.IdleAfter != 30*time.Second || c.Sinks[0].Type != "jsonl" || c.LocalASNs[0] != 64500 {
			t.Errorf("%s: %+v", f, c)
		}
		if c.resolve(c.Map) != "../deploy/map.yaml" {
			t.Errorf("map resolves to %q", c.resolve(c.Map))
		}
	}
	b, _ := os.ReadFile("../deploy/outagewatch.yaml")
	if c, _ := ParseConfig("x.yaml", b); c.HTTP.Listen != DefaultListen {
		t.Errorf("example listens on %q, want %q", c.HTTP.Listen, DefaultListen)
	}
}

func TestConfigErrors(t *testing.T) {
	base := "kafka:\n  brokers: [b:9092]\n  topics: [{name: flows, stream: flows, format: goflow2-pb}]\ndata_dir: /tmp/x\n"
	cases := map[string]string{
		base + "checkpoint_intervl: 5s\n":                                                    `c.yaml:5: unknown key "checkpoint_intervl": did you mean "checkpoint_interval"?`,
		"kafka:\n  brokers: [b]\n  topcs: []\n":                                              `c.yaml:3: unknown key "topcs": did you mean "topics"?`,
		base + "checkpoint_interval: soon\n":                                                 "c.yaml:5: ",
		"kafka:\n  topics: []\ndata_dir: x\n":                                                "kafka.brokers",
		strings.Replace(base, "goflow2-pb", "nope", 1):                                       `no decoder for stream "flows" format "nope"`,
		strings.Replace(base, "data_dir: /tmp/x\n", "", 1):                                   "data_dir: required",
		base + "sinks: [{name: a, type: carrier-pigeon}]\n":                                  `unknown type "carrier-pigeon"`,
		base + "sinks: [{name: a, type: jsonl, path: -}, {name: a, type: jsonl, path: -}]\n": `sink "a" listed twice`,
		base + "sinks: [{name: am, type: alertmanager}]\n":                                   "c.yaml: sinks[0] am: alertmanager needs url",
		base + "silences: [{entity: 'asn:1', start: 2025-01-01T00:00:00Z, end: 2025-01-01T00:00:00Z, author: a, comment: c}]\n": "c.yaml: silences[0]: end: must be after start",
		base + "silences: [{entity: 'asn:1', start: 2025-01-01T00:00:00Z, end: 2025-01-02T00:00:00Z, author: a}]\n":             "silences[0]: comment: required",
		base + "correlation: {severity: {warning: 0.3, critical: 0.2}}\n":                                                       "correlation.severity",
		base + "correlation: {severity: {full_after: soon}}\n":                                                                  "c.yaml:5: ",
		base + "sinks: [{name: s, type: slack, token_env: T, channel: c, action_rules: [transit-packet-loss]}]\n":               "sinks[0] s: action_rules: only a webhook or jsonl sink can feed an actions process",
		base + "sinks: [{name: a, type: jsonl, path: -, action_rules: ['']}]\n":                                                 "sinks[0] a: action_rules[0]: empty rule name",
		strings.Replace(base, "data_dir", "  control_topic: flows\ndata_dir", 1):                                                `kafka.control_topic "flows" is also an input topic`,
	}
	for text, want := range cases {
		_, err := ParseConfig("c.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config\n%s\nerror %v, want it to contain %q", text, err, want)
		}
	}
	c, err := ParseConfig("c.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Listen != "127.0.0.1:9310" || c.Kafka.GroupID != "outagewatch" || c.CheckpointInterval != DefaultCheckpointInterval ||
		c.Kafka.ControlTopic != DefaultControlTopic {
		t.Errorf("defaults: %+v", c)
	}
	c, err = ParseConfig("c.yaml", []byte(base+`correlation: {severity: {warning: 0.1, critical: 0.4, full_after: 1h}, zone_owners: {virginmedia.com: 5089}}
sinks: [{name: am, type: alertmanager, url: "http://am:9093", headers: {X-Scope-OrgID: noc}, rate_limit: {per_second: 2, burst: 5}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Correlation.Severity.FullAfter != time.Hour || c.Correlation.ZoneOwners["virginmedia.com"] != 5089 ||
		c.Sinks[0].Headers["X-Scope-OrgID"] != "noc" || c.rateLimits()["am"].Burst != 5 {
		t.Errorf("correlation and sink options: %+v", c)
	}
}

// A sink's action_rules must name rules that exist, or it would feed the
// actions process nothing.
func TestActionRulesMustExist(t *testing.T) {
	base := "kafka:\n  brokers: [b:9092]\n  topics: [{name: flows, stream: flows, format: goflow2-pb}]\ndata_dir: /tmp/x\n"
	c, err := ParseConfig("c.yaml", []byte(base+"sinks: [{name: actions, type: jsonl, path: -, action_rules: [transit-packet-loss, transit-packet-los]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkActionRules(c, nil); err == nil || err.Error() != `sink actions: action_rules: no rule named "transit-packet-los"` {
		t.Fatalf("err %v", err)
	}
	c.Sinks[0].ActionRules = c.Sinks[0].ActionRules[:1]
	if err := checkActionRules(c, nil); err != nil {
		t.Fatal(err)
	}
}

// correlation.group_wait: unset takes the correlator's default, 0s pages
// at once, a duration holds the first page that long, and a negative one
// fails at load on its line.
func TestConfigGroupWait(t *testing.T) {
	base := "kafka:\n  brokers: [b:9092]\n  topics: [{name: flows, stream: flows, format: goflow2-pb}]\ndata_dir: /tmp/x\n"
	for text, want := range map[string]time.Duration{
		base: 0,
		base + "correlation:\n  group_wait: 0s\n":  -1,
		base + "correlation:\n  group_wait: 15m\n": 15 * time.Minute,
	} {
		c, err := ParseConfig("c.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Correlation.groupWait(); got != want {
			t.Errorf("config\n%s\ngroup wait %s, want %s", text, got, want)
		}
	}
	_, err := ParseConfig("c.yaml", []byte(base+"correlation:\n  group_wait: -5m\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "c.yaml:6: correlation.group_wait: -5m0s is negative (0s pages at once") {
		t.Errorf("negative group wait: %v", err)
	}
}
