package actions

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outagewatch/outagewatch/alerting"
)

// Pager delivers the action events to the configured sinks through one
// persisted outbox per sink (package alerting), so that a shutdown, a
// restore, a refusal or an override pages the operator like any alert,
// and a sink that is down gets them when it is back.
type Pager struct {
	disp  *alerting.Dispatcher
	files []*os.File
}

// NewPager builds the sinks of cfg (secrets read now from the environment
// variables the configuration names: a missing one fails at start, not at
// the first shutdown) and opens their outboxes under cfg.Outbox. With no
// sinks it returns nil, and Emit on nil only logs.
func NewPager(cfg *Config) (*Pager, error) {
	if len(cfg.Sinks) == 0 {
		return nil, nil
	}
	p := &Pager{}
	var sinks []alerting.Sink
	for _, sc := range cfg.Sinks {
		switch sc.Type {
		case "jsonl":
			w := os.Stdout
			if sc.Path != "-" {
				if err := os.MkdirAll(filepath.Dir(sc.Path), 0o755); err != nil {
					p.closeFiles()
					return nil, fmt.Errorf("actions sink %s: %w", sc.Name, err)
				}
				f, err := os.OpenFile(sc.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					p.closeFiles()
					return nil, fmt.Errorf("actions sink %s: %w", sc.Name, err)
				}
				p.files = append(p.files, f)
				w = f
			}
			sinks = append(sinks, alerting.NewJSONL(sc.Name, w))
		case "webhook":
			secret := ""
			if sc.SecretEnv != "" {
				if secret = os.Getenv(sc.SecretEnv); secret == "" {
					p.closeFiles()
					return nil, fmt.Errorf("actions sink %s: environment variable %s is empty", sc.Name, sc.SecretEnv)
				}
			}
			w, err := alerting.NewWebhook(alerting.WebhookConfig{Name: sc.Name, URL: sc.URL, Secret: secret, Headers: sc.Headers, MinSeverity: sc.MinSeverity})
			if err != nil {
				p.closeFiles()
				return nil, fmt.Errorf("actions sink %s: %w", sc.Name, err)
			}
			sinks = append(sinks, w)
		case "slack":
			tok := os.Getenv(sc.TokenEnv)
			if tok == "" {
				p.closeFiles()
				return nil, fmt.Errorf("actions sink %s: environment variable %s is empty", sc.Name, sc.TokenEnv)
			}
			sl, err := alerting.NewSlack(alerting.SlackConfig{Name: sc.Name, Token: tok, Channel: sc.Channel,
				StateDir: filepath.Join(cfg.Outbox, sc.Name), MinSeverity: sc.MinSeverity})
			if err != nil {
				p.closeFiles()
				return nil, fmt.Errorf("actions sink %s: %w", sc.Name, err)
			}
			sinks = append(sinks, sl)
		}
	}
	d, err := alerting.NewDispatcher(alerting.DispatcherConfig{Dir: cfg.Outbox}, sinks...)
	if err != nil {
		p.closeFiles()
		return nil, err
	}
	p.disp = d
	return p, nil
}

// Start starts delivering in the background.
func (p *Pager) Start() {
	if p != nil {
		p.disp.Start()
	}
}

// Emit queues an action event on every sink that wants it, and logs it.
func (p *Pager) Emit(ev *alerting.Event) {
	slog.Info("action", "summary", ev.Summary, "status", ev.Status, "id", ev.ID, "action", ev.Details["action"])
	if p == nil {
		return
	}
	if err := p.disp.Dispatch(ev); err != nil {
		slog.Error("actions: action event not queued", "id", ev.ID, "action", ev.Details["action"], "err", err)
	}
}

// Dispatcher is the outboxes, for a caller that drains them.
func (p *Pager) Dispatcher() *alerting.Dispatcher { return p.disp }

// Close closes the outboxes (what is undelivered stays on disk for the
// next start) and the files.
func (p *Pager) Close() error {
	if p == nil {
		return nil
	}
	err := p.disp.Close()
	p.closeFiles()
	return err
}

func (p *Pager) closeFiles() {
	for _, f := range p.files {
		f.Close()
	}
}

// Register exports the outboxes' counters, so that an action that pages
// nobody (a sink down, a queue growing) shows: outagewatch_actions_events_
// sent_total, _failures_total and _dropped_total, and
// outagewatch_actions_event_queue_depth, by sink.
func (p *Pager) Register(reg prometheus.Registerer) {
	if p != nil {
		reg.MustRegister(pagerCollector{p.disp})
	}
}

var (
	pagerSent     = prometheus.NewDesc("outagewatch_actions_events_sent_total", "Action events delivered, by sink.", []string{"sink"}, nil)
	pagerFailures = prometheus.NewDesc("outagewatch_actions_event_failures_total", "Failed attempts to deliver an action event, by sink (each is retried).", []string{"sink"}, nil)
	pagerDropped  = prometheus.NewDesc("outagewatch_actions_events_dropped_total", "Action events given up on after the outbox's last attempt, by sink.", []string{"sink"}, nil)
	pagerDepth    = prometheus.NewDesc("outagewatch_actions_event_queue_depth", "Action events waiting for delivery, by sink.", []string{"sink"}, nil)
)

type pagerCollector struct{ d *alerting.Dispatcher }

func (c pagerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pagerSent
	ch <- pagerFailures
	ch <- pagerDropped
	ch <- pagerDepth
}

func (c pagerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.d.Stats() {
		ch <- prometheus.MustNewConstMetric(pagerSent, prometheus.CounterValue, float64(st.Sent), st.Sink)
		ch <- prometheus.MustNewConstMetric(pagerFailures, prometheus.CounterValue, float64(st.Failures), st.Sink)
		ch <- prometheus.MustNewConstMetric(pagerDropped, prometheus.CounterValue, float64(st.Dropped), st.Sink)
		ch <- prometheus.MustNewConstMetric(pagerDepth, prometheus.GaugeValue, float64(st.QueueDepth), st.Sink)
	}
}
