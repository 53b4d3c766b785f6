package actions

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	gobgpconfig "github.com/osrg/gobgp/v3/pkg/config"
	"go.yaml.in/yaml/v3"
)

func TestParseConfigExample(t *testing.T) {
	c, err := LoadConfig("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeDryRun || c.MaxDownPerSite != 1 || c.Cooldown != 30*time.Minute || c.Hold != 30*time.Minute || c.GoBGP != "gobgp:50051" {
		t.Fatalf("%+v", c)
	}
	if tr := c.transit("ams01", 1299); tr == nil || tr.Name != "Telia" || strings.Join(tr.Sessions, ",") != "192.0.2.11,2001:db8::11" {
		t.Fatalf("ams01 AS1299: %+v", tr)
	}
	if c.Sites["ams01"].GoBGP != "gobgp:50051" {
		t.Fatalf("site gobgp %q", c.Sites["ams01"].GoBGP)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"mode: yes\nsites: {}\n", "x.yaml:1: mode \"yes\": want off, dry-run or enforce"},
		{"mode: enforce\n", "x.yaml:1: sites: want a mapping of site name to its transits"},
		{"mode: enforce\ncolldown: 5m\n", "x.yaml:2: unknown key \"colldown\""},
		{"cooldown: soon\n", "x.yaml:1: cooldown \"soon\": want a duration such as 30m"},
		{"max_down_per_site: 0\n", "x.yaml:1: max_down_per_site \"0\": want a whole number >= 1"},
		{"sites:\n  ams01:\n    transits:\n      - {asn: 1299, sessions: [10.0.0.300]}\n", "x.yaml:4: site ams01: session \"10.0.0.300\": not an IP address"},
		{"sites:\n  ams01:\n    transits:\n      - {asn: telia, sessions: [10.0.0.1]}\n", "x.yaml:4: site ams01: asn \"telia\": want a number such as 1299"},
		{"sites:\n  ams01:\n    transits:\n      - {asn: 1299, sessions: [10.0.0.1]}\n      - {asn: AS1299, sessions: [10.0.0.2]}\n", "x.yaml:5: site ams01: AS1299 listed twice"},
		{"sites:\n  ams01:\n    transits:\n      - {asn: 1299, sessions: [10.0.0.1]}\n  fra01:\n    transits:\n      - {asn: 3356, sessions: [10.0.0.1]}\n", "x.yaml:7: site fra01: session 10.0.0.1 already belongs to ams01 AS1299"},
		{"sites:\n  ams01:\n    transits:\n      - {asn: 1299}\n", "x.yaml:4: site ams01: AS1299: no sessions"},
		{"sites:\n  ams01:\n    routers: []\n", "x.yaml:3: site ams01: unknown key \"routers\""},
		{"sites: [\n", "x.yaml:1: did not find expected node content"},
	} {
		_, err := ParseConfig("x.yaml", []byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want prefix %q", c.doc, err, c.want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	b, err := os.ReadFile("../deploy/actions.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("sites:\n  a:\n    transits:\n      - {asn: 1, sessions: [::1]}\n"))
	f.Add([]byte("mode: [\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig("f.yaml", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml:") {
				t.Fatalf("error without file:line: %v", err)
			}
			return
		}
		for _, s := range c.Sites {
			if len(s.Transits) == 0 {
				t.Fatalf("site %s without transits accepted", s.Name)
			}
			for _, tr := range s.Transits {
				if tr.ASN == 0 || len(tr.Sessions) == 0 {
					t.Fatalf("bad transit accepted: %+v", tr)
				}
			}
		}
	})
}

