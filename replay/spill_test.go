package replay

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
)

// smallRuns makes runs of n records and merges at most k at once.
func smallRuns(t *testing.T, n, k int) {
	r, b, m := runRecords, runBytes, maxRuns
	runRecords, runBytes, maxRuns = n, 1<<30, k
	t.Cleanup(func() { runRecords, runBytes, maxRuns = r, b, m })
}

func drain(t *testing.T, s Source) []*ingest.Record {
	t.Helper()
	var out []*ingest.Record
	for {
		r, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if r == nil {
			return out
		}
		out = append(out, r)
	}
}

// The external sort gives exactly what a stable in-memory sort gives, ties
// in file order, whether the file fits one run, spills many runs, or
// spills more runs than are merged at once.
func TestSorterMatchesStableSort(t *testing.T) {
	var in []*ingest.Record
	for i := range 1000 {
		// times jump back every 37 records and repeat, so runs overlap and tie
		tm := int64((i%37)*10 + (i/37)%5)
		in = append(in, &ingest.Record{Stream: "observations", Format: "csv", Topic: "x.csv",
			Offset: int64(i), Time: tm, Value: []byte(fmt.Sprint(i))})
	}
	want := slices.Clone(in)
	slices.SortStableFunc(want, func(a, b *ingest.Record) int { return cmp.Compare(a.Time, b.Time) })
	for _, c := range []struct{ run, k, runs int }{{2000, 64, 0}, {100, 64, 10}, {50, 4, 4}, {7, 3, 3}} {
		t.Run(fmt.Sprintf("run%d_k%d", c.run, c.k), func(t *testing.T) {
			smallRuns(t, c.run, c.k)
			so := newSorter("x.csv")
			for _, r := range in {
				cp := *r
				if err := so.add(&cp); err != nil {
					t.Fatal(err)
				}
			}
			src, err := so.source()
			if err != nil {
				t.Fatal(err)
			}
			// runs left once the last one is spilled
			if got := len(so.runs); got > c.runs || (c.runs > 0 && got == 0) {
				t.Errorf("runs = %d, want 1..%d", got, c.runs)
			}
			got := drain(t, src)
			if len(got) != len(want) {
				t.Fatalf("got %d records, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Offset != want[i].Offset || got[i].Time != want[i].Time {
					t.Fatalf("record %d: offset %d time %d, want offset %d time %d",
						i, got[i].Offset, got[i].Time, want[i].Offset, want[i].Time)
				}
			}
			if n := src.(interface{ Len() int }).Len(); n != 1000 {
				t.Errorf("Len = %d", n)
			}
		})
	}
}

// A file in time order, however long, is one run on disk.
func TestSorterOrderedFileIsOneRun(t *testing.T) {
	smallRuns(t, 10, 64)
	so := newSorter("x")
	for i := range 95 {
		if err := so.add(&ingest.Record{Time: int64(i / 3)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := so.source(); err != nil {
		t.Fatal(err)
	}
	if len(so.runs) != 1 {
		t.Fatalf("runs = %d, want 1", len(so.runs))
	}
}

// Every field survives the trip to disk and back.
func TestRunEncodingRoundTrip(t *testing.T) {
	recs := []*ingest.Record{
		{Stream: "flows", Format: "goflow2-pb", Topic: "flows", Partition: 3, Offset: 1 << 40, Time: -5,
			Key: []byte("k"), Value: bytes.Repeat([]byte{0xff}, 70000),
			Headers: []ingest.Header{{Key: "a", Value: []byte("1")}, {Key: string(bytes.Repeat([]byte("h"), 70000))}}},
		{Time: 1700000000000000000},
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	for _, r := range recs {
		if err := writeRecord(w, r); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	full := buf.Bytes()
	r := bufio.NewReaderSize(bytes.NewReader(full), 4096)
	strs := map[string]string{}
	for i, want := range recs {
		got, err := readRecord(r, strs)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("record %d differs after the round trip", i)
		}
	}
	if _, err := readRecord(r, strs); err == nil || err.Error() != "EOF" {
		t.Errorf("at the end: %v, want EOF", err)
	}
	// a run cut short is an error, not a quiet end
	r = bufio.NewReader(bytes.NewReader(full[:len(full)-5]))
	readRecord(r, strs)
	if _, err := readRecord(r, strs); err != errShortRun {
		t.Errorf("cut run: %v, want %v", err, errShortRun)
	}
}

// A file longer than a run is read through FromFile into runs on disk, not
// into memory: the source merges them back in time order, and the summary
// counts every line.
func TestFromFileSpillsLongFile(t *testing.T) {
	smallRuns(t, 16, 4)
	src, err := FromFile("long.csv", "line", func(fn func(ingest.Record) error) (ReadStats, error) {
		for i := range 500 {
			// ten interleaved entities, each in time order, the file not
			tm := int64(i%10)*1000 + int64(i/10)
			if err := fn(ingest.Record{Stream: "observations", Format: "csv", Offset: int64(i + 2), Time: tm}); err != nil {
				return ReadStats{}, err
			}
		}
		return ReadStats{Lines: 501, Skipped: map[string]int64{"time": 1}, FirstBad: 1}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.Source.(*spilledSource); !ok {
		t.Fatalf("source is %T, want the runs merged from disk", src.Source)
	}
	got := drain(t, src)
	if len(got) != 500 || src.Len() != 500 {
		t.Fatalf("%d records, Len %d, want 500", len(got), src.Len())
	}
	for i := 1; i < len(got); i++ {
		if got[i].Time < got[i-1].Time {
			t.Fatalf("record %d at %d after %d", i, got[i].Time, got[i-1].Time)
		}
	}
	if got[0].Topic != "long.csv" {
		t.Errorf("topic %q, want the file's name", got[0].Topic)
	}
	if s := src.Summary(); s.Read != 501 || s.Skipped["time"] != 1 || s.FirstBad != 1 {
		t.Errorf("summary %+v", s)
	}
}
