package alerting

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// AlertmanagerConfig configures the Alertmanager sink.
type AlertmanagerConfig struct {
	// Name is the sink name; default "alertmanager".
	Name string
	// URL is the Alertmanager's base URL (http://alertmanager:9093); the
	// sink posts to URL + /api/v2/alerts.
	URL string
	// Refresh is how often firing notifications are re-posted, so that
	// Alertmanager does not time them out; EndsAt is set to 4 × Refresh
	// ahead. Default 1 minute.
	Refresh time.Duration
	// GeneratorURL is a link prefix; the notification ID is appended
	// (the event's page). Empty sends none.
	GeneratorURL string
	// Headers are added to every request (an Authorization header for an
	// Alertmanager behind a proxy).
	Headers map[string]string
	// Timeout bounds one post. Default 10s.
	Timeout time.Duration
	Client  *http.Client
	Now     func() time.Time
	Logger  *slog.Logger
}

// Alertmanager posts outage events and alerts to a Prometheus Alertmanager,
// so operators keep their routing, grouping, silences and receivers.
// Alertmanager is idempotent by label set: a repeat of a post changes
// nothing, which is what makes this sink exactly-once in effect. Firing
// notifications are re-posted every Refresh until resolved; a notification
// whose labels change (an event's severity escalates) resolves the old
// label set so Alertmanager does not keep both.
type Alertmanager struct {
	cfg    AlertmanagerConfig
	client *http.Client
	log    *slog.Logger

	mu     sync.Mutex
	firing map[string]amAlert // by notification ID
	stop   chan struct{}
	done   chan struct{}
}

// amAlert is Alertmanager's postable alert (API v2).
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// NewAlertmanager returns the sink.
func NewAlertmanager(cfg AlertmanagerConfig) (*Alertmanager, error) {
	if cfg.Name == "" {
		cfg.Name = "alertmanager"
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("alerting: alertmanager %s: url %q is not http(s)", cfg.Name, RedactURL(cfg.URL))
	}
	cfg.URL = strings.TrimSuffix(cfg.URL, "/")
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Minute
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := cfg.Client
	if c == nil {
		c = &http.Client{}
	}
	return &Alertmanager{cfg: cfg, client: c, log: cfg.Logger.With("sink", cfg.Name), firing: map[string]amAlert{}}, nil
}

// Name implements Sink.
func (a *Alertmanager) Name() string { return a.cfg.Name }

// Wants implements Selector: events and alerts, but nothing muted (a
// silenced alert has no business in Alertmanager's routing).
func (a *Alertmanager) Wants(ev *Event) bool { return ev.Muted == "" }

// AlertmanagerLabels are the label set of a notification: what
// Alertmanager routes, groups and silences on. They stay the same for
// the life of an alert, except severity, which may escalate.
func AlertmanagerLabels(ev *Event) map[string]string {
	l := map[string]string{"alertname": ev.Rule, "kind": ev.Kind, "id": ev.ID, "severity": ev.Severity,
		"detector": ev.Detector, "entity": ev.Entity, "signal": ev.Signal}
	if ev.IsEvent() {
		l["alertname"] = "OutageEvent"
		l["place"] = ev.Scope.Place
		delete(l, "entity")
		delete(l, "signal")
	} else if ev.OutageEvent != "" {
		l["event"] = ev.OutageEvent
	}
	for k, v := range ev.Labels {
		if _, taken := l[k]; !taken {
			l[k] = v
		}
	}
	for k, v := range l {
		if v == "" {
			delete(l, k)
		}
	}
	return l
}

func (a *Alertmanager) convert(ev *Event) amAlert {
	ann := map[string]string{"summary": ev.Summary}
	if ev.IsEvent() {
		ann["cause"] = ev.Cause
		ann["confidence"] = strconv.FormatFloat(ev.Confidence, 'f', 2, 64)
		ann["members"] = strings.Join(ev.Members, ",")
		ann["scope"] = ev.Scope.Name
	} else {
		ann["observed"] = Measure(ev.Signal, ev.Observed, ev.Baseline, ev.ChangePct, ev.BaselineMethod)
	}
	for k, v := range ann {
		if v == "" {
			delete(ann, k)
		}
	}
	am := amAlert{Labels: AlertmanagerLabels(ev), Annotations: ann, StartsAt: ev.Start}
	if a.cfg.GeneratorURL != "" {
		am.GeneratorURL = a.cfg.GeneratorURL + ev.ID
	}
	if ev.Status == Resolved && ev.End != nil {
		am.EndsAt = *ev.End
	} else if ev.Status == Resolved {
		am.EndsAt = a.cfg.Now()
	}
	return am
}

// Send implements Sink.
func (a *Alertmanager) Send(ctx context.Context, ev *Event) error {
	am := a.convert(ev)
	a.mu.Lock()
	prev, had := a.firing[ev.ID]
	a.mu.Unlock()
	batch := []amAlert{am}
	if had && !maps.Equal(prev.Labels, am.Labels) {
		old := prev
		old.EndsAt = a.cfg.Now()
		batch = append(batch, old)
	}
	if ev.Status == Firing {
		batch[0].EndsAt = a.cfg.Now().Add(4 * a.cfg.Refresh)
	}
	if err := a.post(ctx, batch); err != nil {
		return fmt.Errorf("alerting: alertmanager %s: event %s %s: %w", a.cfg.Name, ev.ID, ev.Status, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ev.Status == Firing {
		a.firing[ev.ID] = am
		a.startLocked()
	} else {
		delete(a.firing, ev.ID)
	}
	return nil
}

func (a *Alertmanager) startLocked() {
	if a.stop != nil {
		return
	}
	a.stop, a.done = make(chan struct{}), make(chan struct{})
	go a.refreshLoop(a.stop, a.done)
}

func (a *Alertmanager) refreshLoop(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(a.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := a.RefreshNow(context.Background()); err != nil {
				a.log.Warn("alertmanager: re-post of firing notifications failed; retried next round", "err", err)
			}
		}
	}
}

// RefreshNow re-posts every firing notification with a fresh EndsAt.
func (a *Alertmanager) RefreshNow(ctx context.Context) error {
	a.mu.Lock()
	batch := make([]amAlert, 0, len(a.firing))
	for _, id := range slices.Sorted(maps.Keys(a.firing)) {
		am := a.firing[id]
		am.EndsAt = a.cfg.Now().Add(4 * a.cfg.Refresh)
		batch = append(batch, am)
	}
	a.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	return a.post(ctx, batch)
}

// Close stops the refresh loop.
func (a *Alertmanager) Close() error {
	a.mu.Lock()
	stop, done := a.stop, a.done
	a.stop = nil
	a.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	return nil
}

func (a *Alertmanager) post(ctx context.Context, batch []amAlert) error {
	body, err := json.Marshal(batch)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.URL+"/api/v2/alerts", bytes.NewReader(body))
	if err != nil {
		return errors.New("bad request: " + RedactURL(a.cfg.URL))
	}
	for k, v := range a.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "outagewatch")
	resp, err := a.client.Do(req)
	if err != nil {
		return redactErr(err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	return nil
}
