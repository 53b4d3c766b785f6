package pipeline_test

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/replay"
)

// oldCheckpoint was written, mid-incident (cut as in
// TestCheckpointRestoreMidIncident), by the pipeline as it was before it
// became a chain of stages; OUTAGEWATCH_WRITE_CHECKPOINT=1 writes it anew.
const oldCheckpoint = "testdata/virginmedia-before-stages.ckpt"

// A checkpoint written before the pipeline became a chain of stages
// restores, and the restored pipeline raises exactly the alerts and
// events of an uninterrupted run.
func TestRestoreCheckpointWrittenBeforeStages(t *testing.T) {
	spec, recs := allRecords(t, "../fixtures/virginmedia-2023-04-04.yaml")
	cut := midIncident(spec, recs)
	var first bytes.Buffer
	p := newPipeline(t, spec, &first)
	if err := replay.Run(p, []replay.Source{replay.NewSliceSource("a", slices.Clone(recs[:cut]))}, nil); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("OUTAGEWATCH_WRITE_CHECKPOINT") == "1" {
		cp, err := p.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(oldCheckpoint, cp, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := os.ReadFile(oldCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	var whole, second bytes.Buffer
	if err := replay.Run(newPipeline(t, spec, &whole), []replay.Source{replay.NewSliceSource("all", slices.Clone(recs))}, nil); err != nil {
		t.Fatal(err)
	}
	q := newPipeline(t, spec, &second)
	if err := q.UnmarshalBinary(cp); err != nil {
		t.Fatal(err)
	}
	if len(q.ActiveAlerts()) == 0 || len(q.ActiveEvents()) != 1 {
		t.Fatalf("restored %d alerts and %d events, want some and 1", len(q.ActiveAlerts()), len(q.ActiveEvents()))
	}
	if st := q.Stats(); st.Records["flows/goflow2-pb"] != p.Stats().Records["flows/goflow2-pb"] || st.Watermark != p.Stats().Watermark {
		t.Fatalf("restored counters %v wm %d, want %v wm %d", st.Records, st.Watermark, p.Stats().Records, p.Stats().Watermark)
	}
	if err := replay.Run(q, []replay.Source{replay.NewSliceSource("b", slices.Clone(recs[cut:]))}, nil); err != nil {
		t.Fatal(err)
	}
	// An event keeps the words its alerts were paged with, and this
	// checkpoint's were written when a burst's threshold did not yet name
	// its least count.
	restored := strings.ReplaceAll(second.String(), `"10× the baseline, for 5 min"`, `"10× the baseline, and at least 300 withdrawals, for 5 min"`)
	if got := first.String() + restored; got != whole.String() {
		t.Fatalf("alerts differ after restoring the old checkpoint:\n%s\nwant:\n%s", got, whole.String())
	}
}
