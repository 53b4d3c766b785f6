package main

import (
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/ingest/obsfile"
	"github.com/outagewatch/outagewatch/replay"
)

// Observation exports (a Radar or IODA series, a Prometheus query) replay
// like any other input: time,entity,signal,value as CSV or JSON lines.
func init() {
	read := func(path string) (replay.Source, error) {
		return replay.FromCallback(path, func(fn func(ingest.Record) error) error { return obsfile.ReadFile(path, fn) })
	}
	for _, ext := range []string{".jsonl", ".jsonl.gz", ".csv", ".csv.gz"} {
		replay.RegisterFileType(ext, read)
	}
}
