// Package service is the live outagewatch: it consumes the stream topics
// from Kafka in one consumer group, runs them through the same pipeline as
// replay, checkpoints its state to a local data directory before it commits
// offsets, dead-letters records that do not decode, delivers alerts through
// the persisted outbox, and serves /metrics, /healthz, /readyz and
// /api/v1/alerts.
package service

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/yamlerr"
	"github.com/outagewatch/outagewatch/silence"
)

// Config is the YAML configuration of `outagewatch run` (see
// deploy/outagewatch.yaml for every key with its meaning).
type Config struct {
	Kafka KafkaConfig `yaml:"kafka"`
	// DataDir holds the checkpoint and the alert outboxes.
	DataDir string `yaml:"data_dir"`
	// CheckpointInterval bounds how much input is re-read after a crash.
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	// BucketWidth, Lateness and History configure the event-time buckets;
	// zero keeps the pipeline defaults, which replay uses too.
	BucketWidth time.Duration `yaml:"bucket_width"`
	Lateness    time.Duration `yaml:"lateness"`
	History     int           `yaml:"history_buckets"`
	// Rules and Map name the rules file (default: the shipped rules) and
	// the AS/prefix mapping file.
	Rules     string   `yaml:"rules"`
	Map       string   `yaml:"map"`
	LocalASNs []uint32 `yaml:"local_asns"`
	Sinks     []Sink   `yaml:"sinks"`
	HTTP      HTTP     `yaml:"http"`
	// Correlation tunes the outage events: impact thresholds of severity
	// and zones whose failures belong to a network's outage.
	Correlation Correlation `yaml:"correlation"`
	// Silences are maintenance windows set in the config; more can be set
	// through POST /api/v1/silences (kept on kafka.silence_topic).
	Silences []silence.Silence `yaml:"silences"`
	// MemoryLimit is the Go runtime's soft memory limit ("6GiB", "75%",
	// package memlimit): the collector keeps the process near it instead
	// of letting the heap grow to twice what it holds. Empty leaves
	// GOMEMLIMIT (or none); the --memory-limit flag overrides it.
	MemoryLimit string `yaml:"memory_limit"`

	// file is where the config was read from, for relative paths.
	file string
}

// KafkaConfig says where the stream topics are and how they are consumed.
type KafkaConfig struct {
	Brokers  []string `yaml:"brokers"`
	GroupID  string   `yaml:"group_id"`
	ClientID string   `yaml:"client_id"`
	Topics   []Topic  `yaml:"topics"`
	// DeadLetterTopic receives records that do not decode; empty turns
	// dead-lettering off (they are still counted and skipped).
	DeadLetterTopic string `yaml:"dead_letter_topic"`
	// IdleAfter is how long a partition that is caught up and silent keeps
	// holding the watermark back. After that it stops counting, so that one
	// quiet partition does not stall every bucket; a partition with a
	// backlog never counts as idle.
	IdleAfter time.Duration `yaml:"idle_partition_after"`
	// MaxQueued bounds the records a stage-one input partition holds
	// while they wait for the routing table (a BGP feed that lags but is
	// not idle): at the bound its reading pauses until the table moves,
	// so a late source costs time, not memory.
	MaxQueued int `yaml:"max_queued_records"`
	// SessionTimeout of the consumer group membership.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// PollInterval is how often high watermarks are read for lag and
	// readiness.
	PollInterval time.Duration `yaml:"poll_interval"`
	// InternalTopic carries the partials from stage one to stage two
	// (`run --stage 1|2|both`); created with InternalPartitions partitions
	// when absent. ChangelogTopic, compacted, keeps each stage-two
	// partition's state, with as many partitions.
	InternalTopic      string `yaml:"internal_topic"`
	InternalPartitions int    `yaml:"internal_partitions"`
	ChangelogTopic     string `yaml:"changelog_topic"`
	// SilenceTopic, compacted, one partition, carries the silences set
	// through any instance's API to every other (`run`).
	SilenceTopic string `yaml:"silence_topic"`
	// ViewTopic, compacted, one partition, carries every instance's
	// alerts and outage events to every other, for the API and the page.
	ViewTopic string `yaml:"view_topic"`
	// ControlTopic, one partition, carries the requests that every
	// instance acts on (a checkpoint of the whole deployment) and the
	// instances' answers.
	ControlTopic string `yaml:"control_topic"`
	// TLS and SASL to the brokers (internal/kafkaio); absent means plaintext.
	TLS  *KafkaTLS  `yaml:"tls"`
	SASL *KafkaSASL `yaml:"sasl"`
}

