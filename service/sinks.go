package service

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/outagewatch/outagewatch/alerting"
)

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
			out = append(out, alerting.NewJSONL(sc.Name, w))
		case "webhook":
			secret := ""
			if sc.SecretEnv != "" {
				if secret = os.Getenv(sc.SecretEnv); secret == "" {
					return nil, fmt.Errorf("sink %s: environment variable %s is empty", sc.Name, sc.SecretEnv)
				}
			}
			w, err := alerting.NewWebhook(alerting.WebhookConfig{Name: sc.Name, URL: sc.URL, Secret: secret, Headers: sc.Headers,
				MinSeverity: sc.MinSeverity})
			if err != nil {
				return nil, err
			}
			out = append(out, w)
		case "slack":
			tok := os.Getenv(sc.TokenEnv)
			if tok == "" {
				return nil, fmt.Errorf("sink %s: environment variable %s is empty", sc.Name, sc.TokenEnv)
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
