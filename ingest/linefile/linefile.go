// Package linefile reads the one-record-a-line files that outagewatch
// replays (measurements, observations), plain or gzipped, so that every
// replay reader opens, buffers and bounds its lines the same way and
// reports errors with the file and line they came from.
package linefile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/outagewatch/outagewatch/ingest"
)

// ReadFile opens path, gunzips it when gz is set, and hands the reader to
// read, past a leading UTF-8 byte order mark (SkipBOM). Errors are
// prefixed with prefix (the package reading) and, once the file is open,
// with path; the cause stays wrapped for errors.Is.
//
// A gzipped file cut short (a download or a recording cut off) is read to
// its last whole line, and the error is then an *ingest.TornError naming
// the line the cut fell in, with the stats read returned: a caller keeps
// what was read, as it was whole.
func ReadFile[S any](prefix, path string, gz bool, read func(io.Reader) (S, error)) (S, error) {
	return readFile(prefix, path, gz, true, read)
}

// ReadDocument is ReadFile for a file that is one document rather than
// lines (a JSON array of results, an API's response), which is often a
// single line: cut to its last whole line, a cut one would be nothing. A
// gzipped one cut short is handed on to the cut, where the reader fails
// with io.ErrUnexpectedEOF; read keeps the whole parts before it and says
// so with an *ingest.TornError.
func ReadDocument[S any](prefix, path string, gz bool, read func(io.Reader) (S, error)) (S, error) {
	return readFile(prefix, path, gz, false, read)
}

func readFile[S any](prefix, path string, gz, lines bool, read func(io.Reader) (S, error)) (st S, err error) {
	var zero S
	f, err := os.Open(path)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", prefix, err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 64<<10)
	if gz {
		zr, zerr := gzip.NewReader(r)
		if zerr != nil {
			return zero, fmt.Errorf("%s: %s: %w", prefix, path, zerr)
		}
		defer zr.Close()
		r = zr
		if lines {
			wl := NewWholeLines(zr)
			r = wl
			defer func() {
				terr := wl.Torn()
				switch {
				case terr == nil:
				case err == nil:
					// What read took in ends at the last whole line.
					err = fmt.Errorf("%s: %s: %w", prefix, path, terr)
				default:
					// Nothing whole enough was read: the cut is why.
					err = fmt.Errorf("%w; cut short: %v", err, terr)
				}
			}()
		}
	}
	st, err = read(SkipBOM(r))
	if err != nil {
		return st, fmt.Errorf("%s: %s: %w", prefix, path, err)
	}
	return st, nil
}

// utf8BOM is the byte order mark some programs write at the head of a
// UTF-8 text file.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// SkipBOM returns r without a leading UTF-8 byte order mark, which
// spreadsheets write at the head of a CSV they save ("CSV UTF-8"). Read
// as text it is part of the first column's name (a header of
// "\ufefftimestamp" is no IODA export) or of the first value.
func SkipBOM(r io.Reader) io.Reader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	if b, _ := br.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	return br
}

// WholeLines passes a decompressed stream on a whole line at a time, so
// that a stream cut short (a download or a recording cut off: the
// decompressor's io.ErrUnexpectedEOF) ends at its last whole line. The
// part of a line before the cut is never handed on: a CSV row cut inside
// its last number still parses, as another number. At the cut it reports
// io.EOF, and Torn says where the stream was cut.
type WholeLines struct {
	r io.Reader
	// buf[start:ready] is whole lines not yet handed on, buf[ready:end]
	// the part of a line read past them: each byte is copied in once and
	// out once, and only a part line moves to the head.
	buf               []byte
	start, ready, end int
	torn, done        bool
	lines             int64 // whole lines handed on
}

// NewWholeLines reads the decompressed stream r a whole line at a time.
func NewWholeLines(r io.Reader) *WholeLines {
	return &WholeLines{r: r, buf: make([]byte, 64<<10)}
}

// Torn is nil while the stream has not been found cut, and once it has,
// an *ingest.TornError naming the line the cut fell in.
func (t *WholeLines) Torn() error {
	if !t.torn {
		return nil
	}
	return &ingest.TornError{Record: t.lines,
		Err: fmt.Errorf("the compressed file ends inside line %d: %w", t.lines+1, io.ErrUnexpectedEOF)}
}

func (t *WholeLines) Read(p []byte) (int, error) {
	for t.start == t.ready {
		if t.done {
			return 0, io.EOF
		}
		t.end = copy(t.buf, t.buf[t.ready:t.end])
		t.start, t.ready = 0, 0
		if t.end == len(t.buf) {
			// A line longer than the buffer.
			t.buf = append(t.buf, make([]byte, max(len(t.buf), 4<<10))...)
		}
		n, err := t.r.Read(t.buf[t.end:])
		if i := bytes.LastIndexByte(t.buf[t.end:t.end+n], '\n'); i >= 0 {
			t.ready = t.end + i + 1
		}
		t.end += n
		switch {
		case err == io.EOF:
			// A whole stream: its last line needs no newline.
			t.ready, t.done = t.end, true
		case errors.Is(err, io.ErrUnexpectedEOF):
			t.end, t.done, t.torn = t.ready, true, true
		case err != nil:
			return 0, err
		}
	}
	n := copy(p, t.buf[t.start:t.ready])
	t.lines += int64(bytes.Count(p[:n], []byte{'\n'}))
	t.start += n
	return n, nil
}

// Scan calls fn with the number (from 1) of each line of r and the line
// with surrounding white space trimmed, empty lines included so that the
// caller can count them. The line is valid only during the call. An error
// from fn stops the scan and is returned as it is; a line longer than
// maxLine bytes (or 64 KiB, whichever is more) or a read error stops it
// with an error naming the line.
func Scan(r io.Reader, maxLine int, fn func(n int64, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var n int64
	for sc.Scan() {
		n++
		if err := fn(n, bytes.TrimSpace(sc.Bytes())); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	return nil
}