func TestAuditSkipsMalformed(t *testing.T) {
	path := t.TempDir() + "/audit.jsonl"
	good := `{"seq":1,"id":"abc","time":"2019-06-20T12:15:00Z","who":"outagewatch","op":"shutdown","mode":"enforce","site":"ams01","asn":1299,"why":"loss"}`
	if err := os.WriteFile(path, []byte(good+"\n{\"op\":\"explode\"}\nnot json\n"+strings.Replace(good, "abc", "def", 1)+"\n{\"seq\":5"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := OpenAudit(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := a.Records()
	if len(recs) != 2 || recs[0].ID != "abc" || recs[1].ID != "def" || a.Skipped != 2 {
		t.Fatalf("records %+v skipped %d", recs, a.Skipped)
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`{"seq":1,"id":"abc","time":"2019-06-20T12:15:00Z","who":"outagewatch","op":"shutdown","mode":"enforce","site":"ams01","asn":1299,"sessions":["192.0.2.1"],"why":"loss"}`))
	f.Add([]byte(`{"op":"restore"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRecord(b)
		if err == nil && (r.ID == "" || r.Site == "" || r.ASN == 0) {
			t.Fatalf("incomplete record accepted: %+v", r)
		}
	})
}

// The compose file's gobgpd knows every session deploy/actions.yaml would
// shut, with the transit's AS: the two files describe one deployment.
func TestGoBGPDConfigMatches(t *testing.T) {
	c, err := LoadConfig("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := gobgpconfig.ReadConfigFile("../deploy/gobgpd.toml", "toml")
	if err != nil {
		t.Fatal(err)
	}
	peers := map[string]uint32{}
	for _, n := range set.Neighbors {
		peers[n.Config.NeighborAddress] = n.Config.PeerAs
	}
	for _, site := range c.SiteNames() {
		for _, tr := range c.Sites[site].Transits {
			for _, s := range tr.Sessions {
				if peers[s] != tr.ASN {
					t.Errorf("%s AS%d session %s: gobgpd.toml has it with AS %d", site, tr.ASN, s, peers[s])
				}
			}
		}
	}
}

// The serve, kafka, traffic_manager and sinks blocks: every key read,
// defaults filled, relative paths taken from the file's directory.
func TestParseServeConfig(t *testing.T) {
	doc := `mode: enforce
audit: state/actions.jsonl
rules_file: rules/
serve:
  listen: 0.0.0.0:9320
  secret_env: HOOK_SECRET
  max_skew: 90s
  decider_topic: outagewatch-deciders
kafka:
  brokers: [k1:9092, k2:9092]
  tls: {ca_file: ca.pem}
  sasl: {mechanism: SCRAM-SHA-512, username: actions, password_env: KAFKA_PASSWORD}
traffic_manager:
  topology: topo.yaml
  topic: dcload
  mode: enforce
  plan_topic: plans
  learn: true
  anycast: ["EWR=198.51.100.0/24@192.0.2.1"]
sinks:
  - {name: noc, type: webhook, url: "https://noc.example.net/hook", secret_env: NOC_SECRET}
  - {name: log, type: jsonl, path: actions-events.jsonl}
sites:
  ams01:
    transits:
      - {asn: 1299, sessions: [192.0.2.1]}
      - {asn: 3356, sessions: [192.0.2.2]}
`
	c, err := ParseConfig("/etc/ow/actions.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := Serve{Listen: "0.0.0.0:9320", SecretEnv: "HOOK_SECRET", TokenEnv: DefaultTokenEnv, MaxSkew: 90 * time.Second,
		RestoreEvery: DefaultRestoreEvery, DeciderTopic: "outagewatch-deciders"}
	if c.Serve != want {
		t.Errorf("serve %+v, want %+v", c.Serve, want)
	}
	if c.Audit != "/etc/ow/state/actions.jsonl" || c.RulesFile != "/etc/ow/rules" || c.Outbox != "/etc/ow/state/actions-outbox" {
		t.Errorf("paths: audit %s rules %s outbox %s", c.Audit, c.RulesFile, c.Outbox)
	}
	k := c.Kafka
	if strings.Join(k.Brokers, ",") != "k1:9092,k2:9092" || k.ClientID != DefaultClientID || k.TLS.CAFile != "/etc/ow/ca.pem" ||
		*k.SASL != (KafkaSASL{Mechanism: "SCRAM-SHA-512", Username: "actions", PasswordEnv: "KAFKA_PASSWORD"}) {
		t.Errorf("kafka %+v", k)
	}
	tm := c.TrafficManager
	if tm.Topology != "/etc/ow/topo.yaml" || tm.Topic != "dcload" || tm.Mode != ModeEnforce || tm.PlanTopic != "plans" || !tm.Learn ||
		strings.Join(tm.Anycast, ";") != "EWR=198.51.100.0/24@192.0.2.1" {
		t.Errorf("traffic_manager %+v", tm)
	}
	if len(c.Sinks) != 2 || c.Sinks[0].SecretEnv != "NOC_SECRET" || c.Sinks[1].Path != "/etc/ow/actions-events.jsonl" {
		t.Errorf("sinks %+v", c.Sinks)
	}

	// The shipped file's defaults.
	d, err := LoadConfig("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Serve.Listen != DefaultListen || d.Serve.SecretEnv != DefaultSecretEnv || d.Serve.MaxSkew != DefaultMaxSkew || d.TrafficManager.Mode != ModeDryRun {
		t.Errorf("defaults: %+v %+v", d.Serve, d.TrafficManager)
	}
}

func TestParseServeConfigErrors(t *testing.T) {
	site := "sites:\n  a:\n    transits:\n      - {asn: 1, sessions: [192.0.2.1]}\n"
	for _, c := range []struct{ doc, want string }{
		{"serve:\n  listen: x\n  secrte_env: S\n", `x.yaml:3: unknown key "secrte_env" in serve: did you mean "secret_env"?`},
		{"serve:\n  max_skew: soon\n", "x.yaml:2: serve: "},
		{"serve:\n  restore_every: -1m\n", "x.yaml:2: serve.restore_every: -1m0s is negative (zero keeps the default)"},
		{"serve:\n  decider_topic: d\n", "x.yaml:2: serve.decider_topic: needs kafka.brokers"},
		{"kafka:\n  brokers: [k1:9092, k2]\n", "x.yaml:2: kafka.brokers[1] \"k2\": want host:port"},
		{"kafka:\n  brokers: [k:1]\n  sasl:\n    mechanism: GSSAPI\n", "x.yaml:4: kafka.sasl.mechanism \"GSSAPI\": want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"},
		{"kafka:\n  sasl:\n    mechanism: PLAIN\n    username: u\n", "x.yaml:3: kafka.sasl.password_env: required with SASL"},
		{"kafka:\n  tls:\n    cert_file: c.pem\n", "x.yaml:3: kafka.tls: cert_file and key_file go together"},
		{"kafka:\n  tls:\n    ca: c.pem\n", `x.yaml:3: unknown key "ca" in kafka.tls (known: ca_file, cert_file, key_file, server_name, insecure_skip_verify)`},
		{"traffic_manager:\n  topic: dcload\n", "x.yaml:2: traffic_manager.topic: needs traffic_manager.topology"},
		{"traffic_manager:\n  mode: off\n", "x.yaml:2: traffic_manager.mode \"off\": want dry-run or enforce"},
		{"audit: a.jsonl\nsinks:\n  - {name: n, type: webhook}\n", "x.yaml:3: sinks[0] n: webhook needs url"},
		{"audit: a.jsonl\nsinks:\n  - {name: n, type: jsonl, path: p}\n  - {name: n, type: jsonl, path: q}\n", "x.yaml:4: sinks[1] n: listed twice"},
		{"audit: a.jsonl\nsinks:\n  - {name: n, type: pager}\n", "x.yaml:3: sinks[0] n: unknown type \"pager\" (jsonl, webhook, slack)"},
		{"audit: a.jsonl\nsinks:\n  - {name: n, type: jsonl, paht: p}\n", `x.yaml:3: unknown key "paht" in sinks[0]: did you mean "path"?`},
		{"sinks:\n  - {name: n, type: jsonl, path: p}\n", "x.yaml:2: sinks: need outbox"},
		{"sinks: {name: n}\n", "x.yaml:1: sinks: want a list"},
	} {
		_, err := ParseConfig("x.yaml", []byte(c.doc+site))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want prefix %q", c.doc, err, c.want)
		}
	}
}

// docker-compose.yml ships no webhook secret: every service that needs one
// takes it from the environment with compose's ${VAR:?message}, so the stack
// does not start without it. Where docker-compose is installed, it agrees.
func TestComposeHasNoDefaultSecret(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, s := range doc.Services {
		v, ok := s.Environment["OUTAGEWATCH_WEBHOOK_SECRET"]
		if !ok {
			continue
		}
		n++
		if !strings.HasPrefix(v, "${OUTAGEWATCH_WEBHOOK_SECRET:?") || !strings.HasSuffix(v, "}") || len(v) < len("${OUTAGEWATCH_WEBHOOK_SECRET:?}")+10 {
			t.Errorf("service %s: OUTAGEWATCH_WEBHOOK_SECRET is %q, want ${OUTAGEWATCH_WEBHOOK_SECRET:?why it is needed}", name, v)
		}
	}
	if n != 2 {
		t.Errorf("%d services take the webhook secret, want 2 (outagewatch and actions)", n)
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Log("docker-compose not installed: its own check skipped")
		return
	}
	check := func(env ...string) error {
		cmd := exec.Command("docker-compose", "-f", "../docker-compose.yml", "config", "-q")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	t.Setenv("OUTAGEWATCH_WEBHOOK_SECRET", "")
	if err := check(); err == nil || !strings.Contains(err.Error(), "set OUTAGEWATCH_WEBHOOK_SECRET") {
		t.Errorf("without the secret: %v", err)
	}
	if err := check("OUTAGEWATCH_WEBHOOK_SECRET=0123456789abcdef"); err != nil {
		t.Errorf("with the secret: %v", err)
	}
}
