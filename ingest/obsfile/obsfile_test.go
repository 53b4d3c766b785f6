package obsfile

import (
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

const t0 = int64(1745836500) * 1e9 // 2025-04-28T10:35:00Z

func ob(t int64, sig obs.Signal, ent string, v float64) obs.Observation {
	return obs.Observation{Time: t, Signal: sig, Entity: ent, Value: v}
}

func TestJSONDecode(t *testing.T) {
	cases := []struct {
		in   string
		want obs.Observation
	}{
		{`{"time":"2025-04-28T10:35:00Z","entity":"country:PT","signal":"traffic_bytes","value":123.4}`,
			ob(t0, obs.TrafficBytes, "country:PT", 123.4)},
		{`{"time":1745836500,"entity":"country:pt","signal":"traffic_packets","value":7}`,
			ob(t0, obs.TrafficPackets, "country:PT", 7)},
		{`{"time":1745836500.123456789,"entity":"asn:AS5089","signal":"traffic_bytes","value":"0.5"}`,
			ob(t0+123456789, obs.TrafficBytes, "asn:5089", 0.5)},
		{`{"value":-2.5e3,"signal":"traffic_bytes","entity":"region:pt-11","time":"2025-04-28T12:35:00.5+02:00","labels":{"src":"radar"}}`,
			ob(t0+5e8, obs.TrafficBytes, "region:PT-11", -2500)},
		{`{"Time":"2025-04-28 10:35:00Z","Entity":"zone:VirginMedia.com.","Signal":"traffic_bytes","Value":1}`,
			ob(t0, obs.TrafficBytes, "zone:virginmedia.com", 1)},
		{`{"time":"1745836500","entity":"transit:1299@lis01","signal":"traffic_bytes","value":0}`,
			ob(t0, obs.TrafficBytes, "transit:1299@lis01", 0)},
		{`{"time":1.7458365e9,"entity":"dc:lis01","signal":"traffic_bytes","value":1e-3}`,
			ob(t0, obs.TrafficBytes, "dc:lis01", 0.001)},
	}
	d := NewJSONDecoder()
	for _, c := range cases {
		var got obs.Slice
		if err := d.Decode([]byte(c.in), &got); err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.in, got, c.want)
		}
	}
}

func TestCSVDecode(t *testing.T) {
	cases := []struct {
		in   string
		want []obs.Observation
	}{
		{"time,entity,signal,value", nil},
		{" Time , Entity ,signal,value\r\n", nil},
		{"2025-04-28T10:35:00Z,country:PT,traffic_bytes,123.4", []obs.Observation{ob(t0, obs.TrafficBytes, "country:PT", 123.4)}},
		{"1745836500,asn:5089,traffic_packets,42\r\n", []obs.Observation{ob(t0, obs.TrafficPackets, "asn:5089", 42)}},
		{`"2025-04-28T10:35:00.25Z", "transit:1299@lis01" ,traffic_bytes, 1e6`, []obs.Observation{ob(t0+25e7, obs.TrafficBytes, "transit:1299@lis01", 1e6)}},
		{`1745836500,"zone:a""b.example",traffic_bytes,1`, []obs.Observation{ob(t0, obs.TrafficBytes, `zone:a"b.example`, 1)}},
		{`1745836500,"site:x,y",traffic_bytes,1`, []obs.Observation{ob(t0, obs.TrafficBytes, "site:x,y", 1)}},
	}
	d := NewCSVDecoder()
	for _, c := range cases {
		var got obs.Slice
		if err := d.Decode([]byte(c.in), &got); err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual([]obs.Observation(got), c.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", c.in, got, c.want)
		}
	}
}

