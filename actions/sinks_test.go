package actions

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outagewatch/outagewatch/alerting"
)

// Every action goes out as an alert event through the configured sinks (a
// JSON-lines file and a signed webhook):
// a shutdown fires and its restore resolves the same ID, a refusal is an
// alert of its own, an override fires until auto resolves it, and an
// override set by another process (an operator's shell) pages too, read
// from the audit log.
func TestActionEventsReachTheSinks(t *testing.T) {
	b, err := os.ReadFile("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A paging webhook beside the file: it verifies the signature, as a
	// receiver should, and keeps the rule and status of what it gets.
	var mu sync.Mutex
	var paged []string
	noc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := alerting.Verify("noc-secret", body, r.Header.Get(alerting.HeaderSignature), r.Header.Get(alerting.HeaderTimestamp), time.Now(), time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var ev alerting.Event
		_ = json.Unmarshal(body, &ev)
		mu.Lock()
		paged = append(paged, ev.Rule+" "+ev.Status)
		mu.Unlock()
	}))
	defer noc.Close()
	t.Setenv("OW_TEST_NOC_SECRET", "noc-secret")
	doc := strings.Replace(string(b), "audit: /var/lib/outagewatch/actions.jsonl", "audit: "+dir+"/audit.jsonl", 1)
	doc = strings.Replace(doc, `sinks: [{name: log, type: jsonl, path: "-"}]`, "sinks:\n  - {name: events, type: jsonl, path: "+dir+"/events.jsonl}\n"+
		"  - {name: noc, type: webhook, url: \""+noc.URL+"\", secret_env: OW_TEST_NOC_SECRET}", 1)
	cfg, err := ParseConfig(filepath.Join(dir, "actions.yaml"), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Outbox != dir+"/actions-outbox" {
		t.Fatalf("outbox %s", cfg.Outbox)
	}
	pager, err := NewPager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pager.Close()
	audit, err := OpenAudit(cfg.Audit)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTransits(cfg, nil, audit, pager.Emit)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2019, 6, 20, 13, 0, 0, 0, time.UTC)
	tr.Now = func() time.Time { return clock }
	ctx := context.Background()
	at := time.Date(2019, 6, 20, 12, 15, 0, 0, time.UTC)
	for _, ev := range []*alerting.Event{
		{ID: "telia", Status: alerting.Firing, Rule: "transit-packet-loss", Detector: "packet_loss", Entity: "transit:1299@ams01", At: at, Summary: "loss via Telia"},
		{ID: "level3", Status: alerting.Firing, Rule: "transit-packet-loss", Detector: "packet_loss", Entity: "transit:3356@ams01", At: at.Add(5 * time.Minute), Summary: "loss via Level 3"},
	} {
		if err := tr.Send(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tr.Override(ctx, "ams01", 1299, "up", "alice"); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	if _, err := tr.Override(ctx, "ams01", 1299, "auto", "alice"); err != nil {
		t.Fatal(err)
	}
	// Another process (`outagewatch actions override` in a shell) on the
	// same audit log; this one pages it on its next look at the log.
	other, err := OpenAudit(cfg.Audit)
	if err != nil {
		t.Fatal(err)
	}
	shell, err := NewTransits(cfg, nil, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	shell.Now = func() time.Time { return clock.Add(time.Minute) }
	if _, err := shell.Override(ctx, "fra01", 3356, "down", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := tr.Advance(ctx, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := pager.Dispatcher().Drain(ctx); err != nil {
		t.Fatal(err)
	}

	out, err := os.ReadFile(dir + "/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := tr.Records()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var ev alerting.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		end := "-"
		if ev.End != nil {
			end = ev.End.Format("15:04")
		}
		got = append(got, strings.Join([]string{ev.ID, ev.Kind, ev.Status, ev.Rule, ev.Entity, ev.Start.Format("15:04"), ev.At.Format("15:04"), end, ev.Details["action"].(string), ev.Summary}, " | "))
	}
	shut := alerting.AlertID(RuleShutdown, "packet_loss", "transit:1299@ams01")
	keep := alerting.AlertID(RuleOverride, "packet_loss", "transit:1299@ams01")
	want := []string{
		shut + " | alert | firing | transit-shutdown | transit:1299@ams01 | 12:15 | 12:15 | - | " + recs[0].ID + " | dry-run: would have shut AS1299 Telia at ams01 (2 sessions): loss via Telia",
		alerting.AlertID(RuleRefused, "packet_loss", "transit:3356@ams01/"+recs[1].ID) + " | alert | firing | transit-shutdown-refused | transit:3356@ams01 | 12:20 | 12:20 | - | " + recs[1].ID +
			" | dry-run: would have refused to shut AS3356 Level 3 at ams01 (1 session): AS3356 is the last transit up at ams01",
		shut + " | alert | resolved | transit-shutdown | transit:1299@ams01 | 12:15 | 13:00 | 13:00 | " + recs[2].ID + " | dry-run: would have restored AS1299 Telia at ams01 (2 sessions): override: keep up",
		keep + " | alert | firing | transit-override | transit:1299@ams01 | 13:00 | 13:00 | - | " + recs[3].ID + " | override by alice: AS1299 Telia at ams01 kept up",
		keep + " | alert | resolved | transit-override | transit:1299@ams01 | 13:00 | 14:00 | 14:00 | " + recs[4].ID + " | override by alice cleared: AS1299 Telia at ams01 back to automatic actions",
		alerting.AlertID(RuleOverride, "packet_loss", "transit:3356@fra01") + " | alert | firing | transit-override | transit:3356@fra01 | 14:01 | 14:01 | - | " + recs[5].ID + " | override by bob: AS3356 Level 3 at fra01 kept down",
	}
	if len(recs) != 6 {
		t.Fatalf("%d records", len(recs))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mu.Lock()
	if got := strings.Join(paged, ", "); got != "transit-shutdown firing, transit-shutdown-refused firing, transit-shutdown resolved, transit-override firing, transit-override resolved, transit-override firing" {
		t.Errorf("the webhook was paged with: %s", got)
	}
	mu.Unlock()
	reg := prometheus.NewRegistry()
	pager.Register(reg)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`# HELP outagewatch_actions_events_sent_total Action events delivered, by sink.
# TYPE outagewatch_actions_events_sent_total counter
outagewatch_actions_events_sent_total{sink="events"} 6
outagewatch_actions_events_sent_total{sink="noc"} 6
# HELP outagewatch_actions_event_queue_depth Action events waiting for delivery, by sink.
# TYPE outagewatch_actions_event_queue_depth gauge
outagewatch_actions_event_queue_depth{sink="events"} 0
outagewatch_actions_event_queue_depth{sink="noc"} 0
`), "outagewatch_actions_events_sent_total", "outagewatch_actions_event_queue_depth"); err != nil {
		t.Error(err)
	}
}
