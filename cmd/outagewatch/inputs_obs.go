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
// IODA's own files replay as they come: its API's JSON (.json) and its
// per-entity CSV exports, told from observation lines by their header.
func init() {
	read := func(path string) (replay.Source, error) {
		return replay.FromFile(path, "line", func(fn func(ingest.Record) error) (replay.ReadStats, error) {
			st, err := obsfile.ReadFileStats(path, fn)
			return replay.ReadStats{Lines: st.Lines - st.Blank - st.Header, Skipped: st.BadWhy,
				FirstBad: st.FirstBadTime, FirstErr: st.FirstTimeErr}, err
		})
	}
	readIODA := func(path string) (replay.Source, error) {
		return replay.FromFile(path, "value", func(fn func(ingest.Record) error) (replay.ReadStats, error) {
			st, err := obsfile.ReadIODAFile(path, fn)
			return replay.ReadStats{Lines: st.Values, Skipped: st.Skipped, FirstBad: st.FirstSkipped, FirstErr: st.FirstWhy,
				Caveat: st.Caveat(), Names: st.Names}, err
		})
	}
	readCSV := func(path string) (replay.Source, error) {
		ioda, err := obsfile.IsIODAExport(path)
		if err != nil {
			return nil, err
		}
		if ioda {
			return readIODA(path)
		}
		return read(path)
	}
	for _, ext := range []string{".jsonl", ".jsonl.gz"} {
		replay.RegisterFileType(ext, read)
	}
	for _, ext := range []string{".csv", ".csv.gz"} {
		replay.RegisterFileType(ext, readCSV)
	}
	for _, ext := range []string{".json", ".json.gz"} {
		replay.RegisterFileType(ext, readIODA)
	}
}