func TestMalformed(t *testing.T) {
	jsonCases := map[string]string{
		`{"time":"2025-04-28T10:35:00Z","entity":"country:PT","signal":"no_such_signal","value":1}`:    "signal",
		`{"time":"2025-04-28T10:35:00Z","entity":"countryPT","signal":"traffic_bytes","value":1}`:      "entity",
		`{"time":"2025-04-28T10:35:00Z","entity":":PT","signal":"traffic_bytes","value":1}`:            "entity",
		`{"time":"2025-04-28T10:35:00Z","entity":"asn:AS-1","signal":"traffic_bytes","value":1}`:       "entity",
		`{"time":"2025-04-28T10:35:00Z","entity":"asn:4294967296","signal":"traffic_bytes","value":1}`: "entity",
		`{"time":"yesterday","entity":"country:PT","signal":"traffic_bytes","value":1}`:                "time",
		`{"time":-5,"entity":"country:PT","signal":"traffic_bytes","value":1}`:                         "time",
		`{"time":1e300,"entity":"country:PT","signal":"traffic_bytes","value":1}`:                      "time",
		`{"time":"1960-01-01T00:00:00Z","entity":"country:PT","signal":"traffic_bytes","value":1}`:     "time",
		`{"time":true,"entity":"country:PT","signal":"traffic_bytes","value":1}`:                       "field_type",
		`{"time":1745836500,"entity":"country:PT","signal":"traffic_bytes","value":"NaN"}`:             ingest.ReasonNoValue,
		`{"time":1745836500,"entity":"country:PT","signal":"traffic_bytes","value":"+Inf"}`:            "value",
		`{"time":1745836500,"entity":"country:PT","signal":"traffic_bytes","value":"lots"}`:            "value",
		`{"time":1745836500,"entity":"country:PT","signal":"traffic_bytes","value":1e999}`:             "value",
		`{"time":1745836500,"entity":"country:PT","signal":"traffic_bytes","value":null}`:              ingest.ReasonNoValue,
		`{"time":1745836500,"entity":"country:PT","signal":"traffic_bytes","value":[1]}`:               "field_type",
		`{"time":1745836500,"entity":5,"signal":"traffic_bytes","value":1}`:                            "field_type",
		`{"time":1745836500,"entity":"country:PT","signal":"traffic_bytes"}`:                           "missing",
		`{"entity":"country:PT","signal":"traffic_bytes","value":1}`:                                   "missing",
		`{"time":1745836500,"signal":"traffic_bytes","value":1}`:                                       "missing",
		`{"time":1745836500,"entity":"country:PT","value":1}`:                                          "missing",
		`{"time":1745836500,"entity":"country:PT","signal":"traffic_bytes","value":1} {}`:              "json",
		`not json`: "json",
		``:         "json",
	}
	for in, reason := range jsonCases {
		var got obs.Slice
		err := NewJSONDecoder().Decode([]byte(in), &got)
		if r := ingest.Reason(err); r != reason || len(got) != 0 {
			t.Errorf("json %s: reason %q (%v), %d observations; want %q", in, r, err, len(got), reason)
		}
	}
	csvCases := map[string]string{
		"1745836500,country:PT,no_such_signal,1":   "signal",
		"1745836500,PT,traffic_bytes,1":            "entity",
		"soon,country:PT,traffic_bytes,1":          "time",
		"1745836500,country:PT,traffic_bytes,":     ingest.ReasonNoValue,
		"1745836500,country:PT,traffic_bytes,NaN":  ingest.ReasonNoValue,
		"1745836500,country:PT,traffic_bytes, nan": ingest.ReasonNoValue,
		"1745836500,country:PT,traffic_bytes,n/a":  "value",
		"1745836500,country:PT,traffic_bytes":      "csv",
		"1745836500,country:PT,traffic_bytes,1,2":  "csv",
		"1745836500,country:PT,traffic_bytes,1,":   "csv",
		`1745836500,"country:PT,traffic_bytes,1`:   "csv",
		`1745836500,"country:PT"x,traffic_bytes,1`: "csv",
		`1745836500,coun"try:PT,traffic_bytes,1`:   "csv",
		"":                                         "csv",
	}
	for in, reason := range csvCases {
		var got obs.Slice
		err := NewCSVDecoder().Decode([]byte(in), &got)
		if r := ingest.Reason(err); r != reason || len(got) != 0 {
			t.Errorf("csv %q: reason %q (%v), %d observations; want %q", in, r, err, len(got), reason)
		}
	}
}

