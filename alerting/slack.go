package alerting

import (
	"bytes"
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

	"github.com/outagewatch/outagewatch/words"
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
	// MinSeverity, when set, posts only at that severity or above; an
	// event that opens as info is posted when it reaches it.
	MinSeverity string
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
	// Chart says the chart image is in the thread.
	Chart bool `json:"chart,omitempty"`
}

// sameIncident says whether t is the message of ev's incident. An outage
// event's ID is its incident (its start may move earlier as members join);
// an alert's ID is reused by later incidents, told apart by start.
func (t *slackThread) sameIncident(ev *Event) bool {
	return t != nil && (ev.IsEvent() || t.Start.Equal(ev.Start))
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
	text, blocks := s.message(ev)
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionDisableLinkUnfurl()}
	t := s.thread[ev.ID]
	if t.sameIncident(ev) && t.Resolved.IsZero() {
		// The event grew (or the same notification is sent again after
		// the outbox could not record it): update in place, never a
		// second message.
		if _, _, _, err := s.api.UpdateMessageContext(ctx, t.Channel, t.TS, opts...); err != nil {
			return err
		}
	} else {
		ch, ts, err := s.api.PostMessageContext(ctx, s.cfg.Channel, opts...)
		if err != nil {
			return err
		}
		if ch == "" {
			ch = s.cfg.Channel
		}
		t = &slackThread{Channel: ch, TS: ts, Start: ev.Start}
		s.thread[ev.ID] = t
		if err := s.save(); err != nil {
			return err
		}
	}
	if ev.IsEvent() && !t.Chart {
		if img := ChartPNG(ev); img != nil {
			_, err := s.api.UploadFileContext(ctx, slack.UploadFileParameters{
				Filename: "outage-" + ev.ID + ".png", FileSize: len(img), Reader: bytes.NewReader(img),
				Title:   SignalWords(ev.Signal) + " of " + ev.Entity + " against its baseline",
				AltTxt:  SignalWords(ev.Signal) + " against " + BaselineWording(ev.BaselineMethod),
				Channel: t.Channel, ThreadTimestamp: t.TS,
			})
			if err != nil {
				return fmt.Errorf("upload chart: %w", err)
			}
		}
		t.Chart = true
		return s.save()
	}
	return nil
}

