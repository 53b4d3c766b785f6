package replay

import (
	"errors"
	"fmt"
	"iter"
	"os"

	"github.com/outagewatch/outagewatch/ingest"
)

// A file already in event-time order needs no sort at all: it can be read
// again while it is replayed, one record at a time, so that neither memory
// nor temporary disk grows with its length. Telling that takes a first
// pass, which only compares each record's time with the one before and
// keeps nothing. Exports and MRT update files are written in time order,
// so the usual cost of replaying a file is reading it twice; a file out of
// order is found out in the first pass and sorted as before (see sorter),
// with the same result either way: a stable sort of a file in order is the
// file.

// errStop ends a reader's callback loop early.
var errStop = errors.New("stop")

// rereadable reports whether path can be read a second time: a regular
// file, not a pipe or a terminal.
func rereadable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// checkOrder reads the file once and reports whether its records come in
// event-time order, with the reader's statistics and the record count
// (both of the whole file only when it is in order).
func checkOrder(read func(fn func(ingest.Record) error) (ReadStats, error)) (ordered bool, st ReadStats, n int, err error) {
	var last int64
	ordered = true
	st, err = read(func(r ingest.Record) error {
		if n > 0 && r.Time < last {
			ordered = false
			return errStop
		}
		last = r.Time
		n++
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return ordered, st, n, err
}

// streamSource reads an ordered file again as it is replayed. The reader
// runs as a coroutine (iter.Pull): each Next resumes it for one record.
type streamSource struct {
	name string
	next func() (*ingest.Record, error, bool)
	stop func()
	last int64
	n    int // records handed out
	want int // records the first pass counted
}

func newStreamSource(path string, want int, read func(fn func(ingest.Record) error) (ReadStats, error)) *streamSource {
	seq := func(yield func(*ingest.Record, error) bool) {
		_, err := read(func(r ingest.Record) error {
			if r.Topic == "" {
				r.Topic = path // so that the pipeline's decode warnings name the file
			}
			if !yield(&r, nil) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			yield(nil, err)
		}
	}
	next, stop := iter.Pull2(seq)
	return &streamSource{name: path, next: next, stop: stop, want: want}
}

func (s *streamSource) Name() string { return s.name }

// Next returns the next record of the second pass. A file that changed
// between the passes (records out of order, or more or fewer of them) is
// an error rather than a replay of something else than was checked.
func (s *streamSource) Next() (*ingest.Record, error) {
	r, err, ok := s.next()
	switch {
	case err != nil:
		s.stop()
		return nil, err
	case !ok:
		if s.n != s.want {
			return nil, fmt.Errorf("%s: %d records on the second read, %d on the first: the file changed during the replay", s.name, s.n, s.want)
		}
		return nil, nil
	case s.n > 0 && r.Time < s.last:
		s.stop()
		return nil, fmt.Errorf("%s: record %d out of time order on the second read: the file changed during the replay", s.name, s.n+1)
	}
	s.last = r.Time
	s.n++
	return r, nil
}
