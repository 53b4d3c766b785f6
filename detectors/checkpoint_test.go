package detectors

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// traffic_drop's checkpoint of one series mid-alert (firing, an outlier
// run, a full evidence log, a ranking, a learnt noise) is the same bytes
// as the ones in testdata, and restoring then checkpointing changes
// nothing; a checkpoint written before the state had a flap hold
// (traffic-drop-checkpoint-v1.gob) restores too, and goes on alike.
// OUTAGEWATCH_UPDATE_GOLDEN=1 writes the file anew.
func TestTrafficDropCheckpointFormat(t *testing.T) {
	r := newRun(DefaultTrafficDrop())
	r.feed(start, 8*288, []string{"asn:1"}, flat)
	r.feed(start+8*dayNs, 5, []string{"asn:1"}, func(string, int64) float64 { return 0.2 })
	if len(r.findings) != 1 || r.findings[0].Status != Firing || len(r.findings[0].Evidence) != evidenceKept {
		t.Fatalf("findings %+v, want one firing with %d evidence", r.findings, evidenceKept)
	}
	got, err := r.det.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "traffic-drop-checkpoint.gob")
	if os.Getenv("OUTAGEWATCH_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("checkpoint of %d bytes differs from the %d of %s", len(got), len(want), golden)
	}
	d := DefaultTrafficDrop().Build("test")
	if err := d.UnmarshalBinary(want); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(filepath.Join("testdata", "traffic-drop-checkpoint-v1.gob"))
	if err != nil {
		t.Fatal(err)
	}
	v1 := DefaultTrafficDrop().Build("test")
	if err := v1.UnmarshalBinary(old); err != nil {
		t.Fatalf("a checkpoint of the earlier format: %v", err)
	}
	again, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, want) {
		t.Fatal("restored and checkpointed again, the bytes differ")
	}
	// And the restored state goes on as the original: the next buckets
	// resolve alike.
	b := newRun(DefaultTrafficDrop())
	b.feed(start, 8*288, []string{"asn:1"}, flat)
	b.feed(start+8*dayNs, 5, []string{"asn:1"}, func(string, int64) float64 { return 0.2 })
	b.det, b.findings = d, nil
	c := newRun(DefaultTrafficDrop())
	c.feed(start, 8*288, []string{"asn:1"}, flat)
	c.feed(start+8*dayNs, 5, []string{"asn:1"}, func(string, int64) float64 { return 0.2 })
	c.det, c.findings = v1, nil
	r.findings = nil
	for _, x := range []*run{r, b, c} {
		x.feed(start+8*dayNs+5*w5, 12, []string{"asn:1"}, flat)
	}
	if len(r.findings) != 1 || r.findings[0].Status != Resolved || !reflect.DeepEqual(r.findings, b.findings) {
		t.Fatalf("after restore: %+v, want %+v", b.findings, r.findings)
	}
	if !reflect.DeepEqual(r.findings, c.findings) {
		t.Fatalf("after restoring the earlier format: %+v, want %+v", c.findings, r.findings)
	}
}
