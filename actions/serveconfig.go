package actions

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/internal/yamlerr"
)

// Serve configures `outagewatch actions serve`: where it listens, how it
// authenticates what it is sent, and how often it looks at the clock.
type Serve struct {
	// Listen is the HTTP address. Default 127.0.0.1:9320: nothing is
	// exposed unless the operator says so.
	Listen string `yaml:"listen"`
	// SecretEnv names the environment variable holding the webhook
	// secret: every alert event posted must be signed with it (HMAC-SHA256
	// over timestamp and body, the signature of outagewatch's webhook
	// sink). Without it enforce mode does not start, and in dry-run every
	// post is refused.
	SecretEnv string `yaml:"secret_env"`
	// TokenEnv names the environment variable holding the bearer token of
	// POST /api/v1/actions/{id}/undo; unset disables undo over HTTP.
	TokenEnv string `yaml:"token_env"`
	// MaxSkew is how far a post's signed timestamp may be from this
	// host's clock. Default DefaultMaxSkew.
	MaxSkew time.Duration `yaml:"max_skew"`
	// RestoreEvery is how often restores falling due on the wall clock
	// are looked for. Default DefaultRestoreEvery.
	RestoreEvery time.Duration `yaml:"restore_every"`
	// DeciderTopic shares the sites with other instances: each site's
	// transit actions are taken by the instance owning its partition of
	// this topic (package decider). Empty: this instance decides for all.
	DeciderTopic string `yaml:"decider_topic"`
}

// Kafka says where the brokers are and how to reach them, for every Kafka
// client of the actions process (the decider, the Traffic Manager's load
// feed and its plan topic). The keys are the service's own (kafka.brokers,
// kafka.tls, kafka.sasl in outagewatch.yaml), so one block can be copied
// between the two files.
type Kafka struct {
	Brokers  []string   `yaml:"brokers"`
	ClientID string     `yaml:"client_id"`
	TLS      *KafkaTLS  `yaml:"tls"`
	SASL     *KafkaSASL `yaml:"sasl"`
}

// KafkaTLS turns TLS on: the service's kafka.tls, the same type.
type KafkaTLS = kafkaio.TLS

// KafkaSASL authenticates; the password comes from the environment
// variable PasswordEnv names: the service's kafka.sasl, the same type.
type KafkaSASL = kafkaio.SASL

// Conn is the block as kafkaio builds clients from it.
func (k Kafka) Conn() kafkaio.Conn {
	return kafkaio.Conn{Brokers: k.Brokers, ClientID: k.ClientID, TLS: k.TLS, SASL: k.SASL}
}

// TrafficManager runs the Traffic Manager live in the actions process.
type TrafficManager struct {
	// Topology is a scenario file (its ticks are ignored); its starting
	// state answers GET /api/v1/capacity.
	Topology string `yaml:"topology"`
	// Topic is the dcload topic to plan from live (consumer group
	// outagewatch-tm); empty plans nothing live.
	Topic string `yaml:"topic"`
	// Mode is dry-run (default) or enforce.
	Mode string `yaml:"mode"`
	// Webhook receives the plan changes in enforce mode, signed with the
	// serve secret.
	Webhook string `yaml:"webhook"`
	// PlanTopic receives the plan changes in enforce mode.
	PlanTopic string `yaml:"plan_topic"`
	// Learn learns maximum thresholds from the reports' SLI against CPU.
	Learn bool `yaml:"learn"`
	// Anycast is LOCATION=PREFIX[,PREFIX]@NEXTHOP, one per location whose
	// prefixes are withdrawn through the configuration's gobgp when it is
	// drained.
	Anycast []string `yaml:"anycast"`
}

// Sink is one destination of the action events (shutdown, restore,
// refusal, override), built with the alerting package's sinks.
type Sink struct {
	Name string `yaml:"name"`
	// Type is jsonl, webhook or slack.
	Type string `yaml:"type"`
	// Path of a jsonl sink; "-" is stdout.
	Path string `yaml:"path"`
	// URL, SecretEnv and Headers of a webhook sink.
	URL       string            `yaml:"url"`
	SecretEnv string            `yaml:"secret_env"`
	Headers   map[string]string `yaml:"headers"`
	// TokenEnv and Channel of a slack sink.
	TokenEnv string `yaml:"token_env"`
	Channel  string `yaml:"channel"`
	// MinSeverity makes a webhook or slack sink page only at that
	// severity or above.
	MinSeverity string `yaml:"min_severity"`
}

