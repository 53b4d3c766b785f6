package correlate_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slacktest"

	"github.com/outagewatch/outagewatch/alerting"
)

// slackCalls records what slacktest's server was asked. slacktest has no
// chat.update or file-upload handlers and returns one ts for every post, so
// those are served here, bound into its server.
type slackCalls struct {
	mu    sync.Mutex
	calls []slackCall
	posts int
	srv   *slacktest.Server
}

type slackCall struct {
	method string
	form   url.Values
	ts     string
	size   int // bytes of an uploaded file
	png    bool
}

func (r *slackCalls) bind(c slacktest.Customize) {
	for _, m := range []string{"chat.postMessage", "chat.update", "files.getUploadURLExternal", "files.completeUploadExternal"} {
		c.Handle("/"+m, r.handler(m))
	}
	c.Handle("/upload/", func(w http.ResponseWriter, req *http.Request) {
		f, _, err := req.FormFile("file")
		var b []byte
		if err == nil {
			b, _ = io.ReadAll(f)
		}
		r.mu.Lock()
		r.calls = append(r.calls, slackCall{method: "upload", size: len(b), png: strings.HasPrefix(string(b), "\x89PNG\r\n")})
		r.mu.Unlock()
	})
}

func (r *slackCalls) handler(method string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		req.ParseForm()
		r.mu.Lock()
		defer r.mu.Unlock()
		call := slackCall{method: method, form: req.PostForm}
		resp := map[string]any{"ok": true}
		switch method {
		case "chat.postMessage":
			r.posts++
			call.ts = fmt.Sprintf("1680568500.%06d", r.posts)
			resp["channel"], resp["ts"] = "C0OUTAGES", call.ts
		case "chat.update":
			resp["channel"], resp["ts"] = req.PostForm.Get("channel"), req.PostForm.Get("ts")
		case "files.getUploadURLExternal":
			id := fmt.Sprintf("F%d", len(r.calls))
			resp["upload_url"], resp["file_id"] = "http://"+r.srv.ServerAddr+"/upload/"+id, id
		case "files.completeUploadExternal":
			var files []map[string]any
			json.Unmarshal([]byte(req.PostForm.Get("files")), &files)
			resp["files"] = files
		}
		r.calls = append(r.calls, call)
		json.NewEncoder(w).Encode(resp)
	}
}

// Slack gets one message per outage event, updated in place as it grows
// and when it resolves, with the chart in its thread; member alerts post
// nothing of their own.
func TestSlackOneMessagePerEvent(t *testing.T) {
	rec := &slackCalls{}
	srv := slacktest.NewTestServer(rec.bind)
	rec.srv = srv
	srv.Start()
	defer srv.Stop()
	sl, err := alerting.NewSlack(alerting.SlackConfig{Token: "xoxb-test", Channel: "#outages", APIURL: srv.GetAPIURL(),
		StateDir: filepath.Join(t.TempDir(), "slack"), EventURL: "https://outagewatch.example/incident/"})
	if err != nil {
		t.Fatal(err)
	}
	r := replayWith(t, "virginmedia-2023-04-04", []alerting.Sink{sl})
	var seq []string
	top := map[string]string{} // message ts → first text
	for _, c := range rec.calls {
		switch {
		case c.method == "chat.postMessage" && c.form.Get("thread_ts") == "":
			seq = append(seq, "post")
			top[c.ts] = c.form.Get("text")
		case c.method == "chat.postMessage":
			if _, ok := top[c.form.Get("thread_ts")]; !ok {
				t.Errorf("reply to an unknown message %s", c.form.Get("thread_ts"))
			}
			seq = append(seq, "reply")
		case c.method == "chat.update":
			if _, ok := top[c.form.Get("ts")]; !ok {
				t.Errorf("update of an unknown message %s", c.form.Get("ts"))
			}
			seq = append(seq, "update")
		case c.method == "upload":
			if !c.png || c.size < 500 {
				t.Errorf("uploaded %d bytes, png %v", c.size, c.png)
			}
			seq = append(seq, "chart")
		case c.method == "files.completeUploadExternal":
			if _, ok := top[c.form.Get("thread_ts")]; !ok || c.form.Get("channel_id") != "C0OUTAGES" {
				t.Errorf("chart shared to %s thread %s", c.form.Get("channel_id"), c.form.Get("thread_ts"))
			}
		}
	}
	// Per outage: open posts and puts the chart in the thread; the
	// growth to critical and the resolve update the message; the resolve
	// also replies in the thread.
	want := "post chart update update reply post chart update update reply"
	if got := strings.Join(seq, " "); got != want {
		t.Errorf("slack calls:\n got %s\nwant %s", got, want)
	}
	if len(top) != 2 || len(r.events) != 6 {
		t.Fatalf("%d messages for %d event notifications", len(top), len(r.events))
	}
	var last slackCall
	for _, c := range rec.calls {
		if c.method == "chat.update" {
			last = c
		}
	}
	checkDocSlack(t, []byte(last.form.Get("blocks")))
	text := last.form.Get("text")
	if !strings.HasPrefix(text, ":white_check_mark: RESOLVED [critical] Outage of Virgin Media (AS5089) in United Kingdom: traffic 66 Mbit/s vs 2.1 Gbit/s expected, −97 %") {
		t.Errorf("resolved text %q", text)
	}
	var bl slack.Blocks
	if err := json.Unmarshal([]byte(last.form.Get("blocks")), &bl); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(bl)
	t.Logf("resolved message: %s", raw)
	for _, want := range []string{"Scope*\\nUnited Kingdom, Virgin Media (AS5089) (30 %), virginmedia.com", "DNS failures* of virginmedia.com: 96.2 % vs 0 % expected",
		"Likely cause*: routes withdrawn by Virgin Media (AS5089) from 15:00 UTC, as traffic fell; DNS failures for virginmedia.com",
		"Started*\\n2023-04-04 15:00 UTC", "after 2 h 55 min", "the same time on similar days", "https://outagewatch.example/incident/" + r.events[3].ID + "|open the event"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("resolved message lacks %q:\n%s", want, raw)
		}
	}
}
