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
func ReadFile[S any](prefix, path string, gz bool, read func(io.Reader) (S, error)) (st S, err error) {
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
		wl := NewWholeLines(zr)
		r = wl
		defer func() {
			if err == nil {
				// What read took in ends at the last whole line.
				if terr := wl.Torn(); terr != nil {
					err = fmt.Errorf("%s: %s: %w", prefix, path, terr)
				}
			}
		}()
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
	r       io.Reader
	buf     []byte
	pending []byte // read past the last newline handed on
	out     []byte // whole lines not yet handed on
	torn    bool
	lines   int64 // whole lines handed on
	done    bool
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
	for len(t.out) == 0 {
		if t.done {
			return 0, io.EOF
		}
		n, err := t.r.Read(t.buf)
		t.pending = append(t.pending, t.buf[:n]...)
		if i := bytes.LastIndexByte(t.pending, '\n'); i >= 0 {
			t.out = append(t.out[:0], t.pending[:i+1]...)
			t.pending = append(t.pending[:0], t.pending[i+1:]...)
		}
		switch {
		case err == io.EOF:
			// A whole stream: its last line needs no newline.
			t.out, t.pending, t.done = append(t.out, t.pending...), nil, true
		case errors.Is(err, io.ErrUnexpectedEOF):
			t.pending, t.done, t.torn = nil, true, true
		case err != nil:
			return 0, err
		}
	}
	n := copy(p, t.out)
	t.lines += int64(bytes.Count(p[:n], []byte{'\n'}))
	t.out = t.out[n:]
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
