package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/recordfile"
)

// captureLog sends the default logger to a buffer for the test.
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

// A file of which no line decodes is an error that names the file and says
// why, not a quiet replay with no alerts.
func TestReplayOfOnlyBadLinesFailsNamingTheFile(t *testing.T) {
	captureLog(t)
	f := filepath.Join(t.TempDir(), "ioda-typo.csv")
	os.WriteFile(f, []byte("time,entity,signal,value\n"+
		"2021-01-13T00:00:00Z,country:UG,bgp_visibel_slash24,2400\n"+
		"2021-01-13T00:05:00Z,country:UG,bgp_visibel_slash24,2400\n"+
		"yesterday,country:UG,traffic_bytes,1\n"), 0o644)
	out, _, err := run(t, "replay", f)
	if err == nil || exitCode(err) == 0 {
		t.Fatalf("exit 0 with output %q", out)
	}
	want := "no line decodes: " + f + ": 3 lines read, 0 replayed, 3 skipped (signal 2, time 1), first bad line 2: " +
		`observations/obs-csv record: signal: unknown signal "bgp_visibel_slash24"`
	if err.Error() != want {
		t.Fatalf("error\n got  %s\n want %s", err, want)
	}
	if strings.Contains(out, `"status"`) {
		t.Fatalf("alerts from a file that did not decode: %q", out)
	}

	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	if _, _, err := run(t, "replay", empty); err == nil || err.Error() != empty+": empty: no line to replay" {
		t.Fatalf("empty file: %v", err)
	}
}

// A file with some bad lines replays the good ones and ends with a summary
// of the file: lines read, replayed, skipped by reason, first bad line.
func TestReplayOfSomeBadLinesEndsWithTheFileSummary(t *testing.T) {
	logs := captureLog(t)
	f := filepath.Join(t.TempDir(), "export.jsonl")
	os.WriteFile(f, []byte(`{"time":"2024-06-03T00:00:00Z","entity":"country:XX","signal":"traffic_bytes","value":10}
{"time":"2024-06-03T00:05:00Z","entity":"country:XX","signal":"traffic_bytes","value":"ten"}

not json
{"time":"2024-06-03T00:10:00Z","entity":"XX","signal":"traffic_bytes","value":10}
{"time":"2024-06-03T00:15:00Z","entity":"country:XX","signal":"traffic_bytes","value":12}
`), 0o644)
	if _, _, err := run(t, "replay", f); err != nil {
		t.Fatal(err)
	}
	want := "input: " + f + ": 5 lines read, 2 replayed, 3 skipped (entity 1, json 1, value 1), first bad line 2: " +
		`observations/obs-json record: value: value \"ten\" is not a number`
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("log has no summary %q:\n%s", want, logs)
	}
}

// A recording whose records all fail to decode fails the same way, naming
// the first bad record by its topic, partition and offset.
func TestReplayOfARecordingThatDoesNotDecodeFails(t *testing.T) {
	captureLog(t)
	f := filepath.Join(t.TempDir(), "bad.owrec")
	var b bytes.Buffer
	for i, v := range []string{"2021-01-13T00:00:00Z,country:UG,no_such_signal,1", "not,a,line"} {
		rec := &ingest.Record{Stream: "observations", Format: "obs-csv", Topic: "ioda", Partition: 2, Offset: int64(7 + i),
			Time: int64(1610496000+i) * 1e9, Value: []byte(v)}
		if err := recordfile.Write(&b, rec); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(f, b.Bytes(), 0o644)
	_, _, err := run(t, "replay", f)
	want := "no record decodes: " + f + ": 2 records read, 0 replayed, 2 skipped (csv 1, signal 1), " +
		`first bad record: ioda[2]@7: observations/obs-csv record: signal: unknown signal "no_such_signal"`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n got  %v\n want %s", err, want)
	}
}

// A recording with a damaged line and a torn last line (the recorder
// killed mid-write) replays every whole record; the summary counts the
// two lines and names the first by its line, as they have no topic,
// partition or offset to be named by.
func TestReplayOfARecordingCutShort(t *testing.T) {
	logs := captureLog(t)
	f := filepath.Join(t.TempDir(), "cut.owrec")
	var b bytes.Buffer
	for i := range 3 {
		v := fmt.Sprintf("2021-01-13T00:%02d:00Z,country:UG,traffic_bytes,%d", 5*i, 100+i)
		rec := &ingest.Record{Stream: "observations", Format: "obs-csv", Topic: "ioda", Partition: 0, Offset: int64(i),
			Time: int64(1610496000+300*i) * 1e9, Value: []byte(v)}
		if err := recordfile.Write(&b, rec); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			b.WriteString("{\"stream\":\"observ\x00\n")
		}
	}
	b.Truncate(b.Len() - 40)
	os.WriteFile(f, b.Bytes(), 0o644)
	if _, _, err := run(t, "replay", f); err != nil {
		t.Fatal(err)
	}
	want := "input: " + f + ": 4 records read, 2 replayed, 2 skipped (json 2), first bad record: line 2: "
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("log has no summary %q:\n%s", want, logs)
	}
}
