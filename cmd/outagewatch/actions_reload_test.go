package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/actions"
	"github.com/outagewatch/outagewatch/alerting"
)

// actions serve reads the rules' action modes again on SIGHUP, the signal
// on which run reloads the same rules: the transit rule turned from off
// to dry-run acts from the next alert, and rules that no longer load
// leave the modes in force.
func TestActionsServeReloadsRuleModesOnSIGHUP(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rules.yaml")
	write := func(mode string) {
		body := "rules:\n  - name: transit-packet-loss\n    detector: packet_loss\n    signals: [packet_loss]\n    entities: [\"path:*\"]\n    actions: " + mode + "\n"
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(actions.ModeOff)
	cfg, err := actions.ParseConfig("t.yaml", []byte("mode: dry-run\nsites:\n  ams01:\n    transits:\n      - {asn: 1299, sessions: [192.0.2.11]}\n      - {asn: 3356, sessions: [192.0.2.12]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := actions.NewTransits(cfg, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.RuleModes, err = ruleModes(file); err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchRuleModes(ctx, file, tr)

	ev := alerting.Event{ID: "loss", Status: alerting.Firing, Rule: "transit-packet-loss", Detector: "packet_loss",
		Entity: "transit:1299@ams01", At: time.Date(2019, 6, 20, 12, 15, 0, 0, time.UTC)}
	send := func() []actions.Record {
		if err := tr.Send(ctx, &ev); err != nil {
			t.Fatal(err)
		}
		recs, _ := tr.Records()
		return recs
	}
	if recs := send(); len(recs) != 0 {
		t.Fatalf("the rule's actions are off, yet %+v", recs)
	}
	write(actions.ModeDryRun)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var recs []actions.Record
	for end := time.Now().Add(10 * time.Second); len(recs) == 0 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		recs = send()
	}
	if len(recs) != 1 || recs[0].Op != actions.OpShutdown || recs[0].Mode != actions.ModeDryRun {
		t.Fatalf("after the reload: %+v, want one dry-run shutdown", recs)
	}
	if err := os.WriteFile(file, []byte("rules: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "action modes in force stay"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no refusal logged: %s", log.String())
		}
	}
	if !strings.Contains(log.String(), "rules.yaml:1") {
		t.Fatalf("the refusal does not name the file and line: %s", log.String())
	}
}