// Defaults of the serve block.
const (
	DefaultListen = "127.0.0.1:9320"
	// DefaultMaxSkew is the usual webhook tolerance (Slack's and
	// Stripe's is five minutes): hosts kept by NTP differ by milliseconds,
	// so it leaves room for a clock left unsynced for days, while a
	// recorded post is refused once it is this old. outagewatch's outbox
	// signs every retry anew, so a backlog does not age deliveries.
	DefaultMaxSkew = 5 * time.Minute
	// DefaultRestoreEvery: a hold is tens of minutes (30m in the shipped
	// configuration), so a restore is late by at most a sixtieth of it.
	DefaultRestoreEvery = 30 * time.Second
	DefaultSecretEnv    = "OUTAGEWATCH_WEBHOOK_SECRET"
	DefaultTokenEnv     = "OUTAGEWATCH_API_TOKEN"
	DefaultClientID     = "outagewatch-actions"
)

// The SASL mechanisms the service speaks; the same here.
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// decodeStrict decodes n into out, refusing keys out does not have (with
// the line of the key), so a typo in a block fails at load like a typo at
// the top level.
func decodeStrict(file, at string, n *yaml.Node, out any) error {
	if err := knownKeys(file, at, n, reflect.TypeOf(out).Elem()); err != nil {
		return err
	}
	if err := n.Decode(out); err != nil {
		e := yamlError(file, err).(*Error)
		e.Msg = at + ": " + e.Msg
		return e
	}
	return nil
}

func knownKeys(file, at string, n *yaml.Node, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Duration]():
		if n.Kind != yaml.MappingNode {
			if n.Tag == "!!null" {
				return nil
			}
			return &Error{file, n.Line, at + ": want a mapping"}
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			fields[name] = f.Type
			names = append(names, name)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				return &Error{file, k.Line, yamlerr.Unknown(k.Value, at, names)}
			}
			if err := knownKeys(file, at+"."+k.Value, v, ft); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if err := knownKeys(file, fmt.Sprintf("%s[%d]", at, i), c, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyLine is the line of key in mapping n, or of n itself.
func keyLine(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return n.Line
}

// itemLine is the line of the i-th item of sequence n, or of n.
func itemLine(n *yaml.Node, i int) int {
	if n != nil && n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return n.Content[i].Line
	}
	if n == nil {
		return 1
	}
	return n.Line
}

