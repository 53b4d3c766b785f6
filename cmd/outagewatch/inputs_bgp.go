package main

import (
	"github.com/outagewatch/outagewatch/ingest"
	bgpin "github.com/outagewatch/outagewatch/ingest/bgp"
	"github.com/outagewatch/outagewatch/replay"
)

// MRT files (RIPE RIS "updates.*.gz" and "bview.*.gz", RouteViews
// "updates.*.bz2" and "rib.*.bz2", or any ".mrt"), the `bgpdump -m` text
// printed of them, and BMP recordings (".bmp", plain or compressed)
// replay as the "bgp" stream, into the same routing table that a
// fixture's bgp section or a live RIS Live feed fills.
//
// Plain ".gz" and ".bz2" are read as BGP updates because that is how the
// public collectors name their archives; every other input that
// compresses has a double extension of its own (".owrec.gz", ".csv.gz",
// ".jsonl.gz", ".atlas.jsonl.gz", ".bmp.gz"), and the longest match wins.
// MRT and bgpdump's text are told apart by their first bytes, whatever
// the name (".bgpdump" for the text is only a convention), and a file
// that is neither fails as no MRT rather than replaying as garbage.
// Compression is detected from the content, not the name.
func init() {
	bgpReader := func(path string) (replay.Source, error) {
		return replay.FromCallback(path, func(fn func(ingest.Record) error) error { return bgpin.ReadBGPFile(path, fn) })
	}
	for _, ext := range []string{".mrt", ".mrt.gz", ".mrt.bz2", ".bgpdump", ".bgpdump.gz", ".bgpdump.bz2", ".gz", ".bz2"} {
		replay.RegisterFileType(ext, bgpReader)
	}
	bmpReader := func(path string) (replay.Source, error) {
		return replay.FromCallback(path, func(fn func(ingest.Record) error) error { return bgpin.ReadBMPFile(path, fn) })
	}
	for _, ext := range []string{".bmp", ".bmp.gz", ".bmp.bz2"} {
		replay.RegisterFileType(ext, bmpReader)
	}
}
