package service

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/rules"
)

// BuildSinks makes the sinks of cfg as the service does, for a caller that
// dispatches to them itself (a test of what the service delivers).
func BuildSinks(cfg *Config) ([]alerting.Sink, error) {
	return buildSinks(cfg, filepath.Join(cfg.DataDir, "outbox"))
}

// actionFeed is a sink with action_rules: the alerts of those rules,
// member of an event or not, and the resolves of alerts whose rules no
// longer judge them (detectors.ReasonRuleRemoved, ReasonRuleChanged),
// whatever their rule: such a rule may have left action_rules with it,
// and a transit its alert shut must still hear that the alert ended.
type actionFeed struct {
	alerting.Sink
	rules map[string]bool
}

// Wants implements alerting.Selector.
func (a *actionFeed) Wants(ev *alerting.Event) bool {
	if ev.IsEvent() {
		return false
	}
	return a.rules[ev.Rule] || ev.Status == alerting.Resolved && (ev.Reason == detectors.ReasonRuleRemoved || ev.Reason == detectors.ReasonRuleChanged)
}

// Feed marks it as a sink that takes what it wants whatever receivers
// the alert's rule names (alerting.Feed).
func (a *actionFeed) Feed() {}

// checkActionRules fails at start when a sink's action_rules names a rule
// the rules do not have: that sink would never receive anything.
func checkActionRules(cfg *Config, set *rules.Set) error {
	if set == nil {
		var err error
		if set, err = rules.Default(); err != nil {
			return err
		}
	}
	for _, sc := range cfg.Sinks {
		for _, name := range sc.ActionRules {
			found := false
			for _, r := range set.Rules {
				found = found || r.Name == name
			}
			if !found {
				return fmt.Errorf("sink %s: action_rules: no rule named %q", sc.Name, name)
			}
		}
	}
	return nil
}

// buildSinks makes the configured sinks. Secrets come from the environment
// variables the config names; a missing one is an error at start, not a
// failed delivery hours later.
func buildSinks(cfg *Config, outboxDir string) ([]alerting.Sink, error) {
	var out []alerting.Sink
	for _, sc := range cfg.Sinks {
		switch sc.Type {
		case "jsonl":
			w := os.Stdout
			if sc.Path != "-" {
				p := cfg.resolve(sc.Path)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return nil, fmt.Errorf("sink %s: %w", sc.Name, err)
				}
				f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					return nil, fmt.Errorf("sink %s: %w", sc.Name, err)
				}
				w = f
			}
			out = append(out, feed(sc, alerting.NewJSONL(sc.Name, w)))
		case "webhook":
			secret, err := sinkSecret(sc)
			if err != nil {
				return nil, err
			}
			w, err := alerting.NewWebhook(alerting.WebhookConfig{Name: sc.Name, URL: sc.URL, Secret: secret, Headers: sc.Headers,
				MinSeverity: sc.MinSeverity})
			if err != nil {
				return nil, err
			}
			out = append(out, feed(sc, w))
		case "slack":
			tok, err := sinkSecret(sc)
			if err != nil {
				return nil, err
			}
			sl, err := alerting.NewSlack(alerting.SlackConfig{Name: sc.Name, Token: tok, Channel: sc.Channel,
				StateDir: filepath.Join(outboxDir, sc.Name), EventURL: sc.EventURL, MinSeverity: sc.MinSeverity})
			if err != nil {
				return nil, err
			}
			out = append(out, sl)
		case "alertmanager":
			am, err := alerting.NewAlertmanager(alerting.AlertmanagerConfig{Name: sc.Name, URL: sc.URL,
				GeneratorURL: sc.EventURL, Headers: sc.Headers})
			if err != nil {
				return nil, err
			}
			out = append(out, am)
		}
	}
	return out, nil
}

// sinkSecret reads from the environment the secret a sink names: a
// webhook's signing secret ("" when it names none), a Slack token. A
// variable named but empty fails at start (and run --check), not as a
// delivery refused hours later.
func sinkSecret(sc Sink) (string, error) {
	var env string
	switch sc.Type {
	case "webhook":
		env = sc.SecretEnv
	case "slack":
		env = sc.TokenEnv
	}
	if env == "" {
		return "", nil
	}
	v := os.Getenv(env)
	if v == "" {
		return "", fmt.Errorf("sink %s: environment variable %s is empty", sc.Name, env)
	}
	return v, nil
}

// feed wraps s as an actions feed when the sink names action_rules.
func feed(sc Sink, s alerting.Sink) alerting.Sink {
	if len(sc.ActionRules) == 0 {
		return s
	}
	f := &actionFeed{Sink: s, rules: map[string]bool{}}
	for _, r := range sc.ActionRules {
		f.rules[r] = true
	}
	return f
}
