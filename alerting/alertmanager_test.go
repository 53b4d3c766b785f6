package alerting

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// alertmanagerVersion is the Alertmanager the sink is tested against.
const alertmanagerVersion = "v0.35.0"

// alertmanagerBinary builds Alertmanager from its Go module, once per
// machine (the binary is kept in the user cache directory), without the
// network: the module must be in the module cache. Its web UI assets are
// generated in Alertmanager's own release process and are not in the
// module, so the build gets a one-page stand-in for them; the API does not
// use them.
// unavailable skips the test where no Alertmanager can be had, and fails
// it in CI, whose script fetches the module: there a skip would hide a
// missing install step.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

func alertmanagerBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts a real Alertmanager")
	}
	if p := os.Getenv("OUTAGEWATCH_ALERTMANAGER"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "outagewatch", "alertmanager-"+alertmanagerVersion)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/prometheus/alertmanager@"+alertmanagerVersion)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		unavailable(t, "Alertmanager %s is not in the module cache (fetch it once with `go mod download github.com/prometheus/alertmanager@%s`): %v",
			alertmanagerVersion, alertmanagerVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		unavailable(t, "go mod download: %s", out)
	}
	src := filepath.Join(t.TempDir(), "alertmanager")
	if err := os.CopyFS(src, os.DirFS(mod.Dir)); err != nil {
		t.Fatal(err)
	}
	dist := filepath.Join(src, "ui", "app", "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dist, "index.html"), []byte("<!doctype html><title>Alertmanager</title>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + ".tmp"
	build := exec.Command("go", "build", "-o", tmp, "./cmd/alertmanager")
	build.Dir, build.Env = src, env
	if out, err := build.CombinedOutput(); err != nil {
		unavailable(t, "Alertmanager %s does not build here (dependencies not in the module cache?): %v\n%s", alertmanagerVersion, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// amNotification is what Alertmanager's webhook receiver posts.
type amNotification struct {
	Status string `json:"status"`
	Alerts []struct {
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
	} `json:"alerts"`
}

// startAlertmanager runs Alertmanager on a free loopback port with one
// webhook receiver (sending resolves), and returns its URL and what the
// receiver got.
func startAlertmanager(t *testing.T) (string, func() []amNotification) {
	bin := alertmanagerBinary(t)
	var mu sync.Mutex
	var got []amNotification
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n amNotification
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &n); err != nil {
			t.Errorf("receiver: %v: %s", err, b)
		}
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	dir := t.TempDir()
	conf := fmt.Sprintf(`route:
  receiver: hook
  group_by: [id]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: %s/hook
        send_resolved: true
`, recv.URL)
	if err := os.WriteFile(filepath.Join(dir, "am.yml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "am.yml"), "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=")
	logf, _ := os.Create(filepath.Join(dir, "alertmanager.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "alertmanager.log"))
			t.Logf("alertmanager log:\n%s", b)
		}
	})
	base := "http://" + addr
	waitFor(t, "alertmanager ready", func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base, func() []amNotification {
		mu.Lock()
		defer mu.Unlock()
		return append([]amNotification(nil), got...)
	}
}

// waitFor polls cond until it holds; the deadline only bounds a hung
// process, no assertion depends on timing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type amGettable struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	Status      struct {
		State string `json:"state"`
	} `json:"status"`
}

func amAlerts(t *testing.T, base, id string) []amGettable {
	t.Helper()
	resp, err := http.Get(base + "/api/v2/alerts?filter=" + url.QueryEscape(`id="`+id+`"`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []amGettable
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAlertmanagerFiringEscalatedResolved(t *testing.T) {
	base, notifications := startAlertmanager(t)
	sink, err := NewAlertmanager(AlertmanagerConfig{URL: base, GeneratorURL: "http://outagewatch.example/events/"})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	start := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	ev := &Event{ID: "572ab3495d561011", Kind: KindEvent, Status: Firing, Rule: "outage", Detector: "correlation",
		Signal: "traffic_bytes", Entity: "asn:5089", Labels: map[string]string{"country": "GB", "place": "country:GB"},
		Start: start, At: start.Add(10 * time.Minute), Severity: "warning", Summary: "Outage in United Kingdom",
		Outage: &Outage{Scope: Scope{Place: "country:GB", Name: "United Kingdom"}, Cause: "routes withdrawn",
			Confidence: 0.85, Members: []string{"a1", "a2"}, Revision: 1, Update: "open"}}
	if err := sink.Send(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	var got []amGettable
	waitFor(t, "the firing event in Alertmanager", func() bool { got = amAlerts(t, base, ev.ID); return len(got) == 1 })
	a := got[0]
	want := map[string]string{"alertname": "OutageEvent", "kind": "event", "id": ev.ID, "severity": "warning",
		"detector": "correlation", "place": "country:GB", "country": "GB"}
	if fmt.Sprint(a.Labels) != fmt.Sprint(want) {
		t.Errorf("labels %v\nwant   %v", a.Labels, want)
	}
	if a.Annotations["cause"] != "routes withdrawn" || a.Annotations["members"] != "a1,a2" || !a.StartsAt.Equal(start) {
		t.Errorf("annotations %v startsAt %s", a.Annotations, a.StartsAt)
	}

	// It escalates: Alertmanager keeps one alert, the critical one.
	ev.Severity, ev.Revision, ev.Update = "critical", 2, "grow"
	if err := sink.Send(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "only the escalated alert", func() bool {
		got = amAlerts(t, base, ev.ID)
		return len(got) == 1 && got[0].Labels["severity"] == "critical"
	})

	// A repeat (the outbox retrying after a crash) changes nothing.
	if err := sink.Send(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if got = amAlerts(t, base, ev.ID); len(got) != 1 {
		t.Fatalf("after a repeat: %d alerts", len(got))
	}

	end := time.Now().UTC().Truncate(time.Second)
	ev.Status, ev.End, ev.Revision, ev.Update = Resolved, &end, 3, "resolve"
	if err := sink.Send(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the event gone from the active alerts", func() bool { return len(amAlerts(t, base, ev.ID)) == 0 })
	waitFor(t, "Alertmanager's resolved notification", func() bool {
		for _, n := range notifications() {
			for _, a := range n.Alerts {
				if a.Labels["id"] == ev.ID && a.Labels["severity"] == "critical" && a.Status == Resolved {
					return true
				}
			}
		}
		return false
	})
	for _, n := range notifications() {
		for _, a := range n.Alerts {
			if a.Labels["id"] != ev.ID || !strings.Contains("warning critical", a.Labels["severity"]) {
				t.Errorf("unexpected notification %+v", a)
			}
		}
	}
}

// Firing notifications are re-posted with a fresh endsAt until resolved, so
// Alertmanager never times them out; resolved ones are not re-posted.
func TestAlertmanagerRefresh(t *testing.T) {
	var mu sync.Mutex
	var posts [][]amAlert
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch []amAlert
		if r.URL.Path != "/api/v2/alerts" || json.NewDecoder(r.Body).Decode(&batch) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		mu.Lock()
		posts = append(posts, batch)
		mu.Unlock()
	}))
	defer srv.Close()
	now := time.Date(2025, 4, 28, 10, 45, 0, 0, time.UTC)
	sink, err := NewAlertmanager(AlertmanagerConfig{URL: srv.URL + "/", Refresh: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	a, b := testEvent(1), testEvent(2)
	for _, ev := range []*Event{a, b} {
		if err := sink.Send(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Send(context.Background(), resolvedOf(a, now)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(50 * time.Minute)
	if err := sink.RefreshNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 4 {
		t.Fatalf("%d posts, want 4", len(posts))
	}
	first, resolve, refresh := posts[0][0], posts[2][0], posts[3]
	if !first.EndsAt.Equal(time.Date(2025, 4, 28, 14, 45, 0, 0, time.UTC)) || first.Labels["entity"] != a.Entity {
		t.Errorf("firing post %+v", first)
	}
	if !resolve.EndsAt.Equal(time.Date(2025, 4, 28, 10, 45, 0, 0, time.UTC)) {
		t.Errorf("resolve endsAt %s", resolve.EndsAt)
	}
	if len(refresh) != 1 || refresh[0].Labels["entity"] != b.Entity || !refresh[0].EndsAt.Equal(now.Add(4*time.Hour)) {
		t.Errorf("refresh %+v", refresh)
	}
}
