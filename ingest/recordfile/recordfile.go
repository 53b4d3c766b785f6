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
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/linefile"
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

// Stats is what Read made of a file.
type Stats struct {
	// Lines is the number of lines read, bad ones included.
	Lines int64
	// Bad counts the lines that are no record, skipped; FirstBad is the
	// number (from 1) of the first of them, and FirstErr why.
	Bad      int64
	FirstBad int64
	FirstErr string
}

// Read calls fn with each record of a record file read from r, in file
// order, until the end of r or the first error fn returns, which comes
// back as it is. A line that is not a record (damage, or the torn last
// line of a recording cut short) is counted in the stats and skipped:
// the records after it are still delivered.
func Read(r io.Reader, fn func(*ingest.Record) error) (Stats, error) {
	var st Stats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	for sc.Scan() {
		st.Lines++
		var fr fileRecord
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			st.Bad++
			if st.FirstBad == 0 {
				st.FirstBad, st.FirstErr = st.Lines, err.Error()
			}
			continue
		}
		rec := &ingest.Record{Stream: fr.Stream, Format: fr.Format, Topic: fr.Topic, Partition: fr.Partition,
			Offset: fr.Offset, Time: fr.Time, Key: fr.Key, Value: fr.Value}
		for _, h := range fr.Headers {
			rec.Headers = append(rec.Headers, ingest.Header{Key: h.Key, Value: h.Value})
		}
		if err := fn(rec); err != nil {
			return st, err
		}
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("line %d: %w", st.Lines+1, err)
	}
	return st, nil
}

// ReadFile is Read of the file at path, gunzipped when path ends in
// ".gz". Errors name the file. A gzipped recording cut short (the
// recorder killed before it closed the file) is read to its last whole
// line, and the error is then an *ingest.TornError (see linefile).
func ReadFile(path string, fn func(*ingest.Record) error) (Stats, error) {
	return linefile.ReadFile("recordfile", path, strings.HasSuffix(path, ".gz"), func(r io.Reader) (Stats, error) {
		return Read(r, fn)
	})
}