// Topic binds a Kafka topic to a decoder.
type Topic struct {
	Name   string `yaml:"name"`
	Stream string `yaml:"stream"`
	Format string `yaml:"format"`
}

// Correlation configures the correlation stage.
type Correlation struct {
	// Severity overrides, field by field, the rules' severity: block
	// (impact at which an event is a warning or critical, and when its
	// duration factor reaches 1). Zero keeps the rules' values.
	Severity correlate.Thresholds `yaml:"severity"`
	// ZoneOwners maps a DNS zone to the AS whose outage its failures
	// belong to; unlisted zones are matched to networks by name.
	ZoneOwners map[string]uint32 `yaml:"zone_owners"`
	// GroupWait holds an event's first page this long after its first
	// alert, so that it names the place once the slower views have fired
	// (correlate.DefaultGroupWait, ten minutes, says why). Unset takes
	// the default; 0s pages at once.
	GroupWait *time.Duration `yaml:"group_wait"`
}

// groupWait is the pipeline's setting for c.GroupWait: zero for the
// default, negative for none.
func (c Correlation) groupWait() time.Duration {
	switch {
	case c.GroupWait == nil:
		return 0
	case *c.GroupWait <= 0:
		return -1
	}
	return *c.GroupWait
}

// Sink is one alert destination.
type Sink struct {
	Name string `yaml:"name"`
	// Type is "jsonl", "webhook", "slack" or "alertmanager".
	Type string `yaml:"type"`
	// Headers are added to every request of a webhook or alertmanager
	// sink (an Authorization header, a tenant ID).
	Headers map[string]string `yaml:"headers"`
	// RateLimit caps deliveries to this sink.
	RateLimit struct {
		PerSecond float64 `yaml:"per_second"`
		Burst     int     `yaml:"burst"`
	} `yaml:"rate_limit"`
	// EventURL is a link prefix to an event's page; the event ID is
	// appended (Slack's "open" link, Alertmanager's generatorURL).
	EventURL string `yaml:"event_url"`
	// MinSeverity makes a slack or webhook sink page only at that
	// severity or above (info, warning, critical).
	MinSeverity string `yaml:"min_severity"`
	// Path of a jsonl sink; "-" is stdout.
	Path string `yaml:"path"`
	// URL and SecretEnv of a webhook sink: the secret is read from the
	// environment so that it stays out of the config file.
	URL       string `yaml:"url"`
	SecretEnv string `yaml:"secret_env"`
	// TokenEnv and Channel of a slack sink.
	TokenEnv string `yaml:"token_env"`
	Channel  string `yaml:"channel"`
	// ActionRules makes a webhook or jsonl sink the feed of an actions
	// process (`outagewatch actions serve`): it gets every alert of these
	// rules, firing and resolved, whatever outage event it joined and
	// whatever receivers its rule names, and nothing else. A member alert
	// pages nobody (its event does), but an action acts on the alert.
	ActionRules []string `yaml:"action_rules"`
}

// HTTP configures the operations endpoints.
type HTTP struct {
	// Listen defaults to 127.0.0.1:9310: nothing is exposed unless asked.
	Listen string `yaml:"listen"`
	// TokenEnv names the environment variable holding the bearer token that
	// state-changing endpoints require; without it they are disabled.
	TokenEnv string `yaml:"token_env"`
	// ChartHistory is how much of every series' observed values the
	// outage page keeps to chart an outage whole, against its baseline
	// and last week (8 bytes a bucket a series: a week of 5-minute
	// buckets is 16 KB a series). 0, the default, keeps none: charts then
	// show the buckets each alert carries as evidence.
	ChartHistory time.Duration `yaml:"chart_history"`
	// ExternalLinks, when false, takes the outage page's links out
	// (RIPEstat, bgp.tools, Cloudflare Radar, IODA, per network and
	// country) off: for a private deployment whose readers should not be
	// sent elsewhere. Unset is true: public context is what an operator
	// checks first.
	ExternalLinks *bool `yaml:"external_links"`
}

// Links says whether the outage page links out (see ExternalLinks).
func (h HTTP) Links() bool { return h.ExternalLinks == nil || *h.ExternalLinks }

