package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runRoot runs the whole command line, as main does.
func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	c := rootCmd()
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&out)
	err := c.Execute()
	return out.String(), err
}

// The root --version prints what `outagewatch version` does.
func TestRootVersion(t *testing.T) {
	a, err := runRoot(t, "--version")
	if err != nil {
		t.Fatal(err)
	}
	b, err := runRoot(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if a != b || !strings.HasPrefix(a, "outagewatch ") || !strings.Contains(a, "\nbuilt with go") {
		t.Fatalf("--version printed %q, version %q", a, b)
	}
}

// replay --text writes one line for a person per alert and event: Telia's
// two episodes are a firing alert, its event's open, the alert's resolve
// and the event's, each.
func TestReplayText(t *testing.T) {
	out, _, err := run(t, "replay", "--text", "telia-2019-06-20")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{
		"2019-06-17 08:35 UTC  alert firing   [critical] AS1299: packet loss 8.1 % of packets lost (a destination counts as lossy from 10 %) (packet_loss; event 296974dd4f45b4e1)",
		"2019-06-17 08:45 UTC  event open     [critical] Outage in transit AS1299: packet loss 8.1 % of packets lost (a destination counts as lossy from 10 %); sites ams01, fra01, lon01; 22 destinations; seen in quality (confidence 0.40); likely cause: packet loss through AS1299: 22 of 40 destinations at least 10% lossy at ams01, fra01, lon01; 8.1% of packets lost",
		"2019-06-17 09:25 UTC  alert resolved [critical] AS1299: packet loss now 0.1 % of packets lost (a destination counts as lossy from 10 %) (packet_loss; event 296974dd4f45b4e1)",
		"2019-06-17 09:25 UTC  event resolve  [critical] Outage in transit AS1299: packet loss 8.1 % of packets lost (a destination counts as lossy from 10 %) when paged; sites ams01, fra01, lon01; 22 destinations; seen in quality (confidence 0.40); likely cause: packet loss through AS1299: 22 of 40 destinations at least 10% lossy at ams01, fra01, lon01; 8.1% of packets lost",
	}
	if len(lines) != 8 {
		t.Fatalf("%d lines, want 8:\n%s", len(lines), out)
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("line %d\n got %s\nwant %s", i, lines[i], w)
		}
	}
}

// An input that is neither a file nor a bundled fixture names the bundled
// ones.
func TestReplayUnknownFixtureListsTheBundled(t *testing.T) {
	_, _, err := run(t, "replay", "uganda-2012")
	if err == nil || !strings.HasPrefix(err.Error(), "uganda-2012: no such file, nor a bundled fixture (bundled: baltic-cables-2024-11-17, ") ||
		!strings.Contains(err.Error(), ", uganda-2021-01-13, virginmedia-2023-04-04)") {
		t.Fatalf("error %v", err)
	}
}

// --serve on an address that cannot be listened on fails before the
// replay: no alert is written (the output is the usage only).
func TestReplayServeBadAddressFailsFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, _, err := run(t, "replay", "--serve", ln.Addr().String(), "uganda-2021-01-13")
	if err == nil || !strings.HasPrefix(err.Error(), "--serve "+ln.Addr().String()+": listen tcp") || strings.Contains(out, `"kind"`) {
		t.Fatalf("error %v, output %d bytes", err, len(out))
	}
}

// The old spellings of renamed flags still parse, hidden from the help,
// into the same setting.
func TestDeprecatedFlagSpellings(t *testing.T) {
	c := actionsCmd()
	serve, _, err := c.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	fs := serve.Flags()
	if err := fs.Parse([]string{"--kafka-brokers", "k1:9092,k2:9092", "--tm-mode", "enforce"}); err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("brokers").Value.String(); got != "[k1:9092,k2:9092]" {
		t.Errorf("--kafka-brokers set --brokers to %s", got)
	}
	if got := fs.Lookup("mode").Value.String(); got != "enforce" {
		t.Errorf("--tm-mode set --mode to %s", got)
	}
	if !fs.Lookup("kafka-brokers").Hidden || !fs.Lookup("tm-mode").Hidden {
		t.Error("old spellings shown in the help")
	}
	for _, sub := range []string{"list", "undo", "replay"} {
		cmd, _, err := c.Find([]string{sub})
		if err != nil {
			t.Fatal(err)
		}
		if f := cmd.Flags().ShorthandLookup("c"); f == nil || f.Name != "config" {
			t.Errorf("actions %s has no -c for --config", sub)
		}
	}
}

// replay --serve answers /metrics beside the outage page, in the live
// service's names: Telia's replay raised 4 alert notifications.
func TestReplayServeMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := replayCmd()
	c.SetArgs([]string{"--serve", addr, "-o", filepath.Join(t.TempDir(), "out.jsonl"), "telia-2019-06-20"})
	done := make(chan error, 1)
	go func() { done <- c.ExecuteContext(ctx) }()
	var body string
	for body == "" {
		select {
		case err := <-done:
			t.Fatalf("replay ended: %v", err)
		default:
		}
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		} else {
			time.Sleep(20 * time.Millisecond) // the replay is still running
		}
	}
	for _, want := range []string{"\noutagewatch_alert_events_total 4\n", "\noutagewatch_watermark_timestamp_seconds 1.561", "\noutagewatch_build_info{"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
