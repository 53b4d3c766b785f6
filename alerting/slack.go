package alerting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// SlackConfig configures the Slack sink.
type SlackConfig struct {
	// Name is the sink name used in rules (receivers) and metrics;
	// default "slack".
	Name string
	// Token is a bot token with chat:write.
	Token string
	// Channel is where firing alerts are posted (ID or name; Slack's reply
	// carries the ID, which is what is stored for the update).
	Channel string
	// StateDir holds the alert→message map so that a resolve after a
	// restart still updates the original message. Use the sink's outbox
	// directory. Required.
	StateDir string
	// APIURL overrides Slack's API base URL (tests, proxies); it must end
	// with "/".
	APIURL string
	// Timeout bounds one Send (all its API calls). Default 15s.
	Timeout time.Duration
	// HTTPClient overrides the HTTP client.
	HTTPClient *http.Client
	// MaxThreads bounds the remembered messages; the oldest resolved ones
	// are forgotten first. Default 5000.
	MaxThreads int
	// EventURL is a link prefix to an event's page; the ID is appended.
	EventURL string
}

// Slack posts a message when an alert fires; when it resolves, it rewrites
// that message (chat.update) to show the resolution and posts a reply in its
// thread, so people following the thread are notified and the channel shows
// at a glance which alerts are still open.
type Slack struct {
	cfg    SlackConfig
	api    *slack.Client
	path   string
	mu     sync.Mutex
	thread map[string]*slackThread
}

// slackThread is the message posted for one incident of an alert, and how
// far its resolution got: each step is persisted before the next so a retry
// after a failure (or crash) does not repeat a step already done.
type slackThread struct {
	Channel  string    `json:"channel"`
	TS       string    `json:"ts"`
	Start    time.Time `json:"start"`
	Updated  bool      `json:"updated,omitempty"`
	Replied  bool      `json:"replied,omitempty"`
	Resolved time.Time `json:"resolved,omitzero"`
}

// NewSlack returns the sink, loading the message map left by a previous run.
func NewSlack(cfg SlackConfig) (*Slack, error) {
	if cfg.Name == "" {
		cfg.Name = "slack"
	}
	if cfg.Channel == "" {
		return nil, fmt.Errorf("alerting: slack %s: no channel", cfg.Name)
	}
	if cfg.StateDir == "" {
		return nil, fmt.Errorf("alerting: slack %s: no state directory", cfg.Name)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.MaxThreads <= 0 {
		cfg.MaxThreads = 5000
	}
	var opts []slack.Option
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, slack.OptionHTTPClient(cfg.HTTPClient))
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("alerting: slack %s: %w", cfg.Name, err)
	}
	s := &Slack{
		cfg:    cfg,
		api:    slack.New(cfg.Token, opts...),
		path:   filepath.Join(cfg.StateDir, "slack-"+cfg.Name+"-messages.json"),
		thread: make(map[string]*slackThread),
	}
	b, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("alerting: slack %s: %w", cfg.Name, err)
	default:
		if err := json.Unmarshal(b, &s.thread); err != nil {
			return nil, fmt.Errorf("alerting: slack %s: %s: %w", cfg.Name, s.path, err)
		}
	}
	return s, nil
}

// Name implements Sink.
func (s *Slack) Name() string { return s.cfg.Name }

// Send implements Sink. The outbox delivers one event at a time per sink,
// but the lock keeps Send safe for direct callers too.
func (s *Slack) Send(ctx context.Context, ev *Event) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	switch ev.Status {
	case Firing:
		err = s.fire(ctx, ev)
	case Resolved:
		err = s.resolve(ctx, ev)
	default:
		return fmt.Errorf("alerting: slack %s: event %s: unknown status %q", s.cfg.Name, ev.ID, ev.Status)
	}
	if err != nil {
		var rl *slack.RateLimitedError
		if errors.As(err, &rl) {
			err = RetryAfter(err, rl.RetryAfter)
		}
		return fmt.Errorf("alerting: slack %s: event %s %s: %w", s.cfg.Name, ev.ID, ev.Status, err)
	}
	return nil
}

func (s *Slack) fire(ctx context.Context, ev *Event) error {
	text, blocks := slackMessage(ev)
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionDisableLinkUnfurl()}
	if t := s.thread[ev.ID]; t != nil && t.Start.Equal(ev.Start) && t.Resolved.IsZero() {
		// Same incident sent again (a retry after the post succeeded
		// but the outbox could not record it): refresh, do not repost.
		_, _, _, err := s.api.UpdateMessageContext(ctx, t.Channel, t.TS, opts...)
		return err
	}
	ch, ts, err := s.api.PostMessageContext(ctx, s.cfg.Channel, opts...)
	if err != nil {
		return err
	}
	if ch == "" {
		ch = s.cfg.Channel
	}
	s.thread[ev.ID] = &slackThread{Channel: ch, TS: ts, Start: ev.Start}
	return s.save()
}

