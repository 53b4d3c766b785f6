package quality

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/linefile"
	"github.com/outagewatch/outagewatch/netmap"
)

// Stream is the ingest.Record stream kind of quality measurements.
const Stream = "quality"

func init() {
	ingest.RegisterFormat(Stream, FormatJSON, func(env *ingest.Env) (ingest.Decoder, error) {
		return NewDecoder(envMap(env)), nil
	})
	ingest.RegisterFormat(Stream, FormatAtlas, func(env *ingest.Env) (ingest.Decoder, error) {
		return NewAtlasDecoder(envMap(env)), nil
	})
}

// envMap returns the pipeline's attribution data, or nil: measurements that
// name their network and country need none.
func envMap(env *ingest.Env) *netmap.Map {
	if env == nil {
		return nil
	}
	return env.Map
}

// ReadStats counts the lines of one file by what became of them.
type ReadStats struct {
	Lines   int64 // read, blank ones included
	Records int64 // handed on
	Blank   int64
	// NoTime counts lines skipped because they did not parse before any line
	// had: without a time they cannot take a place in the replay's merge.
	NoTime int64
	// NoTimeWhy counts them by reason (ingest.Reason): "time" for a time
	// that does not parse, "json" for a line that is no JSON object.
	NoTimeWhy map[string]int64
	// Malformed counts lines that did not parse but were handed on anyway,
	// at the time of the line before, so that the pipeline counts them as
	// decode errors with their reason, as it would live.
	Malformed int64
	// FirstNoTime is the number of the first line skipped without a time,
	// and FirstTimeErr why.
	FirstNoTime  int64
	FirstTimeErr string
}

// maxLine bounds one line; a measurement is a few hundred bytes and an
// Atlas result a few kilobytes, so a longer line is a file in the wrong
// format.
const maxLine = 1 << 20

// ReadFile reads a file of measurements, one JSON object a line, in format
// FormatJSON or FormatAtlas (whose results may also come as one JSON
// array, as the RIPE Atlas API gives them by default), optionally gzipped
// (name ending in ".gz"), and calls fn with one record per line (or
// element) in file order. The event time of each
// record is the measurement's own time, read by the decoder's parser. An
// error from fn stops the reading and is returned.
//
// A file named .json (.json.gz) is read as the one document the API's
// download is (linefile.ReadDocument), so that one cut short, often a
// single line, still replays the results before the cut.
func ReadFile(path, format string, fn func(ingest.Record) error) (ReadStats, error) {
	gz := strings.HasSuffix(path, ".gz")
	open := linefile.ReadFile[ReadStats]
	if strings.HasSuffix(strings.TrimSuffix(path, ".gz"), ".json") {
		open = linefile.ReadDocument[ReadStats]
	}
	return open("quality", path, gz, func(r io.Reader) (ReadStats, error) {
		return Read(r, format, fn)
	})
}

// Read is ReadFile over a reader. Each record carries a copy of its line as
// Value and the line number (from 1) as Offset.
func Read(r io.Reader, format string, fn func(ingest.Record) error) (ReadStats, error) {
	var st ReadStats
	var timeOf func(line []byte) (int64, error)
	var m Measurement
	switch format {
	case FormatJSON:
		d := NewDecoder(nil)
		timeOf = func(line []byte) (int64, error) {
			err := d.parse(line, &m, false)
			return m.Time, err
		}
	case FormatAtlas:
		d := NewAtlasDecoder(nil)
		timeOf = func(line []byte) (int64, error) {
			_, err := d.Parse(line, &m)
			return m.Time, err
		}
	default:
		return st, fmt.Errorf("unknown quality format %q (want %s or %s)", format, FormatJSON, FormatAtlas)
	}
	var last int64
	scan := linefile.Scan
	br := bufio.NewReader(r)
	if format == FormatAtlas && startsArray(br) {
		scan = scanArray
	}
	err := scan(br, maxLine, func(n int64, line []byte) error {
		st.Lines = n
		if len(line) == 0 {
			st.Blank++
			return nil
		}
		t, err := timeOf(line)
		switch {
		case err == nil:
			last = t
		case last == 0:
			st.NoTime++
			if st.NoTimeWhy == nil {
				st.NoTimeWhy = map[string]int64{}
			}
			st.NoTimeWhy[cmp.Or(ingest.Reason(err), "time")]++
			if st.FirstNoTime == 0 {
				st.FirstNoTime, st.FirstTimeErr = n, err.Error()
			}
			return nil
		default:
			st.Malformed++
			t = last
		}
		st.Records++
		rec := ingest.Record{Stream: Stream, Format: format, Offset: st.Lines, Time: t, Value: bytes.Clone(line)}
		return fn(rec)
	})
	return st, err
}

// arrayUnclosed is the cut of an array that ends after its n-th
// element, before its closing bracket.
func arrayUnclosed(n int64) error {
	return &ingest.TornError{Record: n, Err: fmt.Errorf("the file ends after result %d of the array, before its closing bracket: %w", n, io.ErrUnexpectedEOF)}
}

// startsArray tells whether r's first byte past white space opens a JSON
// array: the RIPE Atlas API's results come as one array unless asked for
// lines (format=txt).
func startsArray(r *bufio.Reader) bool {
	for {
		b, err := r.Peek(1)
		if err != nil {
			return false
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = r.ReadByte()
		default:
			return b[0] == '['
		}
	}
}

// scanArray is linefile.Scan for a file that is one JSON array: fn gets
// each element as a line, numbered from 1. An element that is not JSON
// ends the reading with an error naming it, as nothing after it can be
// told apart. An array that ends before its closing bracket (a download
// cut short) ends with an *ingest.TornError after the whole elements.
func scanArray(r io.Reader, maxElem int, fn func(n int64, elem []byte) error) error {
	dec := json.NewDecoder(r)
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("reading the results array: %w", err)
	}
	var n int64
	for dec.More() {
		n++
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if err == io.EOF {
				return arrayUnclosed(n - 1)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return &ingest.TornError{Record: n - 1, Err: fmt.Errorf("the file ends inside result %d of the array: %w", n, err)}
			}
			return fmt.Errorf("result %d of the array: %w", n, err)
		}
		if len(raw) > maxElem {
			return fmt.Errorf("result %d of the array: longer than %d bytes", n, maxElem)
		}
		if err := fn(n, raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return arrayUnclosed(n)
		}
		return fmt.Errorf("reading the results array past result %d: %w", n, err)
	}
	return nil
}
