package obsfile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/linefile"
)

// ReadStats counts the lines of one file by what became of them.
type ReadStats struct {
	// Lines is the number of lines read, blank ones included.
	Lines int64
	// Records is the number of lines handed on as records.
	Records int64
	// Blank and Header count lines skipped as empty or as the CSV header.
	Blank, Header int64
	// BadTime counts lines skipped because no event time could be read from
	// them (which includes lines that are not JSON or CSV at all): without
	// one a record cannot take its place in the replay's merge by time.
	// BadWhy counts them by reason (ingest.Reason): "time" for a time that
	// does not parse, "csv" or "json" for a line that is no CSV row of four
	// fields or no JSON object, "missing_field" for one without a time.
	BadTime int64
	BadWhy  map[string]int64
	// FirstBadTime is the number of the first line skipped for its time,
	// and FirstTimeErr why.
	FirstBadTime int64
	FirstTimeErr string
}

// maxLine bounds one line; an observation line is some hundred bytes, so a
// longer one means a file in the wrong format.
const maxLine = 1 << 20

// FormatOf returns the format of a file from its name: .jsonl, .ndjson or
// .json for FormatJSON, .csv for FormatCSV, each optionally followed by .gz.
func FormatOf(path string) (format string, gzipped bool, err error) {
	name := strings.ToLower(filepath.Base(path))
	if n, ok := strings.CutSuffix(name, ".gz"); ok {
		name, gzipped = n, true
	}
	switch filepath.Ext(name) {
	case ".jsonl", ".ndjson", ".json":
		return FormatJSON, gzipped, nil
	case ".csv":
		return FormatCSV, gzipped, nil
	}
	return "", false, fmt.Errorf("obsfile: %s: want a .jsonl or .csv file (optionally .gz)", path)
}

// ReadFile reads a file of observations and calls fn with one record per
// line, in file order. Lines whose time cannot be read are skipped; when
// there are any, ReadFile logs one warning with their count (ReadFileStats
// returns it instead). An error from fn stops the reading and is returned.
func ReadFile(path string, fn func(ingest.Record) error) error {
	st, err := ReadFileStats(path, fn)
	if st.BadTime > 0 {
		slog.Warn("observations file: skipped lines without a readable time",
			"path", path, "skipped", st.BadTime, "lines", st.Lines)
	}
	return err
}

// ReadFileStats is ReadFile that returns its counts rather than logging.
func ReadFileStats(path string, fn func(ingest.Record) error) (ReadStats, error) {
	format, gz, err := FormatOf(path)
	if err != nil {
		return ReadStats{}, err
	}
	return linefile.ReadFile("obsfile", path, gz, func(r io.Reader) (ReadStats, error) {
		return Read(r, format, fn)
	})
}

// Read is ReadFile over a reader of the given format. Each record carries a
// copy of its line as Value and the line number (from 1) as Offset.
func Read(r io.Reader, format string, fn func(ingest.Record) error) (ReadStats, error) {
	var st ReadStats
	var timeOf func(line []byte) (int64, error)
	switch format {
	case FormatJSON:
		timeOf = jsonLineTime
	case FormatCSV:
		d := NewCSVDecoder()
		timeOf = func(line []byte) (int64, error) {
			f, err := d.split(line)
			if err != nil {
				return 0, err
			}
			return ParseTime(f[0])
		}
	default:
		return st, fmt.Errorf("unknown observations format %q", format)
	}
	err := linefile.Scan(r, maxLine, func(n int64, line []byte) error {
		st.Lines = n
		if len(line) == 0 {
			st.Blank++
			return nil
		}
		if format == FormatCSV && st.Records == 0 && st.BadTime == 0 && st.Header == 0 {
			if f, err := (&CSVDecoder{}).split(line); err == nil && isHeader(f) {
				st.Header++
				return nil
			}
		}
		t, err := timeOf(line)
		if err != nil {
			st.BadTime++
			if st.BadWhy == nil {
				st.BadWhy = map[string]int64{}
			}
			st.BadWhy[cmp.Or(ingest.Reason(err), "time")]++
			if st.FirstBadTime == 0 {
				st.FirstBadTime, st.FirstTimeErr = n, err.Error()
			}
			return nil
		}
		st.Records++
		rec := ingest.Record{
			Stream: Stream,
			Format: format,
			Offset: st.Lines,
			Time:   t,
			Value:  bytes.Clone(line),
		}
		return fn(rec)
	})
	return st, err
}

// jsonLineTime reads only the time member of a JSON line.
func jsonLineTime(line []byte) (int64, error) {
	var l struct {
		Time json.RawMessage `json:"time"`
	}
	if err := json.Unmarshal(line, &l); err != nil {
		return 0, ingest.Errorf("json", "observation: %v", err)
	}
	if l.Time == nil {
		return 0, ingest.Errorf("missing_field", "observation: no time")
	}
	return jsonTime(l.Time)
}