// Defaults.
const (
	DefaultListen             = "127.0.0.1:9310"
	DefaultGroupID            = "outagewatch"
	DefaultCheckpointInterval = 10 * time.Second
	DefaultIdleAfter          = 30 * time.Second
	DefaultPollInterval       = 2 * time.Second
	DefaultSessionTimeout     = 10 * time.Second
	DefaultInternalTopic      = "outagewatch-partials"
	DefaultChangelogTopic     = "outagewatch-stage2-changelog"
	DefaultSilenceTopic       = "outagewatch-silences"
	DefaultViewTopic          = "outagewatch-alerts"
	// DefaultControlTopic is named like the other topics of the
	// staged runtime: "outagewatch-" and what it carries.
	DefaultControlTopic       = "outagewatch-control"
	DefaultInternalPartitions = 6
	// DefaultMaxQueued is 128 of stage one's fetch batches (512 records):
	// at the few hundred bytes of a goflow2 or dnstap record, some tens of
	// MB per partition, a few seconds of a busy exporter.
	DefaultMaxQueued = 128 * 512
)

// LoadConfig reads and validates a config file. Unknown keys are errors
// that name the file and line.
func LoadConfig(file string) (*Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ParseConfig(file, b)
}

// ParseConfig parses config text; file names it in errors.
func ParseConfig(file string, b []byte) (*Config, error) {
	var c Config
	if err := yamlerr.Decode(file, b, &c); err != nil {
		return nil, err
	}
	c.file = file
	if err := c.checkLoaded(file, b); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &c, nil
}

