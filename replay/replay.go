package replay

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/recordfile"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/scenario"
)

func sortRecords(recs []*ingest.Record) {
	slices.SortStableFunc(recs, func(a, b *ingest.Record) int { return cmp.Compare(a.Time, b.Time) })
}

// FileReader turns a file of some input format into a source. Input
// packages register theirs (MRT, dnstap, observations) by extension.
type FileReader func(path string) (Source, error)

var fileReaders = map[string]FileReader{}

// RegisterFileType makes files ending in ext replayable.
func RegisterFileType(ext string, r FileReader) { fileReaders[ext] = r }

func init() {
	RegisterFileType(recordfile.Ext, func(p string) (Source, error) { return OpenRecordFile(p) })
	RegisterFileType(recordfile.Ext+".gz", func(p string) (Source, error) { return OpenRecordFile(p) })
}

// FromCallback collects the records a reader yields into a sorted source
// that keeps a summary of the file (records of a binary format); readers of
// line formats that skip lines use FromFile to report them.
func FromCallback(name string, read func(fn func(ingest.Record) error) error) (Source, error) {
	return FromFile(name, "record", func(fn func(ingest.Record) error) (ReadStats, error) {
		return ReadStats{}, read(fn)
	})
}

// IsFixture reports whether path names a fixture spec.
func IsFixture(path string) bool {
	return strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")
}

// OpenFile returns a source for a recorded or exported file.
func OpenFile(path string) (Source, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s: a directory: name its files (%s)", path, filepath.Join(path, "*.gz"))
	}
	// Longest matching extension wins (".owrec.gz" over ".gz").
	best := ""
	for ext := range fileReaders {
		if strings.HasSuffix(path, ext) && len(ext) > len(best) {
			best = ext
		}
	}
	if best == "" {
		return nil, fmt.Errorf("%s: unknown file type %q (known: %v)", path, filepath.Ext(path), knownExts())
	}
	return fileReaders[best](path)
}

func knownExts() []string {
	var out []string
	for e := range fileReaders {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// RenderSpec renders every stream of a fixture into sources.
func RenderSpec(s *scenario.Spec) ([]Source, error) {
	rs, err := s.Renderers()
	if err != nil {
		return nil, err
	}
	var out []Source
	for _, r := range rs {
		var recs []*ingest.Record
		if err := r.Render(s, func(rec *ingest.Record) { recs = append(recs, rec) }); err != nil {
			return nil, fmt.Errorf("%s: render %s: %w", s.File, r.Stream(), err)
		}
		sortRecords(recs)
		out = append(out, NewSliceSource(s.Name+"/"+r.Stream(), recs))
	}
	return out, nil
}

// Progress receives the event time reached and the records done.
type Progress func(eventTime int64, records int64)

// Run feeds the merged sources through p. The watermark follows the event
// time of the merged stream less the allowed lateness; at the end only the
// buckets that the data has passed are closed, so a replay never judges a
// half-filled last bucket; records of ordered streams in that last bucket
// stay held, as they would live, until the caller calls p.Finish. Records
// that do not decode are counted by the pipeline and skipped, and by the
// summary of the file they came from (see Summaries).
func Run(p *pipeline.Pipeline, srcs []Source, progress Progress) error {
	m, err := NewMerge(srcs...)
	if err != nil {
		return err
	}
	lateness := p.Aggregator().Config().Lateness
	var n, lastAdv, last int64
	for {
		rec, src, err := m.next()
		if err != nil {
			return err
		}
		if rec == nil {
			break
		}
		perr := p.Process(rec) // counted and logged by the pipeline
		if fs, ok := src.(Summarized); ok {
			fs.Summary().count(rec, perr)
		}
		n++
		last = max(last, rec.Time)
		if wm := last - lateness; wm-lastAdv >= 1e9 {
			p.Advance(wm)
			lastAdv = wm
		}
		if progress != nil && n%65536 == 0 {
			progress(last, n)
		}
	}
	p.Advance(last - lateness)
	if progress != nil {
		progress(last, n)
	}
	return nil
}
