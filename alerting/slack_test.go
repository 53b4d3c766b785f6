package alerting

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slacktest"
)

// slackRecorder is bound into slacktest's server: slacktest has no
// chat.update handler, and its chat.postMessage neither records requests
// where a test can read them nor returns distinct ts values, so both are
// served here. failNext makes the next call to a method answer ok=false.
type slackRecorder struct {
	mu       sync.Mutex
	calls    []slackCall
	n        int
	failNext map[string]string
}

type slackCall struct {
	method string
	form   url.Values
	ts     string // ts returned by chat.postMessage
}

const slackChannelID = "C0ALERTS"

func (r *slackRecorder) bind(c slacktest.Customize) {
	c.Handle("/chat.postMessage", r.handler("chat.postMessage"))
	c.Handle("/chat.update", r.handler("chat.update"))
}

func (r *slackRecorder) handler(method string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if err := req.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if e := r.failNext[method]; e != "" {
			delete(r.failNext, method)
			fmt.Fprintf(w, `{"ok":false,"error":%q}`, e)
			return
		}
		call := slackCall{method: method, form: req.PostForm}
		var resp map[string]any
		switch method {
		case "chat.postMessage":
			r.n++
			call.ts = fmt.Sprintf("1745836500.%06d", r.n)
			// Slack answers with the channel ID whatever name was given.
			resp = map[string]any{"ok": true, "channel": slackChannelID, "ts": call.ts}
		case "chat.update":
			resp = map[string]any{"ok": true, "channel": req.PostForm.Get("channel"), "ts": req.PostForm.Get("ts"), "text": req.PostForm.Get("text")}
		}
		r.calls = append(r.calls, call)
		json.NewEncoder(w).Encode(resp)
	}
}

func (r *slackRecorder) Calls() []slackCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slackCall(nil), r.calls...)
}

func newSlackServer(t *testing.T) (*slacktest.Server, *slackRecorder) {
	rec := &slackRecorder{failNext: map[string]string{}}
	srv := slacktest.NewTestServer(rec.bind)
	srv.Start()
	t.Cleanup(srv.Stop)
	return srv, rec
}

func blockTexts(t *testing.T, raw string) []string {
	t.Helper()
	var bl slack.Blocks
	if err := json.Unmarshal([]byte(raw), &bl); err != nil {
		t.Fatalf("blocks %q: %v", raw, err)
	}
	var out []string
	for _, b := range bl.BlockSet {
		switch b := b.(type) {
		case *slack.SectionBlock:
			if b.Text != nil {
				out = append(out, b.Text.Text)
			}
			for _, f := range b.Fields {
				out = append(out, f.Text)
			}
		case *slack.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if tb, ok := e.(*slack.TextBlockObject); ok {
					out = append(out, tb.Text)
				}
			}
		}
	}
	return out
}