func (c *Config) validate() error {
	if len(c.Kafka.Brokers) == 0 {
		return errors.New("kafka.brokers: at least one broker is needed")
	}
	if c.Kafka.GroupID == "" {
		c.Kafka.GroupID = DefaultGroupID
	}
	if c.Kafka.ClientID == "" {
		c.Kafka.ClientID = "outagewatch"
	}
	if len(c.Kafka.Topics) == 0 {
		return errors.New("kafka.topics: no topic to consume")
	}
	known := map[string]bool{}
	for _, f := range ingest.Formats() {
		known[f] = true
	}
	seen := map[string]bool{}
	for i, t := range c.Kafka.Topics {
		if t.Name == "" || t.Stream == "" || t.Format == "" {
			return fmt.Errorf("kafka.topics[%d]: name, stream and format are all required", i)
		}
		if seen[t.Name] {
			return fmt.Errorf("kafka.topics[%d]: topic %q listed twice", i, t.Name)
		}
		seen[t.Name] = true
		if !known[t.Stream+"/"+t.Format] {
			return fmt.Errorf("kafka.topics[%d]: no decoder for stream %q format %q (known: %s)",
				i, t.Stream, t.Format, strings.Join(ingest.Formats(), ", "))
		}
	}
	if seen[c.Kafka.DeadLetterTopic] {
		return fmt.Errorf("kafka.dead_letter_topic %q is also an input topic", c.Kafka.DeadLetterTopic)
	}
	if c.Kafka.IdleAfter <= 0 {
		c.Kafka.IdleAfter = DefaultIdleAfter
	}
	switch {
	case c.Kafka.MaxQueued < 0:
		return fmt.Errorf("kafka.max_queued_records: %d is negative", c.Kafka.MaxQueued)
	case c.Kafka.MaxQueued == 0:
		c.Kafka.MaxQueued = DefaultMaxQueued
	}
	if c.Kafka.InternalTopic == "" {
		c.Kafka.InternalTopic = DefaultInternalTopic
	}
	if c.Kafka.ChangelogTopic == "" {
		c.Kafka.ChangelogTopic = DefaultChangelogTopic
	}
	if c.Kafka.SilenceTopic == "" {
		c.Kafka.SilenceTopic = DefaultSilenceTopic
	}
	if c.Kafka.ViewTopic == "" {
		c.Kafka.ViewTopic = DefaultViewTopic
	}
	if c.Kafka.ControlTopic == "" {
		c.Kafka.ControlTopic = DefaultControlTopic
	}
	switch {
	case c.Kafka.InternalPartitions < 0:
		return fmt.Errorf("kafka.internal_partitions: %d is negative", c.Kafka.InternalPartitions)
	case c.Kafka.InternalPartitions == 0:
		c.Kafka.InternalPartitions = DefaultInternalPartitions
	}
	if seen[c.Kafka.InternalTopic] || seen[c.Kafka.ChangelogTopic] {
		return fmt.Errorf("kafka.internal_topic %q or changelog_topic %q is also an input topic", c.Kafka.InternalTopic, c.Kafka.ChangelogTopic)
	}
	if seen[c.Kafka.SilenceTopic] || seen[c.Kafka.ViewTopic] {
		return fmt.Errorf("kafka.silence_topic %q or view_topic %q is also an input topic", c.Kafka.SilenceTopic, c.Kafka.ViewTopic)
	}
	if seen[c.Kafka.ControlTopic] {
		return fmt.Errorf("kafka.control_topic %q is also an input topic", c.Kafka.ControlTopic)
	}
	if c.Kafka.PollInterval <= 0 {
		c.Kafka.PollInterval = DefaultPollInterval
	}
	if c.Kafka.SessionTimeout <= 0 {
		c.Kafka.SessionTimeout = DefaultSessionTimeout
	}
	if c.DataDir == "" {
		return errors.New("data_dir: required (checkpoints and alert outboxes live there)")
	}
	if c.CheckpointInterval <= 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.HTTP.Listen == "" {
		c.HTTP.Listen = DefaultListen
	}
	names := map[string]bool{}
	for i, s := range c.Sinks {
		if s.Name == "" {
			return fmt.Errorf("sinks[%d]: name required", i)
		}
		if names[s.Name] {
			return fmt.Errorf("sinks[%d]: sink %q listed twice", i, s.Name)
		}
		names[s.Name] = true
		switch s.Type {
		case "jsonl":
			if s.Path == "" {
				return fmt.Errorf("sinks[%d] %s: jsonl needs path (\"-\" for stdout)", i, s.Name)
			}
		case "webhook":
			if s.URL == "" {
				return fmt.Errorf("sinks[%d] %s: webhook needs url", i, s.Name)
			}
		case "slack":
			if s.TokenEnv == "" || s.Channel == "" {
				return fmt.Errorf("sinks[%d] %s: slack needs token_env and channel", i, s.Name)
			}
		case "alertmanager":
			if s.URL == "" {
				return fmt.Errorf("sinks[%d] %s: alertmanager needs url (its base, http://alertmanager:9093)", i, s.Name)
			}
		default:
			return fmt.Errorf("sinks[%d] %s: unknown type %q (jsonl, webhook, slack, alertmanager)", i, s.Name, s.Type)
		}
		if s.MinSeverity != "" && alerting.SeverityRank(s.MinSeverity) == 0 {
			return fmt.Errorf("sinks[%d] %s: min_severity %q: want info, warning or critical", i, s.Name, s.MinSeverity)
		}
		if len(s.ActionRules) > 0 && s.Type != "webhook" && s.Type != "jsonl" {
			return fmt.Errorf("sinks[%d] %s: action_rules: only a webhook or jsonl sink can feed an actions process", i, s.Name)
		}
		for j, r := range s.ActionRules {
			if r == "" {
				return fmt.Errorf("sinks[%d] %s: action_rules[%d]: empty rule name", i, s.Name, j)
			}
		}
		if s.RateLimit.PerSecond < 0 || s.RateLimit.Burst < 0 {
			return fmt.Errorf("sinks[%d] %s: rate_limit: per_second and burst must not be negative", i, s.Name)
		}
	}
	th := c.Correlation.Severity
	if th.Warning < 0 || th.Critical < 0 || th.FullAfter < 0 || th.Warning > 0 && th.Critical > 0 && th.Critical <= th.Warning {
		return errors.New("correlation.severity: warning and critical must be positive, critical above warning")
	}
	for i := range c.Silences {
		if err := c.Silences[i].Validate(); err != nil {
			return fmt.Errorf("silences[%d]: %w", i, err)
		}
	}
	return nil
}

// rateLimits returns the configured per-sink rate limits.
func (c *Config) rateLimits() map[string]alerting.RateLimit {
	out := map[string]alerting.RateLimit{}
	for _, s := range c.Sinks {
		if s.RateLimit.PerSecond > 0 {
			out[s.Name] = alerting.RateLimit{PerSecond: s.RateLimit.PerSecond, Burst: s.RateLimit.Burst}
		}
	}
	return out
}

// topic returns the binding of a topic name.
func (c *Config) topic(name string) (Topic, bool) {
	for _, t := range c.Kafka.Topics {
		if t.Name == name {
			return t, true
		}
	}
	return Topic{}, false
}

func (c *Config) topicNames() []string {
	out := make([]string, len(c.Kafka.Topics))
	for i, t := range c.Kafka.Topics {
		out[i] = t.Name
	}
	return out
}

// resolve makes a config-relative path absolute-ish: relative paths are
// taken from the config file's directory, as an operator reading it expects.
func (c *Config) resolve(p string) string {
	if p == "" || p == "-" || strings.HasPrefix(p, "/") || c.file == "" {
		return p
	}
	dir := c.file[:strings.LastIndex(c.file, "/")+1]
	return dir + p
}

func itoa(n int) string { return strconv.Itoa(n) }
