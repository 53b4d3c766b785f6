package replay

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/outagewatch/outagewatch/ingest"
)

// Limits of one in-memory run of the external sort. A file holds at most
// this much in memory at a time, whatever its length: an export of two
// weeks replays in the memory of one of an hour. The defaults keep a run
// near 32 MiB for the record sizes seen in exports and MRT files.
var (
	runRecords = 1 << 17
	runBytes   = 24 << 20
	// maxRuns is how many spilled runs are merged at once; more are first
	// merged into one, so that a file never holds more than this many open.
	maxRuns = 64
)

// recordOverhead approximates what a record costs in memory beyond its
// key, value and headers (the struct, its pointer, string headers).
const recordOverhead = 160

// sorter orders the records of one file by event time in bounded memory:
// records are gathered into runs, each run is sorted and, once the file is
// longer than one run, written to an unnamed temporary file; the runs are
// then read back through a k-way merge. A run that starts no earlier than
// the previous one ended is appended to it, so a file already in time
// order becomes a single run. Ties keep file order, as a stable sort would.
type sorter struct {
	name  string
	buf   []*ingest.Record
	bytes int
	runs  []*runFile
	n     int
}

// runFile is one sorted run on disk.
type runFile struct {
	f    *os.File
	w    *bufio.Writer
	last int64 // time of the last record written
}

func newSorter(name string) *sorter { return &sorter{name: name} }

// add takes one record; it may spill a full run to disk.
func (s *sorter) add(r *ingest.Record) error {
	s.buf = append(s.buf, r)
	s.n++
	s.bytes += recordOverhead + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		s.bytes += len(h.Key) + len(h.Value) + 40
	}
	if len(s.buf) >= runRecords || s.bytes >= runBytes {
		return s.spill()
	}
	return nil
}

// spill sorts the buffered run and writes it to disk.
func (s *sorter) spill() error {
	if len(s.buf) == 0 {
		return nil
	}
	sortRecords(s.buf)
	var rf *runFile
	if k := len(s.runs); k > 0 && s.runs[k-1].last <= s.buf[0].Time {
		rf = s.runs[k-1]
	} else {
		if len(s.runs) >= maxRuns {
			if err := s.compact(); err != nil {
				return err
			}
			return s.spill()
		}
		var err error
		if rf, err = newRunFile(); err != nil {
			return fmt.Errorf("%s: spill: %w", s.name, err)
		}
		s.runs = append(s.runs, rf)
	}
	rf.last = s.buf[len(s.buf)-1].Time
	for i, r := range s.buf {
		if err := writeRecord(rf.w, r); err != nil {
			return fmt.Errorf("%s: spill: %w", s.name, err)
		}
		s.buf[i] = nil
	}
	s.buf = s.buf[:0]
	s.bytes = 0
	return nil
}

// compact merges every spilled run into one, earliest read first, so that
// ties keep file order.
func (s *sorter) compact() error {
	out, err := newRunFile()
	if err != nil {
		return fmt.Errorf("%s: spill: %w", s.name, err)
	}
	m, err := s.mergeRuns()
	if err != nil {
		return err
	}
	for {
		r, err := m.Next()
		if err != nil {
			return err
		}
		if r == nil {
			break
		}
		if err := writeRecord(out.w, r); err != nil {
			return fmt.Errorf("%s: spill: %w", s.name, err)
		}
		out.last = r.Time
	}
	for _, rf := range s.runs {
		rf.f.Close()
	}
	s.runs = []*runFile{out}
	return nil
}

// mergeRuns flushes the runs and opens a merge over them.
func (s *sorter) mergeRuns() (*Merge, error) {
	srcs := make([]Source, len(s.runs))
	for i, rf := range s.runs {
		if err := rf.w.Flush(); err != nil {
			return nil, fmt.Errorf("%s: spill: %w", s.name, err)
		}
		if _, err := rf.f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: spill: %w", s.name, err)
		}
		srcs[i] = &runSource{name: s.name, f: rf.f, r: bufio.NewReaderSize(rf.f, 64<<10), strs: map[string]string{}}
	}
	return NewMerge(srcs...)
}

// source returns the file's records in time order: from memory when the
// file fitted in one run, else merged from the runs on disk.
func (s *sorter) source() (Source, error) {
	if len(s.runs) == 0 {
		sortRecords(s.buf)
		src := NewSliceSource(s.name, s.buf)
		s.buf = nil
		return src, nil
	}
	if err := s.spill(); err != nil {
		return nil, err
	}
	m, err := s.mergeRuns()
	if err != nil {
		return nil, err
	}
	return &spilledSource{Merge: m, name: s.name, n: s.n}, nil
}