// Firing posts to the configured channel; after a restart (new sink and
// outbox on the same directory) the resolve updates that very message and
// replies in its thread.
func TestSlackResolveUpdatesOriginal(t *testing.T) {
	srv, rec := newSlackServer(t)
	dir := t.TempDir()
	clk := newFakeClock()
	open := func() *Dispatcher {
		s, err := NewSlack(SlackConfig{Token: "xoxb-test", Channel: "#outages", APIURL: srv.GetAPIURL(), StateDir: filepath.Join(dir, "slack")})
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewDispatcher(DispatcherConfig{Dir: dir, Outbox: clk.config()}, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	fire := testEvent(7)
	d := open()
	if err := d.Dispatch(fire); err != nil {
		t.Fatal(err)
	}
	if err := d.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.Close()

	calls := rec.Calls()
	if len(calls) != 1 || calls[0].method != "chat.postMessage" {
		t.Fatalf("calls after firing = %+v", calls)
	}
	post := calls[0]
	eq(t, "channel", post.form.Get("channel"), "#outages")
	eq(t, "text", post.form.Get("text"),
		":red_circle: FIRING [critical] asn:5007: traffic 40 kbit/s vs 1.5 Mbit/s expected, −97 % since 2025-04-28 10:35 UTC (11:35 Europe/Lisbon)")
	eq(t, "thread_ts", post.form.Get("thread_ts"), "")
	got := strings.Join(blockTexts(t, post.form.Get("blocks")), "|")
	want := ":red_circle: *FIRING* asn:5007: traffic 40 kbit/s vs 1.5 Mbit/s expected, −97 %\ntraffic &lt;fell&gt; &amp; stayed down" +
		"|*Baseline*\nthe same time in previous weeks|*Severity*\ncritical|*Started*\n2025-04-28 10:35 UTC (11:35 Europe/Lisbon)" +
		"|rule traffic-drop · detector traffic_drop · alert " + fire.ID
	eq(t, "blocks", got, want)

	d = open() // restart
	defer d.Close()
	res := resolvedOf(fire, t0.Add(95*time.Minute))
	if err := d.Dispatch(fire); err != nil { // re-emitted firing: deduped
		t.Fatal(err)
	}
	if err := d.Dispatch(res); err != nil {
		t.Fatal(err)
	}
	if err := d.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls = rec.Calls()[1:]
	if len(calls) != 2 {
		t.Fatalf("calls after resolve = %+v", calls)
	}
	up, reply := calls[0], calls[1]
	eq(t, "update method", up.method, "chat.update")
	eq(t, "update channel", up.form.Get("channel"), slackChannelID)
	eq(t, "update ts", up.form.Get("ts"), post.ts)
	eq(t, "update text", up.form.Get("text"),
		":white_check_mark: RESOLVED [critical] asn:5007: traffic now 1.5 Mbit/s vs 1.5 Mbit/s expected, −1.8 % since 2025-04-28 10:35 UTC (11:35 Europe/Lisbon)")
	if b := strings.Join(blockTexts(t, up.form.Get("blocks")), "|"); !strings.Contains(b, "*Ended*\n2025-04-28 12:10 UTC (13:10 Europe/Lisbon), after 1 h 35 min") {
		t.Errorf("update blocks lack the end: %s", b)
	}
	eq(t, "reply method", reply.method, "chat.postMessage")
	eq(t, "reply channel", reply.form.Get("channel"), slackChannelID)
	eq(t, "reply thread_ts", reply.form.Get("thread_ts"), post.ts)
	eq(t, "reply text", reply.form.Get("text"), "Resolved: asn:5007 is back; it lasted 1 h 35 min (until 2025-04-28 12:10 UTC, 13:10 Europe/Lisbon).")
	st := d.Stats()[0]
	eq(t, "deduped", st.Deduped, 1)
	eq(t, "sent", st.Sent, 1)
}

// A feed gone silent reads "no data", not "records 0 vs 0 expected",
// with its summary below, and is named as the map names it.
func TestSlackSilentFeed(t *testing.T) {
	ev := &Event{Kind: KindAlert, Status: Firing, Severity: "warning", Detector: "feed_health", Signal: "records",
		Entity: "feed:ioda-telescope", Labels: map[string]string{"display": "the ioda-telescope feed"}, ChangePct: -100,
		Start: t0, At: t0.Add(25 * time.Minute), Rule: "feed-health",
		Summary: "no data from the ioda-telescope feed for 5 buckets (it reports every 1): its series read as no data, not as zero"}
	text, blocks := (&Slack{}).message(ev)
	eq(t, "text", text, ":large_orange_circle: FIRING [warning] the ioda-telescope feed: no data since 2025-04-28 10:35 UTC")
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(blockTexts(t, string(raw)), "|"); !strings.HasPrefix(got, ":large_orange_circle: *FIRING* the ioda-telescope feed: no data\nno data from the ioda-telescope feed for 5 buckets") {
		t.Errorf("blocks %s", got)
	}
	ev.Status = Resolved
	text, _ = (&Slack{}).message(ev)
	eq(t, "resolved text", text, ":white_check_mark: RESOLVED [warning] the ioda-telescope feed: data again since 2025-04-28 10:35 UTC")
}

// A resolve that fails half-way is retried without redoing the half that
// worked: one update, one reply.
func TestSlackResolveRetryIsIdempotent(t *testing.T) {
	srv, rec := newSlackServer(t)
	s, err := NewSlack(SlackConfig{Channel: "C1", APIURL: srv.GetAPIURL(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fire := testEvent(1)
	if err := s.Send(ctx, fire); err != nil {
		t.Fatal(err)
	}
	res := resolvedOf(fire, t0.Add(time.Hour))
	rec.mu.Lock()
	rec.failNext["chat.postMessage"] = "internal_error"
	rec.mu.Unlock()
	if err := s.Send(ctx, res); err == nil || !strings.Contains(err.Error(), "internal_error") {
		t.Fatalf("first resolve err = %v", err)
	}
	if err := s.Send(ctx, res); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx, res); err != nil { // delivered twice: no-op
		t.Fatal(err)
	}
	var methods []string
	for _, c := range rec.Calls() {
		methods = append(methods, c.method)
	}
	eq(t, "calls", strings.Join(methods, ","), "chat.postMessage,chat.update,chat.postMessage")

	// A firing resent after a crash (same incident) refreshes, not reposts.
	fire2 := testEvent(2)
	s.Send(ctx, fire2)
	s.Send(ctx, fire2)
	calls := rec.Calls()
	eq(t, "refresh method", calls[len(calls)-1].method, "chat.update")
	eq(t, "refresh ts", calls[len(calls)-1].form.Get("ts"), calls[len(calls)-2].ts)

	// A resolve for a message never seen is posted on its own.
	lone := resolvedOf(testEvent(3), t0.Add(time.Hour))
	if err := s.Send(ctx, lone); err != nil {
		t.Fatal(err)
	}
	calls = rec.Calls()
	last := calls[len(calls)-1]
	eq(t, "lone method", last.method, "chat.postMessage")
	eq(t, "lone thread", last.form.Get("thread_ts"), "")
	if !strings.HasPrefix(last.form.Get("text"), ":white_check_mark: RESOLVED") {
		t.Errorf("lone text %q", last.form.Get("text"))
	}
}

func TestSlackConfigErrors(t *testing.T) {
	if _, err := NewSlack(SlackConfig{StateDir: t.TempDir()}); err == nil {
		t.Error("no channel accepted")
	}
	if _, err := NewSlack(SlackConfig{Channel: "C"}); err == nil {
		t.Error("no state dir accepted")
	}
	dir := t.TempDir()
	s, _ := NewSlack(SlackConfig{Channel: "C", StateDir: dir})
	os.WriteFile(s.path, []byte("{"), 0o644)
	if _, err := NewSlack(SlackConfig{Channel: "C", StateDir: dir}); err == nil {
		t.Error("corrupt state accepted")
	}
	bad := *testEvent(1)
	bad.Status = "pending"
	if err := s.Send(context.Background(), &bad); err == nil {
		t.Error("unknown status accepted")
	}
}
