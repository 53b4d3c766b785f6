package recordfile

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
)

func sample() []*ingest.Record {
	return []*ingest.Record{
		{Stream: "flows", Format: "netflow", Topic: "outagewatch.flows", Partition: 2, Offset: 41, Time: 1610535600e9,
			Key: []byte("lis01"), Headers: []ingest.Header{{Key: "format", Value: []byte("netflow")}}, Value: []byte{0, 9, 0xff}},
		{Stream: "bgp", Format: "bmp", Topic: "outagewatch.bgp", Offset: 7, Time: 1610535601e9 + 5, Value: []byte("x")},
	}
}

// Written records read back field for field, in file order, plain and
// gzipped.
func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	for _, r := range sample() {
		if err := Write(&b, r); err != nil {
			t.Fatal(err)
		}
	}
	var got []*ingest.Record
	if _, err := Read(bytes.NewReader(b.Bytes()), func(r *ingest.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample()) {
		t.Fatalf("read back %+v, want %+v", got, sample())
	}

	dir := t.TempDir()
	gzPath := filepath.Join(dir, "x"+Ext+".gz")
	if err := os.WriteFile(gzPath, gztest.Gzip(b.Bytes()), 0o644); err != nil {
		t.Fatal(err)
	}
	got = nil
	if _, err := ReadFile(gzPath, func(r *ingest.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample()) {
		t.Fatalf("gzipped: read back %+v", got)
	}
}

// A damaged line is counted and skipped, with its number and why: the
// records after it are still delivered. An error of the callback stops
// the read and comes back as is.
func TestBadLine(t *testing.T) {
	var b bytes.Buffer
	Write(&b, sample()[0])
	b.WriteString("{\"stream\": \n")
	Write(&b, sample()[1])
	path := filepath.Join(t.TempDir(), "bad"+Ext)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []*ingest.Record
	st, err := ReadFile(path, func(r *ingest.Record) error { got = append(got, r); return nil })
	if err != nil || !reflect.DeepEqual(got, sample()) {
		t.Fatalf("err %v, read %+v: want both records", err, got)
	}
	if st.Lines != 3 || st.Bad != 1 || st.FirstBad != 2 || !strings.Contains(st.FirstErr, "unexpected end of JSON") {
		t.Fatalf("stats %+v, want 3 lines, line 2 bad", st)
	}
	stop := errors.New("stop")
	if _, err := Read(bytes.NewReader(b.Bytes()), func(*ingest.Record) error { return stop }); err != stop {
		t.Fatalf("callback error came back as %v", err)
	}
}

// A gzipped recording cut short (the recorder killed before it closed
// the file) is read to its last whole line: every record before it comes
// back, in order, and the cut is an *ingest.TornError naming the next
// line. A plain file cut mid-line reads the same way, with no error: its
// torn last line is counted bad.
func TestRecordingCutShort(t *testing.T) {
	var b bytes.Buffer
	var want []*ingest.Record
	for i := range 200 {
		r := *sample()[i%2]
		r.Offset = int64(i)
		want = append(want, &r)
		if err := Write(&b, &r); err != nil {
			t.Fatal(err)
		}
	}
	z := gztest.Gzip(b.Bytes())
	dir := t.TempDir()

	path := filepath.Join(dir, "cut"+Ext+".gz")
	if err := os.WriteFile(path, z[:len(z)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	var got []*ingest.Record
	st, err := ReadFile(path, func(r *ingest.Record) error { got = append(got, r); return nil })
	var torn *ingest.TornError
	if !errors.As(err, &torn) || torn.Record != int64(len(got)) || len(got) < 50 || !reflect.DeepEqual(got, want[:len(got)]) ||
		st.Bad != 0 || st.Lines != int64(len(got)) {
		t.Fatalf("gzipped, cut: %d records, stats %+v, err %v", len(got), st, err)
	}

	// The plain file is cut twenty bytes into a line.
	plain := b.Bytes()[:bytes.LastIndexByte(b.Bytes()[:b.Len()*2/3], '\n')+21]
	path = filepath.Join(dir, "cut"+Ext)
	if err := os.WriteFile(path, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	got = nil
	st, err = ReadFile(path, func(r *ingest.Record) error { got = append(got, r); return nil })
	whole := bytes.Count(plain, []byte("\n"))
	if err != nil || !reflect.DeepEqual(got, want[:whole]) || st.Bad != 1 || st.FirstBad != int64(whole+1) || st.Lines != int64(whole+1) {
		t.Fatalf("plain, cut: %d records, stats %+v, err %v: want %d, the last line bad", len(got), st, err, whole)
	}
}

// FuzzRead: any bytes give records or counted bad lines, never a panic,
// and every line is either.
func FuzzRead(f *testing.F) {
	var b bytes.Buffer
	for _, r := range sample() {
		Write(&b, r)
	}
	f.Add(b.Bytes())
	f.Add([]byte("{\"stream\": \n{}\n\n"))
	f.Add([]byte(`{"value":"not base64!"}`))
	f.Add(b.Bytes()[:b.Len()/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		n := int64(0)
		st, err := Read(bytes.NewReader(data), func(*ingest.Record) error { n++; return nil })
		if err != nil {
			return // a line over the limit
		}
		if st.Lines != n+st.Bad || (st.Bad > 0) != (st.FirstBad > 0) {
			t.Fatalf("stats %+v after %d records", st, n)
		}
	})
}
