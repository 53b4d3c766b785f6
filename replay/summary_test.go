package replay

import (
	"errors"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
)

func TestFileSummaryCountsAndFails(t *testing.T) {
	src, err := FromFile("x.csv", "line", func(fn func(ingest.Record) error) (ReadStats, error) {
		for i := int64(2); i <= 4; i++ {
			if err := fn(ingest.Record{Offset: i, Time: i}); err != nil {
				return ReadStats{}, err
			}
		}
		return ReadStats{Lines: 5, Skipped: map[string]int64{"time": 2}, FirstBad: 5}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := src.Next(); r.Topic != "x.csv" {
		t.Fatalf("record topic %q, want the file", r.Topic)
	}
	sum := src.Summary()
	sum.count(&ingest.Record{Offset: 2}, nil)
	sum.count(&ingest.Record{Offset: 4}, ingest.Errorf("value", "value %q is not a number", "x"))
	sum.count(&ingest.Record{Offset: 3}, ingest.Errorf("value", "value %q is not a number", "y"))
	want := `x.csv: 5 lines read, 1 replayed, 4 skipped (time 2, value 2), first bad line 3: value: value "y" is not a number`
	if sum.String() != want || sum.Err() != nil {
		t.Fatalf("summary\n got  %s (err %v)\n want %s", sum, sum.Err(), want)
	}
	// A gap (an empty value) is counted, but is no fault and no bad line.
	sum.count(&ingest.Record{Offset: 1}, ingest.Errorf(ingest.ReasonNoValue, "no value"))
	want = `x.csv: 5 lines read, 1 replayed, 5 skipped (no_value 1, time 2, value 2), first bad line 3: value: value "y" is not a number`
	if sum.String() != want || sum.Faults() != 4 {
		t.Fatalf("summary with a gap\n got  %s (%d faults)\n want %s", sum, sum.Faults(), want)
	}
	sum.Replayed = 0
	sums, err := Summaries([]Source{src, NewSliceSource("fixture/flows", nil)})
	if len(sums) != 1 || err == nil || !strings.HasPrefix(err.Error(), "no line decodes: x.csv: 5 lines read, 0 replayed") {
		t.Fatalf("summaries %d, err %v", len(sums), err)
	}
	empty := &FileSummary{File: "e.bmp", Unit: "record"}
	if err := errors.Join(empty.Err()); err == nil || err.Error() != "e.bmp: empty: no record to replay" {
		t.Fatalf("empty: %v", err)
	}
}

// A reader's caveat (values that are not what the rules assume) ends the
// summary line and makes it a warning, like a cut.
func TestFileSummaryCaveat(t *testing.T) {
	src, err := FromFile("ioda.json", "value", func(fn func(ingest.Record) error) (ReadStats, error) {
		return ReadStats{Lines: 1, Caveat: "1 series are averages"}, fn(ingest.Record{Offset: 1, Time: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := src.Summary()
	sum.count(&ingest.Record{Offset: 1}, nil)
	if want := "ioda.json: 1 values read, 1 replayed; 1 series are averages"; sum.String() != want || sum.Faults() != 1 {
		t.Fatalf("summary %q (%d faults), want %q and one fault", sum, sum.Faults(), want)
	}
}
