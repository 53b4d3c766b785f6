package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/actions"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/service"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// actionsConfig writes the shipped actions configuration with the audit
// log in dir and extra keys appended.
func actionsConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(b), "audit: /var/lib/outagewatch/actions.jsonl", "audit: "+dir+"/actions.jsonl", 1)
	if strings.Contains(doc, "\nserve:") || strings.Contains(doc, "\nkafka:") {
		t.Fatal("the shipped configuration has a serve or kafka block: the test must merge it")
	}
	if strings.Contains(extra, "sinks:") {
		doc = strings.Replace(doc, "sinks: [{name: log, type: jsonl, path: \"-\"}]\n", "", 1)
	}
	p := filepath.Join(dir, "actions.yaml")
	if err := os.WriteFile(p, []byte(doc+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// startServe runs `actions serve` in this process until the test ends,
// and waits until it answers.
func startServe(t *testing.T, addr string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := actionsCmd()
	cmd.SetArgs(append([]string{"serve"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/api/v1/actions")
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if i > 1000 {
			t.Fatal("serve does not answer")
		}
	}
}

// The Telia incident replayed through the service's sinks, as `run` builds
// them from its configuration, to `actions serve` over real HTTP. The
// transit-packet-loss alert joins an outage event each time, so the plain
// webhook gets only the events; the sink with action_rules gets the alerts
// themselves, and actions serve, in dry-run, plans exactly the shutdowns of
// AS1299 at ams01, fra01 and lon01 on 2019-06-17 at 08:35 and 2019-06-20 at
// 12:15, with the restores of the first once its hold has passed. Each of
// those actions goes out, in turn, as an alert event of its own through
// the actions configuration's sink.
func TestTeliaActionsFedLive(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OW_TEST_ACTIONS_SECRET", "s3cret")
	addr := freeAddr(t)
	cfgPath := actionsConfig(t, dir, fmt.Sprintf(`serve:
  listen: %s
  secret_env: OW_TEST_ACTIONS_SECRET
  # The hold falls due on event time here (the next alert), not on the
  # wall clock, so the audit log below is the same on every run.
  restore_every: 24h
sinks:
  - {name: page, type: jsonl, path: %s/action-events.jsonl}
`, addr, dir))
	startServe(t, addr, "--config", cfgPath)

	var mu sync.Mutex
	var paged []string
	noc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev alerting.Event
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Error(err)
		}
		mu.Lock()
		paged = append(paged, ev.Kind+" "+ev.Rule+" "+ev.Status)
		mu.Unlock()
	}))
	defer noc.Close()
	disp := replayTeliaThroughService(t, dir, addr, "  - {name: noc, type: webhook, url: \""+noc.URL+"\"}\n", nil)
	mu.Lock()
	// Each outage event pages twice: its first page (which waits a bucket
	// for its place to fill in) and its resolve.
	if got := strings.Join(paged, ", "); got != "event outage firing, event outage resolved, event outage firing, event outage resolved" {
		t.Errorf("the plain webhook got: %s", got)
	}
	mu.Unlock()
	for _, st := range disp.Stats() {
		if want := map[string]uint64{"noc": 4, "actions": 4}[st.Sink]; st.Sent != want || st.Failures != 0 {
			t.Errorf("sink %s sent %d (%d failures), want %d", st.Sink, st.Sent, st.Failures, want)
		}
	}

	got := auditLines(t, addr)
	want := []string{
		"06-17T08:35 dry-run shutdown AS1299 ams01", "06-17T08:35 dry-run shutdown AS1299 fra01", "06-17T08:35 dry-run shutdown AS1299 lon01",
		"06-17T09:25 dry-run loss-resolved AS1299 ams01", "06-17T09:25 dry-run loss-resolved AS1299 fra01", "06-17T09:25 dry-run loss-resolved AS1299 lon01",
		"06-17T09:55 dry-run restore AS1299 ams01", "06-17T09:55 dry-run restore AS1299 fra01", "06-17T09:55 dry-run restore AS1299 lon01",
		"06-20T12:15 dry-run shutdown AS1299 ams01", "06-20T12:15 dry-run shutdown AS1299 fra01", "06-20T12:15 dry-run shutdown AS1299 lon01",
		"06-20T12:45 dry-run loss-resolved AS1299 ams01", "06-20T12:45 dry-run loss-resolved AS1299 fra01", "06-20T12:45 dry-run loss-resolved AS1299 lon01",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The action events, delivered by serve's outbox in the background.
	evs := actionEvents(t, filepath.Join(dir, "action-events.jsonl"), 9)
	var wantEvs []string
	for _, p := range []struct{ at, status string }{{"06-17T08:35", "firing"}, {"06-17T09:55", "resolved"}, {"06-20T12:15", "firing"}} {
		for _, site := range []string{"ams01", "fra01", "lon01"} {
			e := "transit:1299@" + site
			wantEvs = append(wantEvs, fmt.Sprintf("%s alert transit-shutdown %s %s %s", p.at, p.status, e, alerting.AlertID(actions.RuleShutdown, "packet_loss", e)))
		}
	}
	if strings.Join(evs, "\n") != strings.Join(wantEvs, "\n") {
		t.Fatalf("action events:\n%s\nwant:\n%s", strings.Join(evs, "\n"), strings.Join(wantEvs, "\n"))
	}
}

// The configuration file holds what the flags do, a flag overrides it, and
// enforce mode does not start without the webhook secret.
func TestActionsServeConfig(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cfgPath := actionsConfig(t, dir, "serve:\n  listen: 127.0.0.1:1\n  secret_env: OW_TEST_NO_SUCH_SECRET\n")
	// --listen wins over serve.listen (port 1 would not be allowed).
	startServe(t, addr, "--config", cfgPath, "--listen", addr)
	resp, err := http.Post("http://"+addr+"/api/v1/alerts/webhook", "application/json", strings.NewReader(`{"id":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(string(b), "no webhook secret configured") {
		t.Fatalf("dry-run without a secret: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || string(b) != "no webhook secret: every alert event posted is refused\n" {
		t.Fatalf("readyz without a secret: %d %q", resp.StatusCode, b)
	}

	enforce := actionsConfig(t, t.TempDir(), "serve:\n  secret_env: OW_TEST_NO_SUCH_SECRET\n")
	b, _ = os.ReadFile(enforce)
	os.WriteFile(enforce, bytes.Replace(b, []byte("mode: dry-run"), []byte("mode: enforce"), 1), 0o644)
	_, err = runActions(t, "", "serve", "--config", enforce)
	if err == nil || err.Error() != "actions serve: enforce mode needs the webhook secret: environment variable OW_TEST_NO_SUCH_SECRET (serve.secret_env) is empty" {
		t.Fatalf("enforce without a secret: %v", err)
	}
	bad := actionsConfig(t, t.TempDir(), "serve:\n  listne: 127.0.0.1:9320\n")
	if _, err = runActions(t, "", "serve", "--config", bad); err == nil || !strings.HasSuffix(err.Error(), `: unknown key "listne" in serve: did you mean "listen"?`) ||
		!strings.HasPrefix(err.Error(), bad+":") {
		t.Fatalf("bad config: %v", err)
	}
}

// The compose stack's service reads packet loss from the quality topic in
// a format `run` accepts, and feeds the actions service the transit alerts.
func TestComposeQualityInput(t *testing.T) {
	c, err := service.LoadConfig("../../deploy/compose.outagewatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var quality, feed []string
	for _, tp := range c.Kafka.Topics {
		if tp.Stream == "quality" {
			quality = append(quality, tp.Name+" "+tp.Format)
		}
	}
	for _, s := range c.Sinks {
		if len(s.ActionRules) > 0 {
			feed = append(feed, s.Name+" "+s.URL+" "+strings.Join(s.ActionRules, ","))
		}
	}
	if strings.Join(quality, ";") != "quality quality-json" || strings.Join(feed, ";") != "actions http://actions:9320/api/v1/alerts/webhook transit-packet-loss" {
		t.Fatalf("quality topics %q, action feeds %q", quality, feed)
	}
}

// replayTeliaThroughService replays the Telia fixture into the sinks `run`
// builds from a service configuration whose sink "actions" feeds the
// actions process at addr (plus extra sinks), and delivers everything,
// event by event; after, if set, is called once each is delivered.
func replayTeliaThroughService(t *testing.T, dir, addr, extra string, after func(*alerting.Event)) *alerting.Dispatcher {
	t.Helper()
	svc, err := service.ParseConfig(filepath.Join(dir, "outagewatch.yaml"), []byte(fmt.Sprintf(`kafka:
  brokers: [127.0.0.1:9]
  topics: [{name: quality, stream: quality, format: quality-json}]
data_dir: %s/svc
sinks:
%s  - name: actions
    type: webhook
    url: "http://%s/api/v1/alerts/webhook"
    secret_env: OW_TEST_ACTIONS_SECRET
    action_rules: [transit-packet-loss]
`, dir, extra, addr)))
	if err != nil {
		t.Fatal(err)
	}
	sinks, err := service.BuildSinks(svc)
	if err != nil {
		t.Fatal(err)
	}
	disp, err := alerting.NewDispatcher(alerting.DispatcherConfig{Dir: filepath.Join(dir, "svc", "outbox")}, sinks...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disp.Close() })
	var evs []*alerting.Event
	collect := func(ev *alerting.Event) { c := *ev; evs = append(evs, &c) }
	if _, err := runReplay([]string{"../../fixtures/telia-2019-06-20.yaml"}, replayOpts{events: collect}, collect); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := disp.Dispatch(ev); err != nil {
			t.Error(err)
		}
		if err := disp.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if after != nil {
			after(ev)
		}
	}
	return disp
}

// auditLines reads GET /api/v1/actions of the actions process at addr as
// "time mode op ASn site" lines.
func auditLines(t *testing.T, addr string) []string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/actions")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		if l == "" {
			continue
		}
		r, err := actions.ParseRecord([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %s AS%d %s", r.Time.Format("01-02T15:04"), r.Mode, r.Op, r.ASN, r.Site))
	}
	return got
}

// actionEvents waits until the JSON-lines sink at path holds n complete
// lines and returns them as "time kind rule status entity id".
func actionEvents(t *testing.T, path string, n int) []string {
	t.Helper()
	var lines []string
	for i := 0; len(lines) < n; i++ {
		b, _ := os.ReadFile(path)
		if i > 2000 {
			t.Fatalf("action events after waiting:\n%s", b)
		}
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(b) == 0 || !bytes.HasSuffix(b, []byte("\n")) {
			lines = nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	var evs []string
	for _, l := range lines {
		var ev alerting.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, fmt.Sprintf("%s %s %s %s %s %s", ev.At.Format("01-02T15:04"), ev.Kind, ev.Rule, ev.Status, ev.Entity, ev.ID))
	}
	return evs
}