// close drops the runs of a sorter whose file failed to read.
func (s *sorter) close() {
	for _, rf := range s.runs {
		rf.f.Close()
	}
	s.runs, s.buf = nil, nil
}

// spilledSource is a file's records merged back from its sorted runs.
type spilledSource struct {
	*Merge
	name string
	n    int
}

func (s *spilledSource) Name() string { return s.name }

// Len is the number of records in the source.
func (s *spilledSource) Len() int { return s.n }

// newRunFile creates a temporary file and unlinks it at once: it lives as
// long as the open handle, so an interrupted replay leaves nothing behind.
func newRunFile() (*runFile, error) {
	f, err := os.CreateTemp("", "outagewatch-run-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name()) // not possible everywhere; the handle works either way
	return &runFile{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// runSource reads one run back.
type runSource struct {
	name string
	f    *os.File
	r    *bufio.Reader
	strs map[string]string // stream, format and topic names, shared
	done bool
}

func (s *runSource) Name() string { return s.name }

func (s *runSource) Next() (*ingest.Record, error) {
	if s.done {
		return nil, nil
	}
	r, err := readRecord(s.r, s.strs)
	if err == io.EOF {
		s.done = true
		s.f.Close()
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	return r, nil
}

// The run encoding: each record as uvarint-length-prefixed strings and
// bytes and varint numbers, in field order. It is read back only by the
// process that wrote it.
func writeRecord(w *bufio.Writer, r *ingest.Record) error {
	var b [binary.MaxVarintLen64]byte
	putBytes := func(p []byte) {
		w.Write(b[:binary.PutUvarint(b[:], uint64(len(p)))])
		w.Write(p)
	}
	putString := func(p string) {
		w.Write(b[:binary.PutUvarint(b[:], uint64(len(p)))])
		w.WriteString(p)
	}
	putString(r.Stream)
	putString(r.Format)
	putString(r.Topic)
	w.Write(b[:binary.PutVarint(b[:], int64(r.Partition))])
	w.Write(b[:binary.PutVarint(b[:], r.Offset)])
	w.Write(b[:binary.PutVarint(b[:], r.Time)])
	putBytes(r.Key)
	putBytes(r.Value)
	w.Write(b[:binary.PutUvarint(b[:], uint64(len(r.Headers)))])
	for _, h := range r.Headers {
		putString(h.Key)
		putBytes(h.Value)
	}
	// bufio.Writer keeps its first error and returns it from every call.
	_, err := w.Write(nil)
	return err
}

var errShortRun = errors.New("truncated run")

func readRecord(r *bufio.Reader, strs map[string]string) (*ingest.Record, error) {
	first := true
	var err error
	uv := func() uint64 {
		if err != nil {
			return 0
		}
		var v uint64
		v, err = binary.ReadUvarint(r)
		if (err == io.EOF && !first) || err == io.ErrUnexpectedEOF {
			err = errShortRun
		}
		first = false
		return v
	}
	sv := func() int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = binary.ReadVarint(r)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = errShortRun
		}
		return v
	}
	bytes := func() []byte {
		n := uv()
		if err != nil || n == 0 {
			return nil
		}
		p := make([]byte, n)
		if _, err = io.ReadFull(r, p); err == io.EOF || err == io.ErrUnexpectedEOF {
			err = errShortRun
		}
		return p
	}
	str := func() string {
		n := uv()
		if err != nil || n == 0 {
			return ""
		}
		p, perr := r.Peek(int(n))
		if perr != nil {
			// longer than the buffer or cut short: read it whole
			q := make([]byte, n)
			if _, err = io.ReadFull(r, q); err != nil {
				err = errShortRun
				return ""
			}
			return string(q)
		}
		s, ok := strs[string(p)]
		if !ok {
			s = string(p)
			if len(strs) < 1024 {
				strs[s] = s
			}
		}
		r.Discard(int(n))
		return s
	}
	rec := &ingest.Record{}
	rec.Stream = str()
	rec.Format = str()
	rec.Topic = str()
	rec.Partition = int32(sv())
	rec.Offset = sv()
	rec.Time = sv()
	rec.Key = bytes()
	rec.Value = bytes()
	if nh := uv(); err == nil && nh > 0 {
		rec.Headers = make([]ingest.Header, nh)
		for i := range rec.Headers {
			rec.Headers[i].Key = str()
			rec.Headers[i].Value = bytes()
		}
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}
