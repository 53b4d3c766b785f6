package quality

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/gztest"
	"github.com/outagewatch/outagewatch/obs"
)

func TestFormatsRegistered(t *testing.T) {
	for _, f := range []string{FormatJSON, FormatAtlas} {
		d, err := ingest.NewDecoder(Stream, f, &ingest.Env{})
		if err != nil {
			t.Fatal(err)
		}
		var got obs.Slice
		line := `{"time":"2019-06-20T12:10:00Z","site":"ams01","transit_asn":1299,"dst":"198.18.3.1","sent":20,"rcvd":14}`
		if f == FormatAtlas {
			line = `{"type":"ping","timestamp":1561032600,"from":"192.0.2.1","dst_addr":"198.18.3.1","sent":2,"rcvd":1,"result":[{"x":"*"},{"rtt":12.5}]}`
		}
		if err := d.Decode([]byte(line), &got); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if f == FormatJSON && (len(got) != 2 || got[1].Entity != "path:1299@ams01>198.18.3.0/24" || got[1].Value != 0.3) {
			t.Fatalf("%s: %+v", f, got)
		}
	}
}

func TestReadTimesAndMalformedLines(t *testing.T) {
	in := strings.Join([]string{
		`{"time":"oops"}`, // before any good line: no time to give it
		`{"time":"2019-06-20T12:10:00Z","sent":10,"rcvd":10,"src_asn":1}`,
		``,
		`{"time":"2019-06-20T12:09:30Z","sent":10,"rcvd":11,"src_asn":1}`, // rcvd > sent
		`{"time":1561032700.5,"bandwidth_mbps":80,"country":"SE"}`,
	}, "\n")
	var recs []ingest.Record
	st, err := Read(strings.NewReader(in), FormatJSON, func(r ingest.Record) error { recs = append(recs, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := ReadStats{Lines: 5, Records: 3, Blank: 1, NoTime: 1, NoTimeWhy: map[string]int64{"time": 1}, Malformed: 1, FirstNoTime: 1,
		FirstTimeErr: `time: time: "oops" is not an RFC 3339 time`}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	times := []int64{1561032600e9, 1561032600e9, 1561032700500000000}
	offsets := []int64{2, 4, 5}
	for i, r := range recs {
		if r.Time != times[i] || r.Offset != offsets[i] || r.Stream != Stream || r.Format != FormatJSON {
			t.Errorf("record %d: time %d offset %d %s/%s", i, r.Time, r.Offset, r.Stream, r.Format)
		}
	}
	// The malformed line reaches the decoder and fails there with its reason.
	if err := NewDecoder(nil).Decode(recs[1].Value, &obs.Slice{}); ingest.Reason(err) != "value_range" {
		t.Fatalf("decode of the malformed line: %v", err)
	}
	stop := errors.New("stop")
	if _, err := Read(strings.NewReader(in), FormatJSON, func(ingest.Record) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("error from fn: %v", err)
	}
	if _, err := Read(strings.NewReader(in), "csv", nil); err == nil {
		t.Fatal("unknown format accepted")
	}
}

func TestReadFileAtlas(t *testing.T) {
	var n int
	var last int64
	st, err := ReadFile("testdata/ping-results.jsonl", FormatAtlas, func(r ingest.Record) error {
		n++
		if r.Time < 1378000000e9 || r.Format != FormatAtlas {
			t.Fatalf("record %d: time %d format %s", n, r.Time, r.Format)
		}
		last = r.Time
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != int64(n) || st.Lines != st.Records+st.Blank || st.NoTime != 0 || st.Malformed != 0 || n == 0 || last == 0 {
		t.Fatalf("stats %+v, %d records", st, n)
	}
}

// The RIPE Atlas API gives a measurement's results as one JSON array
// unless asked for lines: the same results read the same either way,
// numbered by their place in the array.
func TestReadAtlasArray(t *testing.T) {
	data, err := os.ReadFile("testdata/ping-results.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	read := func(in string) ([]ingest.Record, ReadStats) {
		t.Helper()
		var recs []ingest.Record
		st, err := Read(strings.NewReader(in), FormatAtlas, func(r ingest.Record) error { recs = append(recs, r); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return recs, st
	}
	want, wst := read(strings.Join(lines, "\n"))
	got, gst := read(" \n[" + strings.Join(lines, ",\n  ") + "]\n")
	if len(want) == 0 || len(got) != len(want) || !reflect.DeepEqual(gst, wst) {
		t.Fatalf("array: %d records %+v, lines: %d %+v", len(got), gst, len(want), wst)
	}
	for i := range want {
		if got[i].Time != want[i].Time || got[i].Offset != want[i].Offset || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("record %d: %d %d %.40s, want %d %d %.40s", i, got[i].Time, got[i].Offset, got[i].Value,
				want[i].Time, want[i].Offset, want[i].Value)
		}
	}
	// A broken element stops the reading, named by its place.
	_, err = Read(strings.NewReader("["+lines[0]+",{\"prb_id\":}]"), FormatAtlas, func(ingest.Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "result 2 of the array") {
		t.Fatalf("broken element: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"time":"2019-06-20T12:10:00Z","sent":10,"rcvd":9,"src_asn":1}`+"\n\n{"), true)
	f.Add([]byte(`{"type":"ping","timestamp":1561032600,"sent":1,"rcvd":1,"result":[{"rtt":1}]}`), false)
	f.Add([]byte(`[{"type":"ping","timestamp":1561032600,"sent":1,"rcvd":1,"result":[{"rtt":1}]}, {"timestamp":1}]`), true)
	f.Fuzz(func(t *testing.T, b []byte, atlas bool) {
		format := FormatJSON
		if atlas {
			format = FormatAtlas
		}
		st, err := Read(bytes.NewReader(b), format, func(ingest.Record) error { return nil })
		if err != nil {
			return // a line longer than maxLine, or an array broken off
		}
		if st.Records+st.Blank+st.NoTime != st.Lines || st.Malformed > st.Records {
			t.Fatalf("stats do not add up: %+v", st)
		}
	})
}

// A download of results cut short, plain or gzipped, on one line as the
// API gives it: the results before the cut are read, and the cut is an
// ingest.TornError naming where it fell.
func TestReadFileAtlasArrayCutShort(t *testing.T) {
	data, err := os.ReadFile("testdata/ping-results.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	array := "[" + strings.Join(lines, ",") + "]"
	cut := strings.Index(array, lines[3]) + len(lines[3])/2 // inside the fourth result
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"cut.atlas.json", []byte(array[:cut]), "the file ends inside result 4 of the array"},
		{"between.atlas.json", []byte(array[:strings.Index(array, lines[3])]), "the file ends after result 3 of the array, before its closing bracket"},
		{"cut.atlas.json.gz", gztest.Gzip([]byte(array))[:len(gztest.Gzip([]byte(array[:cut])))-30], "the file ends inside result"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, c.body, 0o644); err != nil {
			t.Fatal(err)
		}
		var recs []ingest.Record
		st, err := ReadFile(path, FormatAtlas, func(r ingest.Record) error { recs = append(recs, r); return nil })
		var torn *ingest.TornError
		if !errors.As(err, &torn) || !strings.Contains(err.Error(), c.want) || torn.Record != int64(len(recs)) ||
			st.Records != int64(len(recs)) || len(recs) < 3 {
			t.Fatalf("%s: %d records %+v, %v: want the whole results before the cut, and %q", c.name, len(recs), st, err, c.want)
		}
		for i, r := range recs {
			if string(r.Value) != lines[i] {
				t.Fatalf("%s: result %d is %.60s, want %.60s", c.name, i+1, r.Value, lines[i])
			}
		}
	}
}
