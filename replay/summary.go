package replay

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/outagewatch/outagewatch/ingest"
)

// ReadStats is what a file reader reports of the lines it read and of those
// it could not hand on (no readable time, say): the summary adds them to
// the records the pipeline refused.
type ReadStats struct {
	// Lines is the number of lines (or records of a binary format) read.
	Lines int64
	// Skipped counts lines left out before decoding, by reason.
	Skipped map[string]int64
	// FirstBad is the number of the first line left out, 0 when none, and
	// FirstErr why, when the reader knows.
	FirstBad int64
	FirstErr string
	// Torn says where the file ends inside a record, when it was cut
	// short: what came before the cut was read.
	Torn string
	// Caveat says how the file's values are not what the rules assume
	// (averages of several readings judged as one), when the reader
	// knows.
	Caveat string
	// Names is what the file calls its entities, where it says (IODA's
	// entityName): a display name for an entity the map cannot name.
	Names map[string]string
}

// FileSummary says what became of one input file: how much was read, how
// much reached the series, and what was skipped and why, with the first bad
// line, so that an export that was half wrong is noticed and can be fixed.
type FileSummary struct {
	File string `json:"file"`
	// Unit is what the file is made of: "line" for text formats, "record"
	// for binary ones.
	Unit string `json:"unit"`
	// Recorded marks a file of Kafka records (outagewatch record): a bad
	// record is named by its topic, partition and offset, not by a number
	// in the file.
	Recorded bool             `json:"-"`
	Read     int64            `json:"read"`
	Replayed int64            `json:"replayed"`
	Skipped  map[string]int64 `json:"skipped,omitempty"`
	FirstBad int64            `json:"first_bad,omitempty"`
	FirstErr string           `json:"first_error,omitempty"`
	// Torn says where the file ends inside a record (a download or a
	// recording cut short), whose whole records before it were read.
	Torn string `json:"torn,omitempty"`
	// Caveat says how the values are not what the rules assume.
	Caveat string `json:"caveat,omitempty"`
}

// Faults is SkippedTotal less the gaps (ingest.ReasonNoValue): lines that
// say no more than that a value is missing are no fault of the file. A
// cut and a caveat count one each: the operator is to hear of them.
func (s *FileSummary) Faults() int64 {
	n := s.SkippedTotal() - s.Skipped[ingest.ReasonNoValue]
	if s.Torn != "" {
		n++
	}
	if s.Caveat != "" {
		n++
	}
	return n
}

// SkippedTotal is the number of lines skipped for any reason.
func (s *FileSummary) SkippedTotal() int64 {
	var n int64
	for _, v := range s.Skipped {
		n += v
	}
	return n
}

func (s *FileSummary) skip(reason string, n int64, at int64, msg string) {
	if n == 0 {
		return
	}
	if s.Skipped == nil {
		s.Skipped = map[string]int64{}
	}
	s.Skipped[reason] += n
	switch {
	case at > 0 && (s.FirstBad == 0 || at < s.FirstBad):
		s.FirstBad, s.FirstErr = at, msg
	case at == 0 && s.FirstErr == "":
		s.FirstErr = msg
	}
}

// count books one record handed to the pipeline and what it said of it.
func (s *FileSummary) count(rec *ingest.Record, err error) {
	if err == nil {
		s.Replayed++
		return
	}
	at, msg := rec.Offset, err.Error()
	switch {
	case s.Recorded:
		at, msg = 0, fmt.Sprintf("%s[%d]@%d: %s", rec.Topic, rec.Partition, rec.Offset, msg)
	case s.Unit != "line":
		at++ // binary readers number records from 0
	}
	if r := ingest.Reason(err); r == ingest.ReasonNoValue {
		s.skip(r, 1, 0, "") // a gap, counted but no bad line
	} else {
		s.skip(r, 1, at, msg)
	}
}

// String is the summary as one line of a log or a report:
// "x.csv: 1200 lines read, 1180 replayed, 20 skipped (signal 12, time 8), first bad line 7: ...".
func (s *FileSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d %ss read, %d replayed", s.File, s.Read, s.Unit, s.Replayed)
	if n := s.SkippedTotal(); n > 0 {
		var parts []string
		for _, r := range slices.Sorted(maps.Keys(s.Skipped)) {
			parts = append(parts, fmt.Sprintf("%s %d", r, s.Skipped[r]))
		}
		fmt.Fprintf(&b, ", %d skipped (%s)", n, strings.Join(parts, ", "))
		switch {
		case s.FirstBad > 0:
			fmt.Fprintf(&b, ", first bad %s %d", s.Unit, s.FirstBad)
			if s.FirstErr != "" {
				fmt.Fprintf(&b, ": %s", s.FirstErr)
			}
		case s.FirstErr != "":
			fmt.Fprintf(&b, ", first bad %s: %s", s.Unit, s.FirstErr)
		}
	}
	if s.Torn != "" {
		fmt.Fprintf(&b, "; cut short: %s", s.Torn)
	}
	if s.Caveat != "" {
		fmt.Fprintf(&b, "; %s", s.Caveat)
	}
	return b.String()
}

