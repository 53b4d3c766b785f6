package replay_test

import (
	"bytes"
	"encoding/gob"
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/rules"
)

// aggSnapshot mirrors the gob form of an aggregator checkpoint
// (aggregate/checkpoint.go): gob matches fields by name, so a checkpoint
// of a million series can be written here, a chunk at a time, from the
// rings of a few. checkpointMirror proves the mirror complete before it
// is used.
type aggSnapshot struct {
	Width, Lateness int64
	History         int
	ClosedTo        int64
	Series          []aggSeriesSnap
	Feeds           map[int64]map[string]int64
	Recent          map[int64]map[string]int64
}

type aggSeriesSnap struct {
	Signal, Entity string
	Ring           []byte
	Open           []struct {
		Start, Count, LastT int64
		Sum                 float64
		Acc                 []byte
	}
	LastData, Step       int64
	Gaps                 int32
	SpacingSum, SpacingN int32
	ChangeAge            int32
	ValueHash            uint32
	ChangeStep, Changes  int16
	BootGap              int16
}

// restoreClasses: genSource's value of series s in a bucket depends on s
// only through s mod 13, so 13 rings are every series' history.
const restoreClasses = 13

// restoreHistory fills agg, through Aggregator.UnmarshalBinary, with days
// of genSource's history for n series, as if they had been replayed: the
// history of 13 template series is aggregated for real and checkpointed,
// and the checkpoint, with the entities renamed, restored 10,000 series
// at a time (a checkpoint of every series at once would take gigabytes
// of its own).
func restoreHistory(b testing.TB, agg *aggregate.Aggregator, n, days int, t0 int64, signal string) {
	sig, ok := obs.Lookup(signal)
	if !ok {
		b.Fatalf("signal %q not declared", signal)
	}
	tmpl := aggregate.New(agg.Config())
	for d := range days {
		for bk := range 288 {
			t := (t0 + int64(d)*86400 + int64(bk)*300) * 1e9
			for s := range restoreClasses {
				tmpl.Observe(&obs.Observation{Time: t, Signal: sig, Entity: "asn:" + strconv.Itoa(64512+s),
					Value: float64(1000 + (bk*7+s)%13)})
			}
			tmpl.Advance(t, nil)
		}
	}
	tmpl.Advance((t0+int64(days)*86400)*1e9, nil)
	sn := checkpointMirror(b, tmpl)
	classes := sn.Series
	if len(classes) != restoreClasses {
		b.Fatalf("template checkpoint holds %d series, want %d", len(classes), restoreClasses)
	}
	const chunk = 10000
	for lo := 0; lo < n; lo += chunk {
		sn.Series = sn.Series[:0]
		for s := lo; s < min(lo+chunk, n); s++ {
			c := classes[s%restoreClasses]
			c.Entity = "asn:" + strconv.Itoa(64512+s)
			sn.Series = append(sn.Series, c)
		}
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(&sn); err != nil {
			b.Fatal(err)
		}
		if err := agg.UnmarshalBinary(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
	if got := agg.Stats().Series; got != n {
		b.Fatalf("%d series restored, want %d", got, n)
	}
}

// checkpointMirror reads a's checkpoint into the mirror and fails unless
// the mirror, written back and restored into a new aggregator, checkpoints
// to the same bytes: nothing of the checkpoint is lost on the way.
func checkpointMirror(b testing.TB, a *aggregate.Aggregator) aggSnapshot {
	cp, err := a.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	var sn aggSnapshot
	if err := gob.NewDecoder(bytes.NewReader(cp)).Decode(&sn); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&sn); err != nil {
		b.Fatal(err)
	}
	back := aggregate.New(a.Config())
	if err := back.UnmarshalBinary(buf.Bytes()); err != nil {
		b.Fatal(err)
	}
	again, err := back.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Equal(cp, again) {
		b.Fatal("the checkpoint mirror loses part of an aggregator checkpoint: update aggSnapshot to aggregate's snapshot")
	}
	return sn
}

// The scale run's restore writes checkpoints through the mirror, which
// must hold every field an aggregator checkpoints: a field added to the
// checkpoint and not to the mirror stops scripts/scale.sh -R at its start.
// Checked here, on two days of 26 series, so that CI finds it.
func TestScaleRestoreMirror(t *testing.T) {
	set, err := rules.Load(scaleRules["traffic"].file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Config{Rules: set}, nil)
	if err != nil {
		t.Fatal(err)
	}
	restoreHistory(t, p.Aggregator(), 2*restoreClasses, 2, 1700006400, scaleRules["traffic"].signal)
}

// resetPeak starts the peak resident set (VmHWM) over from the current
// resident set (Linux: clear_refs 5).
func resetPeak(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		b.Fatalf("reset the peak resident set: %v", err)
	}
}
