package main

import (
	"github.com/outagewatch/outagewatch/ingest"
	dnsin "github.com/outagewatch/outagewatch/ingest/dns"
	"github.com/outagewatch/outagewatch/replay"
)

// dnstap captures (fstrm_capture, dnsdist, unbound, BIND, CoreDNS) replay
// as the "dns" stream, so a resolver's own recording can be scored.
func init() {
	read := func(path string) (replay.Source, error) {
		return replay.FromCallback(path, func(fn func(ingest.Record) error) error {
			return dnsin.ReadFile(path, fn)
		})
	}
	replay.RegisterFileType(".fstrm", read)
	replay.RegisterFileType(".dnstap", read)
}
