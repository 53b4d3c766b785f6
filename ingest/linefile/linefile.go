// Package linefile reads the one-record-a-line files that outagewatch
// replays (measurements, observations), plain or gzipped, so that every
// replay reader opens, buffers and bounds its lines the same way and
// reports errors with the file and line they came from.
package linefile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// ReadFile opens path, gunzips it when gz is set, and hands the reader to
// read. Errors are prefixed with prefix (the package reading) and, once the
// file is open, with path; the cause stays wrapped for errors.Is.
func ReadFile[S any](prefix, path string, gz bool, read func(io.Reader) (S, error)) (S, error) {
	var zero S
	f, err := os.Open(path)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", prefix, err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 64<<10)
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return zero, fmt.Errorf("%s: %s: %w", prefix, path, err)
		}
		defer zr.Close()
		r = zr
	}
	st, err := read(r)
	if err != nil {
		return st, fmt.Errorf("%s: %s: %w", prefix, path, err)
	}
	return st, nil
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