func (s *Slack) resolve(ctx context.Context, ev *Event) error {
	text, blocks := slackMessage(ev)
	t := s.thread[ev.ID]
	if t == nil || !t.Start.Equal(ev.Start) {
		// The firing message is unknown (posted before the state file
		// existed, or forgotten): a standalone resolve is the best left.
		_, _, err := s.api.PostMessageContext(ctx, s.cfg.Channel,
			slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionDisableLinkUnfurl())
		return err
	}
	if !t.Updated {
		_, _, _, err := s.api.UpdateMessageContext(ctx, t.Channel, t.TS,
			slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
		if err != nil {
			return err
		}
		t.Updated = true
		t.Resolved = ev.At
		if t.Resolved.IsZero() && ev.End != nil {
			t.Resolved = *ev.End
		}
		if t.Resolved.IsZero() {
			t.Resolved = time.Now() // only orders pruning
		}
		if err := s.save(); err != nil {
			return err
		}
	}
	if !t.Replied {
		reply := fmt.Sprintf("Resolved: %s back to %s (baseline %s), outage lasted %s.",
			slackEscape(ev.Entity), fmtNum(ev.Observed), fmtNum(ev.Baseline), duration(ev))
		_, _, err := s.api.PostMessageContext(ctx, t.Channel, slack.MsgOptionText(reply, false), slack.MsgOptionTS(t.TS))
		if err != nil {
			return err
		}
		t.Replied = true
		return s.save()
	}
	return nil
}

// save persists the message map atomically, first forgetting the oldest
// resolved entries beyond MaxThreads (open ones are kept: their resolve
// still needs them).
func (s *Slack) save() error {
	if extra := len(s.thread) - s.cfg.MaxThreads; extra > 0 {
		type idt struct {
			id string
			t  time.Time
		}
		var done []idt
		for id, t := range s.thread {
			if !t.Resolved.IsZero() {
				done = append(done, idt{id, t.Resolved})
			}
		}
		slices.SortFunc(done, func(a, b idt) int {
			if c := a.t.Compare(b.t); c != 0 {
				return c
			}
			return strings.Compare(a.id, b.id)
		})
		for _, d := range done[:min(extra, len(done))] {
			delete(s.thread, d.id)
		}
	}
	b, err := json.Marshal(s.thread)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.path, b, true); err != nil {
		return fmt.Errorf("save message map: %w", err)
	}
	return nil
}

// slackMessage renders ev as fallback text (notifications, old clients) and
// blocks.
func slackMessage(ev *Event) (string, []slack.Block) {
	icon, word := ":red_circle:", "FIRING"
	if ev.Severity == "warning" {
		icon = ":large_orange_circle:"
	}
	if ev.Status == Resolved {
		icon, word = ":white_check_mark:", "RESOLVED"
	}
	entity := slackEscape(ev.Entity)
	change := strconv.FormatFloat(ev.ChangePct, 'f', 1, 64) + "%"
	if ev.ChangePct > 0 {
		change = "+" + change
	}
	start := ev.Start.UTC().Format(time.RFC3339)
	text := fmt.Sprintf("%s %s [%s] %s %s %s: observed %s vs baseline %s since %s",
		icon, word, slackEscape(ev.Severity), entity, slackEscape(ev.Signal), change,
		fmtNum(ev.Observed), fmtNum(ev.Baseline), start)
	head := fmt.Sprintf("%s *%s* %s — *%s* %s", icon, word, entity, change, slackEscape(ev.Signal))
	if ev.Summary != "" {
		head += "\n" + slackEscape(ev.Summary)
	}
	fields := []*slack.TextBlockObject{
		slack.NewTextBlockObject(slack.MarkdownType, "*Entity*\n"+entity, false, false),
		slack.NewTextBlockObject(slack.MarkdownType, "*Change*\n"+change, false, false),
		slack.NewTextBlockObject(slack.MarkdownType, "*Observed vs baseline*\n"+fmtNum(ev.Observed)+" vs "+fmtNum(ev.Baseline), false, false),
		slack.NewTextBlockObject(slack.MarkdownType, "*Severity*\n"+slackEscape(ev.Severity), false, false),
		slack.NewTextBlockObject(slack.MarkdownType, "*Start*\n"+start, false, false),
	}
	if ev.Status == Resolved && ev.End != nil {
		fields = append(fields, slack.NewTextBlockObject(slack.MarkdownType,
			"*End*\n"+ev.End.UTC().Format(time.RFC3339)+" ("+duration(ev)+")", false, false))
	}
	ctxText := "rule " + slackEscape(ev.Rule) + " · detector " + slackEscape(ev.Detector) + " · alert " + ev.ID
	if ev.BaselineMethod != "" {
		ctxText += " · baseline " + slackEscape(ev.BaselineMethod)
	}
	blocks := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, head, false, false), nil, nil),
		slack.NewSectionBlock(nil, fields, nil),
		slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, ctxText, false, false)),
	}
	return text, blocks
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func duration(ev *Event) string {
	if ev.End == nil {
		return "unknown"
	}
	return ev.End.Sub(ev.Start).Round(time.Second).String()
}

// slackEscape escapes the three characters Slack treats as markup in
// message text, so an entity or summary cannot inject mentions or links.
func slackEscape(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Wants implements Selector: one Slack message per outage event, not one
// per member alert.
func (s *Slack) Wants(ev *Event) bool { return ev.Paged() }
