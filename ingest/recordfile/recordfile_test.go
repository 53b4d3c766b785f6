package recordfile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
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
	if err := Read(bytes.NewReader(b.Bytes()), func(r *ingest.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample()) {
		t.Fatalf("read back %+v, want %+v", got, sample())
	}

	dir := t.TempDir()
	gzPath := filepath.Join(dir, "x"+Ext+".gz")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b.Bytes())
	zw.Close()
	if err := os.WriteFile(gzPath, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got = nil
	if err := ReadFile(gzPath, func(r *ingest.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample()) {
		t.Fatalf("gzipped: read back %+v", got)
	}
}

// A damaged line stops the read with the file and line named; the records
// before it were delivered, and an error of the callback comes back as is.
func TestBadLine(t *testing.T) {
	var b bytes.Buffer
	Write(&b, sample()[0])
	b.WriteString("{\"stream\": \n")
	Write(&b, sample()[1])
	path := filepath.Join(t.TempDir(), "bad"+Ext)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := ReadFile(path, func(*ingest.Record) error { n++; return nil })
	if err == nil || !strings.HasPrefix(err.Error(), path+":2: ") || n != 1 {
		t.Fatalf("err %v after %d records, want %s:2: ... after 1", err, n, path)
	}
	stop := errors.New("stop")
	if err := Read(bytes.NewReader(b.Bytes()), func(*ingest.Record) error { return stop }); err != stop {
		t.Fatalf("callback error came back as %v", err)
	}
}
