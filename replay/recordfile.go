package replay

import (
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/recordfile"
)

// RecordFileSource reads a record file (optionally gzipped; see package
// ingest/recordfile). Records of one file are replayed in file order; a
// file recorded from several partitions is sorted by time first (in
// bounded memory, see FromFile) so the merge sees it in order. Its summary
// counts what the pipeline made of the records.
type RecordFileSource struct {
	*FileSource
}

// OpenRecordFile reads a record file into a time-ordered source.
func OpenRecordFile(path string) (*RecordFileSource, error) {
	so := newSorter(path)
	if err := recordfile.ReadFile(path, func(rec *ingest.Record) error { return so.add(rec) }); err != nil {
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
		sum: FileSummary{File: path, Unit: "record", Recorded: true, Read: int64(n)}}
	return &RecordFileSource{fs}, nil
}