func (s *Slack) resolve(ctx context.Context, ev *Event) error {
	text, blocks := s.message(ev)
	t := s.thread[ev.ID]
	if !t.sameIncident(ev) {
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
		until := strings.Replace(whenText(ev.End, ev.Labels["country"]), " (", ", ", 1)
		until = strings.TrimSuffix(until, ")")
		reply := fmt.Sprintf("Resolved: %s is back; it lasted %s (until %s).",
			slackEscape(displayName(ev)), duration(ev), until)
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

// message renders ev as fallback text (notifications, old clients) and
// Block Kit blocks, in words an operator reads at 3 a.m.: names rather
// than AS numbers, rates rather than bytes per bucket, durations, times.
func (s *Slack) message(ev *Event) (string, []slack.Block) {
	icon, word := ":red_circle:", "FIRING"
	switch ev.Severity {
	case "warning":
		icon = ":large_orange_circle:"
	case "info":
		icon = ":large_blue_circle:"
	}
	if ev.Status == Resolved {
		icon, word = ":white_check_mark:", "RESOLVED"
	}
	md := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	name := slackEscape(displayName(ev))
	measure := slackEscape(SignalWords(ev.Signal) + " " + Measure(ev.Signal, ev.Observed, ev.Baseline, ev.ChangePct, ev.BaselineMethod))
	if ev.Status == Resolved && ev.IsEvent() {
		measure += " when paged"
	} else if ev.Status == Resolved {
		// An alert's resolve carries the level it recovered to.
		measure = slackEscape(SignalWords(ev.Signal) + " now " + Measure(ev.Signal, ev.Observed, ev.Baseline, ev.ChangePct, ev.BaselineMethod))
	}
	if silentFeed(ev) {
		measure = "no data"
		if ev.Status == Resolved {
			measure = "data again"
		}
	}
	var blocks []slack.Block
	var text string
	if ev.IsEvent() {
		o := ev.Outage
		in := "in"
		if o.Title != "" && o.Title != o.Scope.Name {
			in = "of"
		}
		text = fmt.Sprintf("%s %s [%s] Outage %s %s: %s", icon, word, ev.Severity, in, name, measure)
		head := fmt.Sprintf("%s *%s: outage %s %s* (%s)", icon, word, in, name, slackEscape(ev.Severity))
		var lines []string
		if ev.Status == Resolved {
			// The figures are those the member alerts fired with: say so,
			// or a reader takes them for the level it recovered to.
			lines = append(lines, "_Figures as paged, when each alert fired:_")
		}
		for _, sc := range o.Signals {
			line := "• *" + slackEscape(SignalWords(sc.Signal)) + "* of " + slackEscape(entityName(ev, sc.Entity)) + ": " +
				slackEscape(Measure(sc.Signal, sc.Observed, sc.Baseline, sc.ChangePct, ""))
			if sc.Threshold != "" {
				line += " _(rule: " + slackEscape(sc.Threshold) + ")_"
			}
			lines = append(lines, line)
		}
		blocks = append(blocks, slack.NewSectionBlock(md(head+"\n"+strings.Join(lines, "\n")), nil, nil))
		var scope []string
		for _, e := range o.Scope.Entities {
			n := slackEscape(e.Name)
			if e.Share > 0 && e.Share < 1 {
				n += fmt.Sprintf(" (%.0f %%)", e.Share*100)
			}
			scope = append(scope, n)
		}
		fields := []*slack.TextBlockObject{
			md("*Scope*\n" + strings.Join(scope, ", ")),
			md("*Started*\n" + whenText(&ev.Start, ev.Labels["country"])),
			severityField(ev),
			md("*Confidence*\n" + fmt.Sprintf("%.2f from %s (%s)", o.Confidence, words.Plural(len(o.Kinds()), "view"),
				slackEscape(strings.Join(o.Kinds(), ", ")))),
		}
		if ev.Status == Resolved && ev.End != nil {
			fields = append(fields, md("*Ended*\n"+whenText(ev.End, ev.Labels["country"])+", after "+duration(ev)))
		} else {
			fields = append(fields, md("*Lasting*\n"+HumanDuration(ev.At.Sub(ev.Start))+" so far"))
		}
		if ev.Signal != "" {
			fields = append(fields, md("*Baseline*\n"+slackEscape(BaselineWording(ev.BaselineMethod))))
		}
		blocks = append(blocks, slack.NewSectionBlock(nil, fields, nil))
		if o.Cause != "" {
			blocks = append(blocks, slack.NewSectionBlock(md("*Likely cause*: "+slackEscape(o.Cause)), nil, nil))
		}
		ctxText := fmt.Sprintf("event %s · %d alerts · update %d (%s)", ev.ID, len(o.Members), o.Revision, o.Update)
		if s.cfg.EventURL != "" {
			ctxText += " · <" + s.cfg.EventURL + ev.ID + "|open the event>"
		}
		blocks = append(blocks, slack.NewContextBlock("", md(ctxText)))
		return text, blocks
	}
	text = fmt.Sprintf("%s %s [%s] %s: %s since %s", icon, word, slackEscape(ev.Severity), name, measure, whenText(&ev.Start, ev.Labels["country"]))
	head := fmt.Sprintf("%s *%s* %s: %s", icon, word, name, measure)
	if ev.Summary != "" {
		head += "\n" + slackEscape(ev.Summary)
	}
	fields := []*slack.TextBlockObject{
		md("*Baseline*\n" + slackEscape(BaselineWording(ev.BaselineMethod))),
		md("*Severity*\n" + slackEscape(ev.Severity)),
		md("*Started*\n" + whenText(&ev.Start, ev.Labels["country"])),
	}
	if ev.Threshold != "" {
		fields = append(fields, md("*Rule*\n"+slackEscape(ev.Threshold)))
	}
	if ev.Status == Resolved && ev.End != nil {
		fields = append(fields, md("*Ended*\n"+whenText(ev.End, ev.Labels["country"])+", after "+duration(ev)))
	}
	ctxText := "rule " + slackEscape(ev.Rule) + " · detector " + slackEscape(ev.Detector) + " · alert " + ev.ID
	blocks = []slack.Block{
		slack.NewSectionBlock(md(head), nil, nil),
		slack.NewSectionBlock(nil, fields, nil),
		slack.NewContextBlock("", md(ctxText)),
	}
	return text, blocks
}

// displayName is the place or entity in words: the event's scope name, or
// the alert's labelled name with its entity.
func displayName(ev *Event) string {
	if ev.Outage != nil && ev.Title != "" {
		return ev.Title
	}
	if ev.Outage != nil && ev.Scope.Name != "" {
		return ev.Scope.Name
	}
	return entityName(ev, ev.Entity)
}

func entityName(ev *Event, entity string) string {
	if ev.Outage != nil {
		for _, e := range ev.Scope.Entities {
			if e.Entity == entity && e.Name != "" {
				return e.Name
			}
		}
	}
	if entity == ev.Entity && ev.Labels["display"] != "" {
		// As the map names it, as a text line does: "the bgp@rrc01
		// feed", "MTN Uganda (AS20294)".
		return ev.Labels["display"]
	}
	if entity == ev.Entity && ev.Labels["name"] != "" {
		return ev.Labels["name"] + " (" + entity + ")"
	}
	return entity
}

// severityField says how bad the event is, with the impact it is judged
// from; on a resolve, the peak it reached.
func severityField(ev *Event) *slack.TextBlockObject {
	o := ev.Outage
	t := fmt.Sprintf("*Severity*\n%s (impact %.2f)", slackEscape(ev.Severity), o.Impact)
	if ev.Status == Resolved {
		t = fmt.Sprintf("*Peak severity*\n%s (peak impact %.2f)", slackEscape(ev.Severity), max(o.PeakImpact, o.Impact))
	}
	return slack.NewTextBlockObject(slack.MarkdownType, t, false, false)
}

// whenText writes a time in UTC and, for what is in a country, its local
// time.
func whenText(t *time.Time, country string) string {
	if t == nil {
		return "unknown"
	}
	return When(*t, country)
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func duration(ev *Event) string {
	if ev.End == nil {
		return "unknown"
	}
	return HumanDuration(ev.End.Sub(ev.Start))
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
func (s *Slack) Wants(ev *Event) bool { return ev.PagedAtLeast(s.cfg.MinSeverity) }
