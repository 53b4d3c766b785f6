package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outagewatch/outagewatch/alerting"
)

func runActions(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := actionsCmd()
	c.SetArgs(args)
	c.SetIn(strings.NewReader(stdin))
	c.SetOut(&out)
	c.SetErr(&errOut)
	err := c.Execute()
	return out.String(), err
}

// The shipped scenario plays through `actions plan` and matches every
// tick's expectations; a changed expectation exits 2 naming file:line.
func TestActionsPlan(t *testing.T) {
	out, err := runActions(t, "", "plan", "../../trafficmanager/testdata/sections-and-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "tick 3: EWR lost, ORD would be flooded\n  move Pro IAD/s1→ATL 50%→100%\n  move Free ORD→ATL 0%→70%\n  revert Pro IAD/s1→EWR 50%→0%\n  withdraw EWR\n") {
		t.Fatalf("plan output:\n%s", out)
	}
	b, err := os.ReadFile("../../trafficmanager/testdata/sections-and-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(f, bytes.Replace(b, []byte("Free 70% ORD→ATL 140"), []byte("Free 60% ORD→ATL 120"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runActions(t, "", "plan", f)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "tick 3 (EWR lost, ORD would be flooded)") {
		t.Fatalf("err %v", err)
	}
}

// Alert events in, dry-run actions out; a line that is not an event is
// skipped and the rest still acts.
func TestActionsReplayDryRun(t *testing.T) {
	alerts := `{"id":"d07c","status":"firing","rule":"transit-packet-loss","detector":"packet_loss","signal":"packet_loss","entity":"transit:1299","at":"2019-06-20T12:15:00Z","start":"2019-06-20T12:10:00Z","summary":"loss","details":{"sites":["fra01","nowhere"]}}
not json
{"id":"d07c","status":"resolved","rule":"transit-packet-loss","detector":"packet_loss","signal":"packet_loss","entity":"transit:1299","at":"2019-06-20T12:45:00Z","start":"2019-06-20T12:10:00Z"}
`
	out, err := runActions(t, alerts, "replay", "--text", "--config", "../../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "2019-06-20T12:15:00Z  firing    dry-run: would have shut AS1299 Telia at fra01 (1 session): loss") ||
		!strings.HasPrefix(lines[1], "2019-06-20T13:15:00Z  resolved  dry-run: would have restored AS1299 Telia at fra01") {
		t.Fatalf("output:\n%s", out)
	}
	// With an audit log: list shows the shutdown with its undo, and undo of
	// a dry-run shutdown records the restore without a speaker call.
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	if _, err := runActions(t, alerts[:strings.Index(alerts, "\n")+1], "replay", "--config", "../../deploy/actions.yaml", "--audit", audit); err != nil {
		t.Fatal(err)
	}
	out, err = runActions(t, "", "list", "--config", "../../deploy/actions.yaml", "--audit", audit)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 2 || !strings.Contains(rows[1], "shutdown  dry-run  fra01") || !strings.Contains(rows[1], "outagewatch actions undo ") {
		t.Fatalf("list:\n%s", out)
	}
	id := strings.Fields(rows[1])[0]
	out, err = runActions(t, "", "undo", id, "--who", "alice", "--config", "../../deploy/actions.yaml", "--audit", audit)
	if err != nil || !strings.Contains(out, "alice") || !strings.Contains(out, "restore") {
		t.Fatalf("undo: %v\n%s", err, out)
	}
	if _, err := runActions(t, "", "undo", id, "--config", "../../deploy/actions.yaml", "--audit", audit); err == nil || !strings.Contains(err.Error(), "already restored") {
		t.Fatalf("second undo: %v", err)
	}
	// Restored, the shutdown offers no undo any more, in text or JSON.
	out, err = runActions(t, "", "list", "--config", "../../deploy/actions.yaml", "--audit", audit)
	if err != nil || strings.Contains(out, "outagewatch actions undo") {
		t.Fatalf("list after the undo (%v):\n%s", err, out)
	}
	out, err = runActions(t, "", "list", "--json", "--config", "../../deploy/actions.yaml", "--audit", audit)
	if err != nil || strings.Contains(out, "actions undo") || strings.Count(out, "\n") != 2 {
		t.Fatalf("list --json after the undo (%v):\n%s", err, out)
	}
}

// check refuses an enforce configuration with a site it could not act on,
// or that serve would refuse to start.
func TestActionsCheckEnforceNeedsGoBGP(t *testing.T) {
	f := filepath.Join(t.TempDir(), "a.yaml")
	doc := "mode: enforce\nsites:\n  ams01:\n    transits:\n      - {asn: 1299, name: Telia, sessions: [192.0.2.11]}\n"
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runActions(t, "", "check", f)
	if err == nil || err.Error() != f+`:3: site "ams01": enforce mode shuts sessions through gobgpd: give the site (or the file) a gobgp: address` {
		t.Fatalf("check: %v", err)
	}
	if err := os.WriteFile(f, []byte("gobgp: 127.0.0.1:50051\n"+doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// As serve would, check refuses enforce without the webhook secret.
	t.Setenv("OUTAGEWATCH_WEBHOOK_SECRET", "")
	if _, err := runActions(t, "", "check", f); err == nil || !strings.Contains(err.Error(), "enforce mode needs the webhook secret: environment variable OUTAGEWATCH_WEBHOOK_SECRET") {
		t.Fatalf("check without a secret: %v", err)
	}
	t.Setenv("OUTAGEWATCH_WEBHOOK_SECRET", "s")
	if out, err := runActions(t, "", "check", f); err != nil || out != f+": ok, mode enforce, 1 sites, 1 transits\n" {
		t.Fatalf("check with gobgp: %v %s", err, out)
	}
	// And the files serve would load: a rules file that is not there.
	if err := os.WriteFile(f, []byte("gobgp: 127.0.0.1:50051\nrules_file: nope.yaml\n"+doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runActions(t, "", "check", f); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("check with a missing rules file: %v", err)
	}
}

// Recorded load reports through the Traffic Manager: dry-run prints, and
// enforce posts each plan change, signed, to the webhook.
func TestActionsTM(t *testing.T) {
	reports := "../../trafficmanager/testdata/sections-and-loss.dcload.jsonl"
	topo := "../../trafficmanager/testdata/sections-and-loss.yaml"
	out, err := runActions(t, "", "tm", "--topology", topo, reports)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "2025-04-28T10:20:00Z plan 3 (dry-run)\n  move Pro IAD/s1→ATL 50%→100%\n  move Free ORD→ATL 0%→70%\n  revert Pro IAD/s1→EWR 50%→0%\n  withdraw EWR\n") {
		t.Fatalf("output:\n%s", out)
	}
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if alerting.Verify("k", b, r.Header.Get(alerting.HeaderSignature), r.Header.Get(alerting.HeaderTimestamp), time.Now(), time.Minute) != nil {
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	t.Setenv("TM_SECRET", "k")
	// A malformed line is reported and skipped; the rest still plans.
	b, err := os.ReadFile(reports)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(f, append([]byte("{\"time\": \"yesterday\"}\n"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runActions(t, "", "tm", "--topology", topo, "--mode", "enforce", "--webhook", srv.URL, "--webhook-secret-env", "TM_SECRET", f); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 6 || !strings.Contains(bodies[2], `"op":"withdraw","location":"EWR"`) || !strings.Contains(bodies[2], `"seq":3`) {
		t.Fatalf("%d bodies: %v", len(bodies), bodies)
	}
}

// --rules: the rule's actions setting caps the mode; the shipped
// transit-packet-loss rule says dry-run, and a copy that says off acts not
// at all.
func TestActionsReplayRules(t *testing.T) {
	alert := `{"id":"d07c","status":"firing","rule":"transit-packet-loss","detector":"packet_loss","signal":"packet_loss","entity":"transit:1299@ams01","at":"2019-06-20T12:15:00Z","start":"2019-06-20T12:10:00Z","summary":"loss"}` + "\n"
	out, err := runActions(t, alert, "replay", "--text", "--config", "../../deploy/actions.yaml", "--rules", "../../rules/default")
	if err != nil || !strings.Contains(out, "dry-run: would have shut AS1299 Telia at ams01") {
		t.Fatalf("shipped rules: %v %q", err, out)
	}
	b, err := os.ReadFile("../../rules/default/40-quality.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "40-quality.yaml")
	b = bytes.Replace(b, []byte("    actions: dry-run\n"), []byte("    actions: \"off\"\n"), 1)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runActions(t, alert, "replay", "--text", "--config", "../../deploy/actions.yaml", "--rules", f)
	if err != nil || out != "" {
		t.Fatalf("rules with actions off: %v %q", err, out)
	}
}

// actions serve with --tm-topic plans live from Kafka (kfake): /metrics
// counts the changes and the capacity endpoint answers from the latest
// window.
func TestActionsServeTrafficManager(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "dcload"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := os.ReadFile("../../trafficmanager/testdata/sections-and-loss.dcload.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []kafka.Message
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		msgs = append(msgs, kafka.Message{Value: []byte(l)})
	}
	w := &kafka.Writer{Addr: kafka.TCP(c.ListenAddrs()...), Topic: "dcload", BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := actionsCmd()
	cmd.SetArgs([]string{"serve", "--config", "../../deploy/actions.yaml", "--listen", addr, "--audit", filepath.Join(t.TempDir(), "a.jsonl"),
		"--topology", "../../trafficmanager/testdata/sections-and-loss.yaml", "--tm-topic", "dcload",
		"--brokers", strings.Join(c.ListenAddrs(), ",")})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// Six windows close (the seventh stays open): the last plan closed is
	// tick 5's, with Free and Business half of s1's still in s2 and s3.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(get("/metrics"), `outagewatch_tm_changes_total{op="revert"} 5`) {
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics:\n%s", get("/metrics"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	m := get("/metrics")
	for _, want := range []string{`outagewatch_tm_changes_total{op="move"} 7`, `outagewatch_tm_changes_total{op="withdraw"} 1`,
		`outagewatch_tm_changes_total{op="announce"} 1`, `outagewatch_tm_max_threshold{source="static",unit="IAD/s1"} 0.9`,
		`outagewatch_build_info{goversion="` + runtime.Version() + `"`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// IAD/s1 still has load away, so IAD offers nothing (it takes its own
	// back first); EWR, 5 ms away, has 100.
	if got := get("/api/v1/capacity?dc=IAD&need=100"); got != `{"dc":"IAD","need_ms":100,"ok":false,"room_ms":0,"nearest":[{"dc":"EWR","latency_ms":5,"room_ms":100}]}`+"\n" {
		t.Errorf("capacity: %s", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAnycastFlags(t *testing.T) {
	a, closeAny, err := anycastFromFlags([]string{"EWR=198.51.100.0/24,2001:db8:100::/48@192.0.2.1"}, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer closeAny()
	if s := a.Sites["EWR"]; len(s.Prefixes) != 2 || s.Prefixes[1].String() != "2001:db8:100::/48" || s.NextHop.String() != "192.0.2.1" {
		t.Fatalf("%+v", a.Sites)
	}
	for _, bad := range []string{"EWR", "EWR=198.51.100.0/24", "=1.2.3.0/24@1.2.3.4", "EWR=198.51.100.0/33@192.0.2.1"} {
		if _, _, err := anycastFromFlags([]string{bad}, "127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "--tm-anycast") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