func TestParseTime(t *testing.T) {
	good := map[string]int64{
		"1745836500":                       t0,
		"1745836500.5":                     t0 + 5e8,
		"1745836500.123456789987":          t0 + 123456789,
		"1745836500.":                      t0,
		"1.7458365e9":                      t0,
		"0":                                0,
		"2025-04-28T10:35:00Z":             t0,
		"2025-04-28T11:35:00.000001+01:00": t0 + 1000,
		"2025-04-28 10:35:00Z":             t0,
		"9223372035":                       9223372035e9,
	}
	for in, want := range good {
		got, err := ParseTime(in)
		if err != nil || got != want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "9223372036", "1e10", "abc", "2025-04-28", "2025-04-28T10:35:00", "0x10", "1745836500.5.5", "NaN", "Inf"} {
		if got, err := ParseTime(in); ingest.Reason(err) != "time" {
			t.Errorf("ParseTime(%q) = %d, %v; want a time error", in, got, err)
		}
	}
	// The two mistakes an export makes most are named as such: a time
	// with no zone, and a time in milliseconds.
	for in, says := range map[string]string{
		"2025-04-28T10:35:00":     `has no zone: write UTC as 2025-04-28T10:35:00Z`,
		"2025-04-28 10:35:00.250": `has no zone: write UTC as 2025-04-28 10:35:00.250Z`,
		"1745836500000":           `as seconds: a time in ms, µs or ns must be given in seconds`,
	} {
		if _, err := ParseTime(in); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseTime(%q): %v; want it to say %q", in, err, says)
		}
	}
}

