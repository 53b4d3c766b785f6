package actions

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
)

// A crash in the middle of writing a record leaves a line without its
// newline. The next record appended, here by a new process acting on the
// next alert, is still read back whole, and the fragment is skipped and
// counted.
func TestAuditTornLastLine(t *testing.T) {
	cfg, err := LoadConfig("../deploy/actions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/actions.jsonl"
	at := time.Date(2019, 6, 20, 12, 15, 0, 0, time.UTC)
	fire := func(tr *Transits, site string) {
		t.Helper()
		ev := &alerting.Event{ID: "loss", Status: alerting.Firing, Rule: "transit-packet-loss", Detector: "packet_loss",
			Entity: "transit:1299@" + site, At: at, Summary: "loss at " + site}
		if err := tr.Send(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	open := func() (*Audit, *Transits) {
		t.Helper()
		a, err := OpenAudit(path)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := NewTransits(cfg, nil, a, nil)
		if err != nil {
			t.Fatal(err)
		}
		return a, tr
	}
	_, tr := open()
	fire(tr, "ams01")
	fire(tr, "fra01")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Tear the second record: the process died with 20 bytes of it unwritten.
	if err := os.WriteFile(path, b[:len(b)-20], 0o644); err != nil {
		t.Fatal(err)
	}

	a, tr := open()
	if recs, _ := a.Records(); len(recs) != 1 || recs[0].Site != "ams01" {
		t.Fatalf("after the tear: %+v", recs)
	}
	fire(tr, "lon01")

	a, _ = open()
	recs, err := a.Records()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Op+" "+r.Site)
	}
	if strings.Join(got, ", ") != "shutdown ams01, shutdown lon01" || a.Skipped != 1 {
		t.Fatalf("records %v, skipped %d; want the shutdowns at ams01 and lon01, one skipped", got, a.Skipped)
	}
	b, _ = os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n != 3 || !strings.HasSuffix(string(b), "}\n") {
		t.Fatalf("%d lines:\n%s", n, b)
	}
	// The state read back says ams01 and lon01 are down: a restore of
	// lon01 by its ID finds it.
	_, tr = open()
	if r, err := tr.Undo(context.Background(), recs[1].ID, "alice"); err != nil || r.Site != "lon01" || r.Of != recs[1].ID {
		t.Fatalf("undo lon01: %+v %v", r, err)
	}
}
