package replay

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
)

// lineReader reads a test file of one event time per line and counts how
// often it was read.
func lineReader(path string, reads *int) func(fn func(ingest.Record) error) (ReadStats, error) {
	return func(fn func(ingest.Record) error) (ReadStats, error) {
		*reads++
		f, err := os.Open(path)
		if err != nil {
			return ReadStats{}, err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		var st ReadStats
		for sc.Scan() {
			st.Lines++
			tm, err := strconv.ParseInt(sc.Text(), 10, 64)
			if err != nil {
				st.Skipped = map[string]int64{"time": 1}
				st.FirstBad = st.Lines
				continue
			}
			if err := fn(ingest.Record{Stream: "observations", Format: "csv", Offset: st.Lines, Time: tm}); err != nil {
				return st, err
			}
		}
		return st, sc.Err()
	}
}

func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A regular file in time order is checked in a first read and streamed in
// a second: nothing is held in memory or spilled, and the records, their
// order (ties in file order) and the summary are those of a sort.
func TestFromFileStreamsOrderedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ordered.csv")
	writeLines(t, path, "10", "10", "x", "20", "35", "35", "40")
	reads := 0
	src, err := FromFile(path, "line", lineReader(path, &reads))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.Source.(*streamSource); !ok {
		t.Fatalf("source is %T, want the file streamed", src.Source)
	}
	if reads != 1 || src.Len() != 6 {
		t.Fatalf("after opening: %d reads, Len %d; want 1 read, Len 6", reads, src.Len())
	}
	got := drain(t, src)
	if reads != 2 {
		t.Errorf("%d reads, want 2", reads)
	}
	var offs []int64
	for _, r := range got {
		offs = append(offs, r.Offset)
		if r.Topic != path {
			t.Errorf("topic %q, want the file's name", r.Topic)
		}
	}
	if want := []int64{1, 2, 4, 5, 6, 7}; !equalInts(offs, want) {
		t.Errorf("lines %v, want %v", offs, want)
	}
	if s := src.Summary(); s.Read != 7 || s.Skipped["time"] != 1 || s.FirstBad != 3 {
		t.Errorf("summary %+v", s)
	}
}

// A file out of order is sorted as before; the first read stops at the
// first record that goes back in time.
func TestFromFileSortsUnorderedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unordered.csv")
	writeLines(t, path, "10", "30", "20", "20", "5")
	reads := 0
	src, err := FromFile(path, "line", lineReader(path, &reads))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.Source.(*streamSource); ok {
		t.Fatal("an unordered file was streamed")
	}
	if reads != 2 {
		t.Errorf("%d reads, want 2 (the check, then the sort)", reads)
	}
	var offs []int64
	for _, r := range drain(t, src) {
		offs = append(offs, r.Offset)
	}
	if want := []int64{5, 1, 3, 4, 2}; !equalInts(offs, want) {
		t.Errorf("lines %v, want %v", offs, want)
	}
}

// A file that changes between the two reads fails the replay with a clear
// error instead of replaying something that was not checked.
func TestStreamedFileChangedBetweenReads(t *testing.T) {
	for name, second := range map[string][]string{
		"out of order": {"10", "5", "30"},
		"longer":       {"10", "20", "30", "40"},
		"shorter":      {"10", "20"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "grows.csv")
			writeLines(t, path, "10", "20", "30")
			reads := 0
			src, err := FromFile(path, "line", lineReader(path, &reads))
			if err != nil {
				t.Fatal(err)
			}
			writeLines(t, path, second...)
			for {
				r, err := src.Next()
				if err != nil {
					if !strings.Contains(err.Error(), "the file changed during the replay") {
						t.Fatalf("error %q", err)
					}
					return
				}
				if r == nil {
					t.Fatal("no error at the end of a changed file")
				}
			}
		})
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
