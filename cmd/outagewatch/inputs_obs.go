package main

import (
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/obsfile"
	"github.com/outagewatch/outagewatch/replay"
)

// Observation exports (a Radar or IODA series, a Prometheus query) replay
// like any other input: time,entity,signal,value as CSV or JSON lines.
// Lines without a readable time are skipped and counted in the file's
// summary, as are the lines the decoder refuses (unknown signal, bad value).
func init() {
	read := func(path string) (replay.Source, error) {
		return replay.FromFile(path, "line", func(fn func(ingest.Record) error) (replay.ReadStats, error) {
			st, err := obsfile.ReadFileStats(path, fn)
			return replay.ReadStats{Lines: st.Lines - st.Blank - st.Header, Skipped: map[string]int64{"time": st.BadTime},
				FirstBad: st.FirstBadTime, FirstErr: st.FirstTimeErr}, err
		})
	}
	for _, ext := range []string{".jsonl", ".jsonl.gz", ".csv", ".csv.gz"} {
		replay.RegisterFileType(ext, read)
	}
}