// A file whose lines have no readable time says why in its summary.
func TestReadSaysWhyATimeIsUnreadable(t *testing.T) {
	in := "time,entity,signal,value\n2025-04-28 10:35:00,country:PT,traffic_bytes,3\n"
	st, err := Read(strings.NewReader(in), FormatCSV, func(ingest.Record) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.BadTime != 1 || st.FirstBadTime != 2 || !strings.Contains(st.FirstTimeErr, "has no zone") {
		t.Fatalf("stats %+v", st)
	}
	st, _ = Read(strings.NewReader(`{"entity":"country:PT"}`), FormatJSON, func(ingest.Record) error { return nil })
	if st.FirstBadTime != 1 || !strings.Contains(st.FirstTimeErr, "no time") {
		t.Fatalf("stats %+v", st)
	}
}

func TestRegistered(t *testing.T) {
	for format, line := range map[string]string{
		FormatJSON: `{"time":1745836500,"entity":"country:PT","signal":"traffic_bytes","value":3}`,
		FormatCSV:  `1745836500,country:PT,traffic_bytes,3`,
	} {
		d, err := ingest.NewDecoder(Stream, format, &ingest.Env{})
		if err != nil {
			t.Fatal(err)
		}
		var got obs.Slice
		if err := d.Decode([]byte(line), &got); err != nil || len(got) != 1 || got[0] != ob(t0, obs.TrafficBytes, "country:PT", 3) {
			t.Errorf("%s: %v %+v", format, err, got)
		}
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".gz") {
		zw := gzip.NewWriter(f)
		if _, err := zw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	} else if _, err := f.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadFile(t *testing.T) {
	jsonl := `{"time":"2025-04-28T10:35:00Z","entity":"country:PT","signal":"traffic_bytes","value":1}

{"time":1745836800,"entity":"country:ES","signal":"traffic_bytes","value":2}
{"time":"later","entity":"country:ES","signal":"traffic_bytes","value":3}
not json at all
{"time":1745837100,"entity":"country:ES","signal":"no_such_signal","value":4}
`
	csvText := "time,entity,signal,value\r\n" +
		"2025-04-28T10:35:00Z,country:PT,traffic_bytes,1\r\n" +
		"\r\n" +
		"1745836800,country:ES,traffic_bytes,2\r\n" +
		"later,country:ES,traffic_bytes,3\r\n" +
		"1745836800,\"country:ES\r\n" +
		"1745837100,country:ES,no_such_signal,4" // no final newline
	wantTimes := []int64{t0, t0 + 300e9, t0 + 600e9}
	wantOffsets := []int64{1, 3, 6}
	for _, c := range []struct {
		name, content, format string
		header                int64
	}{
		{"a.jsonl", jsonl, FormatJSON, 0},
		{"a.jsonl.gz", jsonl, FormatJSON, 0},
		{"a.CSV", csvText, FormatCSV, 1},
		{"a.csv.gz", csvText, FormatCSV, 1},
	} {
		p := writeFile(t, c.name, c.content)
		var recs []ingest.Record
		st, err := ReadFileStats(p, func(r ingest.Record) error { recs = append(recs, r); return nil })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		offsets := wantOffsets
		if c.format == FormatCSV {
			offsets = []int64{2, 4, 7}
		}
		// Lines with no time read are counted by why: a time that does not
		// parse, and a line that is no JSON, or no CSV of four fields.
		why := map[string]int64{"time": 1, "json": 1}
		if c.format == FormatCSV {
			why = map[string]int64{"time": 1, "csv": 1}
		}
		want := ReadStats{Lines: 6 + c.header, Records: 3, Blank: 1, Header: c.header, BadTime: 2, BadWhy: why, FirstBadTime: 4 + c.header,
			FirstTimeErr: `time: time "later" is neither RFC 3339 nor Unix seconds`}
		if !reflect.DeepEqual(st, want) {
			t.Errorf("%s: stats %+v, want %+v", c.name, st, want)
		}
		if len(recs) != 3 {
			t.Fatalf("%s: %d records", c.name, len(recs))
		}
		// The records decode with the decoder of their format, except the
		// last, whose signal is unknown: that is the pipeline's to count.
		d, _ := ingest.NewDecoder(Stream, c.format, &ingest.Env{})
		for i, r := range recs {
			if r.Stream != Stream || r.Format != c.format || r.Time != wantTimes[i] || r.Offset != offsets[i] {
				t.Errorf("%s record %d: %+v", c.name, i, r)
			}
			var got obs.Slice
			err := d.Decode(r.Value, &got)
			if i < 2 && (err != nil || len(got) != 1 || got[0].Time != r.Time || got[0].Value != float64(i+1)) {
				t.Errorf("%s record %d: %v %+v", c.name, i, err, got)
			}
			if i == 2 && ingest.Reason(err) != "signal" {
				t.Errorf("%s record 2: %v", c.name, err)
			}
		}
	}
}

func TestReadFileErrors(t *testing.T) {
	if err := ReadFile(filepath.Join(t.TempDir(), "x.txt"), func(ingest.Record) error { return nil }); err == nil {
		t.Error("accepted a .txt file")
	}
	if err := ReadFile(filepath.Join(t.TempDir(), "missing.csv"), func(ingest.Record) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	notGzip := filepath.Join(t.TempDir(), "bad.csv.gz")
	if err := os.WriteFile(notGzip, []byte("1,country:PT,traffic_bytes,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ReadFile(notGzip, func(ingest.Record) error { return nil }); err == nil {
		t.Error("accepted a .gz file that is not gzip")
	}
	stop := errors.New("stop")
	p := writeFile(t, "s.csv", "1,country:PT,traffic_bytes,1\n2,country:PT,traffic_bytes,1\n")
	n := 0
	err := ReadFile(p, func(ingest.Record) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("callback error: %v after %d records", err, n)
	}
	long := writeFile(t, "long.jsonl", strings.Repeat("x", maxLine+1)+"\n")
	if err := ReadFile(long, func(ingest.Record) error { return nil }); err == nil {
		t.Error("accepted a line longer than maxLine")
	}
}

func FuzzJSONDecode(f *testing.F) {
	for _, s := range []string{
		`{"time":"2025-04-28T10:35:00Z","entity":"country:PT","signal":"traffic_bytes","value":123.4}`,
		`{"time":1745836500.123456789,"entity":"asn:AS5089","signal":"traffic_bytes","value":"0.5"}`,
		`{"time":-5,"entity":"x","signal":"y","value":null}`, `{}`, ``, `[`,
		`{"time":1745836500,"entity":" asn:AS5089 ","signal":"traffic_packets","value":"1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got obs.Slice
		err := NewJSONDecoder().Decode(data, &got)
		var ie *ingest.Error
		if err != nil {
			if !errors.As(err, &ie) || len(got) != 0 {
				t.Fatalf("%q: error %v with %d observations", data, err, len(got))
			}
			return
		}
		if !json.Valid(data) || len(got) != 1 {
			t.Fatalf("%q accepted: %+v", data, got)
		}
		checkObservation(t, got[0])
		checkNumbered(t, NewJSONDecoder(), data, got[0])
		// What the file reader takes as the time is what the decoder uses.
		if tm, err := jsonLineTime(data); err != nil || tm != got[0].Time {
			t.Fatalf("%q: reader time %d %v, decoder %d", data, tm, err, got[0].Time)
		}
	})
}

func checkObservation(t *testing.T, o obs.Observation) {
	t.Helper()
	if _, _, err := obs.SplitEntity(o.Entity); err != nil || o.Signal == 0 || o.Time < 0 {
		t.Fatalf("bad observation %+v", o)
	}
	if again, err := normalizeEntity(o.Entity); err != nil || again != o.Entity {
		t.Fatalf("entity %q not normal: %q %v", o.Entity, again, err)
	}
}

// checkNumbered decodes data twice with d into a sink that numbers its
// series: both times it must give want, the second time by number (but
// for a custom signal, which is never numbered).
func checkNumbered(t *testing.T, d interface {
	Decode([]byte, obs.Sink) error
}, data []byte, want obs.Observation) {
	t.Helper()
	rec := newRecorder(300e9)
	for range 2 {
		if err := d.Decode(data, rec); err != nil {
			t.Fatalf("%q: %v into a numbering sink", data, err)
		}
	}
	wantNumbered := 1
	if want.Signal.Def().Agg == obs.Custom {
		wantNumbered = 0
	}
	if len(rec.got) != 2 || rec.got[0] != want || rec.got[1] != want || rec.byNumber != wantNumbered {
		t.Fatalf("%q: numbered %+v (%d by number), by name %+v", data, rec.got, rec.byNumber, want)
	}
}

func FuzzCSVDecode(f *testing.F) {
	for _, s := range []string{
		"2025-04-28T10:35:00Z,country:PT,traffic_bytes,123.4",
		`"1745836500.5", "zone:a""b" ,traffic_packets,1e3` + "\r\n",
		"time,entity,signal,value", ",,,", `"`, "a,b",
		"1745836500, asn:as5089 ,traffic_bytes,1", `1745836500,"country:pt",traffic_packets,-0`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got obs.Slice
		err := NewCSVDecoder().Decode(data, &got)
		var ie *ingest.Error
		if err != nil {
			if !errors.As(err, &ie) || len(got) != 0 {
				t.Fatalf("%q: error %v with %d observations", data, err, len(got))
			}
			return
		}
		if len(got) == 0 {
			return // the header row
		}
		checkObservation(t, got[0])
		checkNumbered(t, NewCSVDecoder(), data, got[0])
		// encoding/csv must read the same four fields (it is stricter about
		// blanks around quotes, so only compare when it reads the line).
		r := csv.NewReader(strings.NewReader(string(data)))
		r.FieldsPerRecord = 4
		if rec, err := r.Read(); err == nil {
			sig, _ := obs.Lookup(strings.TrimSpace(rec[2]))
			tm, terr := ParseTime(rec[0])
			if terr != nil || sig != got[0].Signal || tm != got[0].Time {
				t.Fatalf("%q: encoding/csv reads %q", data, rec)
			}
		}
	})
}
