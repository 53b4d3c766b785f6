package replay

import (
	"fmt"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/recordfile"
)

// RecordFileSource reads a record file (optionally gzipped; see package
// ingest/recordfile). Records of one file are replayed in file order; a
// file recorded from several partitions is sorted by time first (in
// bounded memory, see FromFile) so the merge sees it in order. Its summary
// counts what the pipeline made of the records, and the lines that were
// no record (damage, or the torn end of a recording cut short), skipped
// so that a recorder killed mid-line still leaves a file that replays.
type RecordFileSource struct {
	*FileSource
}

// OpenRecordFile reads a record file into a time-ordered source.
func OpenRecordFile(path string) (*RecordFileSource, error) {
	so := newSorter(path)
	st, err := recordfile.ReadFile(path, func(rec *ingest.Record) error { return so.add(rec) })
	torn, err := cutShort(err)
	if err != nil {
		so.close()
		return nil, err
	}
	n := so.n
	src, err := so.source()
	if err != nil {
		so.close()
		return nil, err
	}
	fs := &FileSource{Source: src, n: n,
		sum: FileSummary{File: path, Unit: "record", Recorded: true, Read: int64(n) + st.Bad, Torn: torn}}
	// A line that is no record has no topic, partition or offset to be
	// named by: the summary names its line.
	if st.Bad > 0 {
		fs.sum.skip("json", st.Bad, 0, fmt.Sprintf("line %d: %s", st.FirstBad, st.FirstErr))
	}
	return &RecordFileSource{fs}, nil
}
