package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/rules"
)

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	var c = replayCmd()
	switch args[0] {
	case "score":
		c = scoreCmd()
	case "rules":
		c = rulesCmd()
	case "scoreboard":
		c = scoreboardCmd()
	}
	c.SetArgs(args[1:])
	c.SetOut(&out)
	c.SetErr(&errOut)
	err := c.Execute()
	return out.String(), errOut.String(), err
}

// A series exported from elsewhere replays and alerts like any input.
func TestReplayObservationExport(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("time,entity,signal,value\n")
	t0 := time.Date(2024, 6, 3, 0, 0, 0, 0, time.UTC)
	onset := t0.Add(15 * 24 * time.Hour).Add(9 * time.Hour)
	for ts := t0; ts.Before(onset.Add(2 * time.Hour)); ts = ts.Add(5 * time.Minute) {
		v := 1e9 * (1.2 + float64(ts.Hour()%12)/10)
		if !ts.Before(onset) {
			v *= 0.1
		}
		fmt.Fprintf(&b, "%d,country:XX,traffic_bytes,%.0f\n", ts.Unix(), v)
	}
	f := filepath.Join(dir, "export.csv")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "replay", f)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string // the alert lines; outage event lines ("kind":"event") follow them
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(l, `"kind":"alert"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("want one alert, got %q", out)
	}
	var ev struct {
		Status, Entity string
		Start, At      time.Time
	}
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Status != "firing" || ev.Entity != "country:XX" || !ev.Start.Equal(onset) || !ev.At.Equal(onset.Add(5*time.Minute)) {
		t.Fatalf("alert %+v, onset %s", ev, onset)
	}
}

func TestRulesCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("rules:\n  - name: x\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n    params: {threshold: 2}\n"), 0o644)
	_, stderr, err := run(t, "rules", "check", bad)
	if err == nil || !strings.Contains(stderr, bad+":6: rule \"x\": params.threshold: must be a fraction") {
		t.Fatalf("err %v stderr %q", err, stderr)
	}
	good, _ := filepath.Glob("../../rules/default/*.yaml")
	out, _, err := run(t, append([]string{"rules", "check"}, good...)...)
	if err != nil || strings.Count(out, "OK") != len(good) ||
		!strings.Contains(out, "50-events.yaml:19: event severity: warning from impact 0.05, critical from 0.25, full weight after 30m0s\n") {
		t.Fatalf("default rules: %v %q", err, out)
	}
}

// An operator without the source writes the shipped rules out, edits
// them and checks the directory as the service loads it.
func TestRulesExportThenCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rules")
	out, _, err := run(t, "rules", "export", dir)
	shipped, _ := filepath.Glob("../../rules/default/*.yaml")
	if err != nil || strings.Count(out, "\n") != len(shipped) || !strings.HasPrefix(out, filepath.Join(dir, "10-traffic.yaml")+"\n") {
		t.Fatalf("export: %v %q", err, out)
	}
	for _, f := range shipped {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(dir, filepath.Base(f)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s written differently: %v", filepath.Base(f), err)
		}
	}
	def, err := rules.Default()
	if err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "rules", "check", dir)
	if err != nil || !strings.HasPrefix(out, fmt.Sprintf("%s: %d rules OK\n", dir, len(def.Rules))) ||
		!strings.Contains(out, "50-events.yaml:19: event severity:") {
		t.Fatalf("check of the exported directory: %v %q", err, out)
	}
	if out, _, err = run(t, "rules", "check"); err != nil || out != fmt.Sprintf("shipped rules (rules/default): %d rules OK\n", len(def.Rules)) {
		t.Fatalf("check of the shipped rules: %v %q", err, out)
	}

	// An edit is kept: export again does not overwrite it.
	traffic := filepath.Join(dir, "10-traffic.yaml")
	os.WriteFile(traffic, []byte("rules: []\n"), 0o644)
	if _, _, err = run(t, "rules", "export", dir); err == nil || !strings.Contains(err.Error(), traffic+": file already exists: not overwritten (--force overwrites)") {
		t.Fatalf("second export: %v", err)
	}
	// A rule name used twice across the directory's files is one set's
	// error, which checking the files one by one would not see.
	os.WriteFile(traffic, []byte("rules:\n  - name: zone-dns-failure\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n"), 0o644)
	if _, stderr, err := run(t, "rules", "check", dir); err == nil || !regexp.MustCompile(regexp.QuoteMeta(filepath.Join(dir, "20-dns.yaml"))+`:\d+: rule "zone-dns-failure" already defined in `+regexp.QuoteMeta(traffic)).MatchString(stderr) {
		t.Fatalf("duplicate across files: %v %q", err, stderr)
	}
	if out, _, err = run(t, "rules", "export", "--force", dir); err != nil || strings.Count(out, "\n") != len(shipped) {
		t.Fatalf("export --force: %v %q", err, out)
	}
	if _, _, err = run(t, "rules", "check", dir); err != nil {
		t.Fatalf("check after export --force: %v", err)
	}
	if _, stderr, err := run(t, "rules", "check", t.TempDir()); err == nil || !strings.Contains(stderr, "no *.yaml or *.yml files in the directory") {
		t.Fatalf("empty directory: %v %q", err, stderr)
	}
}

// rules check --list prints each rule as it is in force: what the file
// left out (severity, for, critical, the noise bar) is the detector's
// default.
func TestRulesCheckList(t *testing.T) {
	f := filepath.Join(t.TempDir(), "one.yaml")
	os.WriteFile(f, []byte("rules:\n  - name: a\n    detector: traffic_drop\n    signals: [traffic_bytes]\n    entities: [\"asn:*\"]\n    exclude: [\"asn:64500\"]\n    params: {threshold: 0.3}\n"), 0o644)
	out, _, err := run(t, "rules", "check", "--list", f)
	if err != nil {
		t.Fatal(err)
	}
	want := f + ": 1 rules OK\n" +
		"  " + f + ":2: a: traffic_drop on traffic_bytes of asn:* except asn:64500; severity warning, actions off\n" +
		"      fires on: threshold 30 %, for 10 min, critical at 90 %; past 4σ of its own noise\n"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	if out, _, err = run(t, "rules", "check", f); err != nil || out != f+": 1 rules OK\n" {
		t.Fatalf("without --list: %v %q", err, out)
	}
}

func TestScoreFailsOnAMiss(t *testing.T) {
	spec, err := os.ReadFile("../../fixtures/uganda-2021-01-13.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Claim an outage that the data does not have.
	doc := strings.Replace(string(spec), "expect:\n", "expect:\n  - {detector: traffic_drop, entity: \"country:KE\", onset: 2021-01-13T17:00:00Z, within: 15m}\n", 1)
	f := filepath.Join(t.TempDir(), "wrong.yaml")
	os.WriteFile(f, []byte(doc), 0o644)
	out, _, err := run(t, "score", f)
	if err == nil || exitCode(err) != 2 || !regexp.MustCompile(`MISSED\s+traffic_drop\s+country:KE`).MatchString(out) {
		t.Fatalf("err %v out %q", err, out)
	}
}

func TestReplayWritesAReport(t *testing.T) {
	f := filepath.Join(t.TempDir(), "r.html")
	if _, _, err := run(t, "replay", "--report", f, "../../fixtures/telia-2019-06-20.yaml"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "packet_loss{transit:1299@ams01} — packet_loss") || strings.Count(string(b), "<svg") < 1 {
		t.Fatalf("report: %d bytes without the Telia chart", len(b))
	}
	// The outage event comes first, with its pages.
	ev, alerts := strings.Index(string(b), `<section class="incident event"`), strings.Index(string(b), `<h1 id="alerts">`)
	if ev < 0 || ev > alerts || !strings.Contains(string(b), `<table class="pages">`) {
		t.Fatalf("report: no outage event with its pages before the alerts (event at %d, alerts at %d)", ev, alerts)
	}
}
