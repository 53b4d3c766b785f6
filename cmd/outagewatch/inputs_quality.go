package main

import (
	"log/slog"

	"github.com/outagewatch/outagewatch/ingest"
	_ "github.com/outagewatch/outagewatch/ingest/dcload"
	"github.com/outagewatch/outagewatch/ingest/quality"
	"github.com/outagewatch/outagewatch/replay"
)

// Quality measurements replay from files of JSON lines: RIPE Atlas ping
// results as downloaded from the Atlas API or result stream (".atlas.jsonl")
// and outagewatch's own measurements (".quality.jsonl"), plain or gzipped.
// The double extension keeps them apart from files of observations.
func init() {
	reader := func(format string) replay.FileReader {
		return func(path string) (replay.Source, error) {
			return replay.FromCallback(path, func(fn func(ingest.Record) error) error {
				st, err := quality.ReadFile(path, format, fn)
				if st.NoTime > 0 || st.Malformed > 0 {
					slog.Warn("quality file: lines that do not parse", "path", path,
						"skipped_without_time", st.NoTime, "replayed_as_decode_errors", st.Malformed, "lines", st.Lines)
				}
				return err
			})
		}
	}
	for _, ext := range []string{".atlas.jsonl", ".atlas.jsonl.gz"} {
		replay.RegisterFileType(ext, reader(quality.FormatAtlas))
	}
	for _, ext := range []string{".quality.jsonl", ".quality.jsonl.gz"} {
		replay.RegisterFileType(ext, reader(quality.FormatJSON))
	}
}
