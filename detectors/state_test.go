package detectors

import (
	"reflect"
	"testing"
	"time"
)

// The ring reads as the slice log it replaces, entry for entry, as it
// fills, wraps and is set from a checkpoint's longer or shorter log.
func TestEvidenceRingReadsAsLog(t *testing.T) {
	var log evidenceLog
	var ring evidenceRing
	if ring.list() != nil {
		t.Fatal("an empty ring lists a non-nil log")
	}
	for i := range 3*evidenceKept + 5 {
		e := Evidence{Time: int64(i), Value: float64(i) / 2, Baseline: float64(-i)}
		log.add(e)
		ring.add(e)
		if got := ring.list(); !reflect.DeepEqual(got, log) {
			t.Fatalf("after %d adds: %v, want %v", i+1, got, log)
		}
	}
	long := append(evidenceLog{{Time: -1}}, log...)
	ring.set(long)
	if got := ring.list(); !reflect.DeepEqual(got, log) {
		t.Fatalf("set from %d entries: %v, want the last %d", len(long), got, evidenceKept)
	}
	ring.set(log[:3])
	ring.add(Evidence{Time: 99})
	if got, want := ring.list(), append(append(evidenceLog{}, log[:3]...), Evidence{Time: 99}); !reflect.DeepEqual(got, want) {
		t.Fatalf("set from 3 then added: %v, want %v", got, want)
	}
}

func TestFmtDurationWritesWholeUnits(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute: "30m", 10 * time.Minute: "10m", 20 * time.Minute: "20m", 2 * time.Hour: "2h",
		90 * time.Minute: "1h30m", 10 * time.Hour: "10h", 45 * time.Second: "45s", 150 * time.Second: "2m30s",
	} {
		if got := fmtDuration(Duration(d)); got != want {
			t.Errorf("fmtDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