// finishServe fills in the defaults of the serve, kafka, traffic_manager,
// outbox and sinks keys and checks what can be checked before the
// environment is read. nodes maps each top-level key to its value.
func (c *Config) finishServe(nodes map[string]*yaml.Node, top *yaml.Node) error {
	fail := func(n *yaml.Node, key, format string, args ...any) error {
		line := top.Line
		if n != nil {
			line = keyLine(n, key)
		}
		return &Error{c.File, line, fmt.Sprintf(format, args...)}
	}
	s := &c.Serve
	if s.Listen == "" {
		s.Listen = DefaultListen
	}
	if s.SecretEnv == "" {
		s.SecretEnv = DefaultSecretEnv
	}
	if s.TokenEnv == "" {
		s.TokenEnv = DefaultTokenEnv
	}
	for _, kd := range []struct {
		key string
		d   time.Duration
	}{{"max_skew", s.MaxSkew}, {"restore_every", s.RestoreEvery}} {
		if key, d := kd.key, kd.d; d < 0 {
			return fail(nodes["serve"], key, "serve.%s: %s is negative (zero keeps the default)", key, d)
		}
	}
	if s.MaxSkew == 0 {
		s.MaxSkew = DefaultMaxSkew
	}
	if s.RestoreEvery == 0 {
		s.RestoreEvery = DefaultRestoreEvery
	}
	k := &c.Kafka
	if k.ClientID == "" {
		k.ClientID = DefaultClientID
	}
	for i, b := range k.Brokers {
		if _, port, ok := strings.Cut(b, ":"); !ok || port == "" {
			return &Error{c.File, itemLine(mapVal(nodes["kafka"], "brokers"), i), fmt.Sprintf("kafka.brokers[%d] %q: want host:port", i, b)}
		}
	}
	if k.SASL != nil {
		sn := mapVal(nodes["kafka"], "sasl")
		switch {
		case !slices.Contains(saslMechanisms, strings.ToUpper(k.SASL.Mechanism)):
			return fail(sn, "mechanism", "kafka.sasl.mechanism %q: want %s", k.SASL.Mechanism, strings.Join(saslMechanisms, ", "))
		case k.SASL.Username == "":
			return fail(sn, "username", "kafka.sasl.username: required with SASL")
		case k.SASL.PasswordEnv == "":
			return fail(sn, "password_env", "kafka.sasl.password_env: required with SASL: the environment variable that holds the password")
		}
	}
	if k.TLS != nil {
		tn := mapVal(nodes["kafka"], "tls")
		if (k.TLS.CertFile == "") != (k.TLS.KeyFile == "") {
			return fail(tn, "cert_file", "kafka.tls: cert_file and key_file go together (a client certificate and its key)")
		}
		k.TLS.CAFile, k.TLS.CertFile, k.TLS.KeyFile = c.resolve(k.TLS.CAFile), c.resolve(k.TLS.CertFile), c.resolve(k.TLS.KeyFile)
	}
	tm := &c.TrafficManager
	tmn := nodes["traffic_manager"]
	if tm.Mode == "" {
		tm.Mode = ModeDryRun
	}
	if tm.Mode != ModeDryRun && tm.Mode != ModeEnforce {
		return fail(tmn, "mode", "traffic_manager.mode %q: want dry-run or enforce", tm.Mode)
	}
	if tm.Topic != "" && tm.Topology == "" {
		return fail(tmn, "topic", "traffic_manager.topic: needs traffic_manager.topology (the data centers to plan)")
	}
	tm.Topology = c.resolve(tm.Topology)
	needKafka := map[string]string{"serve.decider_topic": s.DeciderTopic, "traffic_manager.topic": tm.Topic, "traffic_manager.plan_topic": tm.PlanTopic}
	for _, key := range []string{"serve.decider_topic", "traffic_manager.topic", "traffic_manager.plan_topic"} {
		if needKafka[key] != "" && len(k.Brokers) == 0 {
			block, sub, _ := strings.Cut(key, ".")
			return fail(nodes[block], sub, "%s: needs kafka.brokers", key)
		}
	}
	c.RulesFile = c.resolve(c.RulesFile)
	c.Outbox = c.resolve(c.Outbox)
	names := map[string]bool{}
	sn := nodes["sinks"]
	for i := range c.Sinks {
		sk := &c.Sinks[i]
		at := &Error{c.File, itemLine(sn, i), ""}
		bad := func(format string, args ...any) error {
			at.Msg = fmt.Sprintf("sinks[%d] %s: ", i, sk.Name) + fmt.Sprintf(format, args...)
			return at
		}
		switch {
		case sk.Name == "":
			return bad("name required")
		case names[sk.Name]:
			return bad("listed twice")
		case sk.MinSeverity != "" && alerting.SeverityRank(sk.MinSeverity) == 0:
			return bad("min_severity %q: want info, warning or critical", sk.MinSeverity)
		}
		names[sk.Name] = true
		switch sk.Type {
		case "jsonl":
			if sk.Path == "" {
				return bad("jsonl needs path (\"-\" for stdout)")
			}
			sk.Path = c.resolve(sk.Path)
		case "webhook":
			if sk.URL == "" {
				return bad("webhook needs url")
			}
		case "slack":
			if sk.TokenEnv == "" || sk.Channel == "" {
				return bad("slack needs token_env and channel")
			}
		default:
			return bad("unknown type %q (jsonl, webhook, slack)", sk.Type)
		}
	}
	if len(c.Sinks) > 0 && c.Outbox == "" {
		if c.Audit == "" {
			return fail(sn, "", "sinks: need outbox (a directory for the undelivered action events) or audit, beside which it goes")
		}
		c.Outbox = filepath.Join(filepath.Dir(c.Audit), "actions-outbox")
	}
	return nil
}

func mapVal(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// resolve takes a relative path from the configuration file's directory,
// as the service's configuration does.
func (c *Config) resolve(p string) string {
	if p == "" || p == "-" || filepath.IsAbs(p) || c.File == "" {
		return p
	}
	return filepath.Join(filepath.Dir(c.File), p)
}