// Err is an error naming the file when nothing in it could be replayed:
// an empty file, or one whose every line was refused, must not pass for a
// quiet incident.
func (s *FileSummary) Err() error {
	switch {
	case s.Replayed > 0:
		return nil
	case s.Read == 0:
		return fmt.Errorf("%s: empty: no %s to replay", s.File, s.Unit)
	}
	return fmt.Errorf("no %s decodes: %s", s.Unit, s.String())
}

// FileSource is a source read from one file, with its summary.
type FileSource struct {
	Source
	sum   FileSummary
	n     int
	names map[string]string
}

// Len is the number of records the file handed on.
func (f *FileSource) Len() int { return f.n }

// Names is what the file calls its entities, where it says.
func (f *FileSource) Names() map[string]string { return f.names }

// Summary returns the file's summary; Run fills in what the pipeline said
// of each record.
func (f *FileSource) Summary() *FileSummary { return &f.sum }

// Summarized is a source that keeps a FileSummary.
type Summarized interface {
	Source
	Summary() *FileSummary
}

// FromFile reads a file into a time-ordered source that keeps a summary.
// A regular file in time order is read a second time as it is replayed
// (see stream.go); any other is sorted in bounded memory (see sorter): a
// long file is spilled to temporary files in sorted runs and merged back
// as it is replayed. unit is "line" for text formats and "record" for
// binary ones. read may be called twice and must read the whole file each
// time.
//
// A file that ends inside a record (an archive still being written or
// fetched, a capture or a download cut short: read reports an
// ingest.TornError) replays the whole records before the cut, and its
// summary says where it was cut.
func FromFile(path, unit string, read func(fn func(ingest.Record) error) (ReadStats, error)) (*FileSource, error) {
	read = keepTorn(read)
	if rereadable(path) {
		ordered, st, n, err := checkOrder(read)
		if err != nil {
			return nil, namePath(path, err)
		}
		if ordered {
			return newFileSource(newStreamSource(path, n, read), path, unit, st, n), nil
		}
	}
	so := newSorter(path)
	st, err := read(func(r ingest.Record) error {
		if r.Topic == "" {
			r.Topic = path // so that the pipeline's decode warnings name the file
		}
		return so.add(&r)
	})
	if err != nil {
		so.close()
		return nil, namePath(path, err)
	}
	n := so.n
	src, err := so.source()
	if err != nil {
		so.close()
		return nil, err
	}
	return newFileSource(src, path, unit, st, n), nil
}

// newFileSource wraps the n records of src with the summary of the file.
func newFileSource(src Source, path, unit string, st ReadStats, n int) *FileSource {
	fs := &FileSource{Source: src, sum: FileSummary{File: path, Unit: unit, Read: st.Lines, Torn: st.Torn, Caveat: st.Caveat}, n: n, names: st.Names}
	if fs.sum.Read == 0 {
		fs.sum.Read = int64(n)
	}
	for _, r := range slices.Sorted(maps.Keys(st.Skipped)) {
		fs.sum.skip(r, st.Skipped[r], st.FirstBad, "")
	}
	if st.FirstBad > 0 && fs.sum.FirstErr == "" {
		switch {
		case len(st.Skipped) == 1 && st.Skipped["time"] > 0:
			fs.sum.FirstErr = "no readable time"
			if st.FirstErr != "" {
				fs.sum.FirstErr += ": " + st.FirstErr
			}
		case st.FirstErr != "":
			fs.sum.FirstErr = st.FirstErr
		default:
			fs.sum.FirstErr = "left out before decoding (" + strings.Join(slices.Sorted(maps.Keys(st.Skipped)), ", ") + ")"
		}
	}
	return fs
}

// Summaries returns the summaries of the sources that keep one, in order,
// and an error naming every file of which nothing could be replayed.
func Summaries(srcs []Source) ([]FileSummary, error) {
	var out []FileSummary
	var errs []error
	for _, s := range srcs {
		fs, ok := s.(Summarized)
		if !ok {
			continue
		}
		sum := *fs.Summary()
		out = append(out, sum)
		if err := sum.Err(); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// keepTorn is read that takes a file cut short for what it holds before
// the cut, noting the cut in the stats.
func keepTorn(read func(fn func(ingest.Record) error) (ReadStats, error)) func(fn func(ingest.Record) error) (ReadStats, error) {
	return func(fn func(ingest.Record) error) (ReadStats, error) {
		st, err := read(fn)
		st.Torn, err = cutShort(err)
		return st, err
	}
}

// cutShort splits a reader's error: where it is an ingest.TornError (the
// file ends inside a record, and what came before was read), where the
// file was cut and no error; otherwise err as it is.
func cutShort(err error) (torn string, rest error) {
	var t *ingest.TornError
	if errors.As(err, &t) {
		return t.Error(), nil
	}
	return "", err
}

// namePath is err naming path, which readers that open the file
// themselves already do.
func namePath(path string, err error) error {
	if strings.Contains(err.Error(), path) {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}
