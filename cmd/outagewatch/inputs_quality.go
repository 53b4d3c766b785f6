package main

import (
	"github.com/outagewatch/outagewatch/ingest"
	_ "github.com/outagewatch/outagewatch/ingest/dcload"
	"github.com/outagewatch/outagewatch/ingest/quality"
	"github.com/outagewatch/outagewatch/replay"
)

// Quality measurements replay from files of JSON lines: RIPE Atlas ping
// results as downloaded from the Atlas API or result stream (".atlas.jsonl",
// or ".atlas.json" for the API's default download, one JSON array of
// results; either reader takes either form) and outagewatch's own
// measurements (".quality.jsonl"), plain or gzipped.
// The double extension keeps them apart from files of observations. Lines
// that do not parse are counted in the file's summary: before the first
// good line as skipped for their time, after it as decode errors.
func init() {
	reader := func(format string) replay.FileReader {
		return func(path string) (replay.Source, error) {
			return replay.FromFile(path, "line", func(fn func(ingest.Record) error) (replay.ReadStats, error) {
				st, err := quality.ReadFile(path, format, fn)
				return replay.ReadStats{Lines: st.Lines - st.Blank, Skipped: st.NoTimeWhy,
					FirstBad: st.FirstNoTime, FirstErr: st.FirstTimeErr}, err
			})
		}
	}
	for _, ext := range []string{".atlas.jsonl", ".atlas.jsonl.gz", ".atlas.json", ".atlas.json.gz"} {
		replay.RegisterFileType(ext, reader(quality.FormatAtlas))
	}
	for _, ext := range []string{".quality.jsonl", ".quality.jsonl.gz"} {
		replay.RegisterFileType(ext, reader(quality.FormatJSON))
	}
}
