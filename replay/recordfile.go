package replay

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

// RecordFileExt is the extension of files written by `outagewatch record`:
// JSON lines, one Kafka record each, with its topic, partition, offset,
// timestamp, key, headers and value (base64), and the stream and format
// it was consumed as, so a live incident can be replayed later.
const RecordFileExt = ".owrec"

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

// WriteRecord appends one record to a record file.
func WriteRecord(w io.Writer, r *ingest.Record) error {
	fr := fileRecord{Stream: r.Stream, Format: r.Format, Topic: r.Topic, Partition: r.Partition,
		Offset: r.Offset, Time: r.Time, Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		fr.Headers = append(fr.Headers, fileHeader{h.Key, h.Value})
	}
	b, err := json.Marshal(&fr)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// RecordFileSource reads a record file (optionally gzipped). Records of one
// file are replayed in file order; a file recorded from several partitions
// is sorted by time first (in bounded memory, see FromFile) so the merge
// sees it in order. Its summary counts
// what the pipeline made of the records.
type RecordFileSource struct {
	*FileSource
}

// OpenRecordFile reads a record file into a time-ordered source.
func OpenRecordFile(path string) (*RecordFileSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	so := newSorter(path)
	line := 0
	for sc.Scan() {
		line++
		var fr fileRecord
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			so.close()
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		rec := &ingest.Record{Stream: fr.Stream, Format: fr.Format, Topic: fr.Topic, Partition: fr.Partition,
			Offset: fr.Offset, Time: fr.Time, Key: fr.Key, Value: fr.Value}
		for _, h := range fr.Headers {
			rec.Headers = append(rec.Headers, ingest.Header{Key: h.Key, Value: h.Value})
		}
		if err := so.add(rec); err != nil {
			so.close()
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		so.close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	n := so.n
	src, err := so.source()
	if err != nil {
		so.close()
		return nil, err
	}
	fs := &FileSource{Source: src, n: n,
		sum: FileSummary{File: path, Unit: "record", Recorded: true, Read: int64(n)}}
	return &RecordFileSource{fs}, nil
}
