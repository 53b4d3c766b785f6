// Package recordfile reads and writes record files (".owrec"): JSON lines,
// one Kafka record each, with its topic, partition, offset, timestamp, key,
// headers and value (base64), and the stream and format it was consumed
// as. The live service writes them (`outagewatch record`, the service's
// record option), replay reads them, and `outagewatch produce` plays them
// back into Kafka; the format sits with the other wire formats so that
// none of those needs another's package to use it.
package recordfile

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/outagewatch/outagewatch/ingest"
)

// Ext is the extension of record files; Ext+".gz" is a gzipped one.
const Ext = ".owrec"

type fileRecord struct {
	Stream    string       `json:"stream"`
	Format    string       `json:"format"`
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Time      int64        `json:"time_ns"`
	Key       []byte       `json:"key,omitempty"`
	Headers   []fileHeader `json:"headers,omitempty"`
	Value     []byte       `json:"value"`
}

type fileHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Write appends one record to a record file.
func Write(w io.Writer, r *ingest.Record) error {
	fr := fileRecord{Stream: r.Stream, Format: r.Format, Topic: r.Topic, Partition: r.Partition,
		Offset: r.Offset, Time: r.Time, Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		fr.Headers = append(fr.Headers, fileHeader{h.Key, h.Value})
	}
	b, err := json.Marshal(&fr)
	if err != nil {
		return fmt.Errorf("recordfile: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// maxLine bounds one line of a record file: a record value larger than
// this (about 48 MB once base64-encoded) is more than Kafka's default
// limit of 1 MB by far, so a longer line is damage, not data.
const maxLine = 64 << 20

// Read calls fn with each record of a record file read from r, in file
// order, and stops at the first line that is not a record, or the first
// error fn returns. A bad line's error names its line number (from 1).
func Read(r io.Reader, fn func(*ingest.Record) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	line := 0
	for sc.Scan() {
		line++
		var fr fileRecord
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			return &LineError{Line: line, Err: err}
		}
		rec := &ingest.Record{Stream: fr.Stream, Format: fr.Format, Topic: fr.Topic, Partition: fr.Partition,
			Offset: fr.Offset, Time: fr.Time, Key: fr.Key, Value: fr.Value}
		for _, h := range fr.Headers {
			rec.Headers = append(rec.Headers, ingest.Header{Key: h.Key, Value: h.Value})
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return sc.Err()
}

// LineError is a line of a record file that is not a record.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// ReadFile is Read of the file at path, gunzipped when path ends in
// ".gz". Errors name the file, and the line for a bad line
// ("flows.owrec:12: ...").
func ReadFile(path string, fn func(*ingest.Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	err = Read(r, fn)
	if le, ok := err.(*LineError); ok {
		return fmt.Errorf("%s:%d: %w", path, le.Line, le.Err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
