package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/gztest"
)

// Collector archives replay by their usual names: RIS updates (gzip) and
// RouteViews updates (bzip2), with every record decoded into the table;
// and `bgpdump -m`'s text of an archive, told by its content.
func TestReplayMRTArchives(t *testing.T) {
	for _, f := range []string{
		"../../ingest/bgp/testdata/ris-updates.20160811.1600.gz",
		"../../ingest/bgp/testdata/routeviews-jinx-updates.1427846400.bz2",
		"../../ingest/bgp/testdata/ris-updates.20160811.1600.bgpdump-m.txt.gz",
	} {
		p, err := runReplay([]string{f}, replayOpts{}, func(*alerting.Event) {})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		st := p.Stats()
		recs := st.Records["bgp/mrt"] + st.Records["bgp/bgpdump-m"]
		if recs < 100 || st.Series == 0 {
			t.Fatalf("%s: records %v, %d series", f, st.Records, st.Series)
		}
		var bad int64
		for _, n := range st.DecodeErrors {
			bad += n
		}
		if bad*100 > recs {
			t.Fatalf("%s: decode errors %v of %d records", f, st.DecodeErrors, st.Records["bgp/mrt"])
		}
	}
}

// An archive cut short (still being written or fetched) replays the
// records before the cut, and its summary warns of the torn one.
func TestReplayMRTArchiveCutShort(t *testing.T) {
	logs := captureLog(t)
	b, err := os.ReadFile("../../ingest/bgp/testdata/ris-updates.20160811.1600.gz")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "cut.gz")
	os.WriteFile(f, b[:len(b)*2/3], 0o644)
	p, err := runReplay([]string{f}, replayOpts{}, func(*alerting.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	n := p.Stats().Records["bgp/mrt"]
	want := fmt.Sprintf("level=WARN msg=\"input: %s: %d records read, %d replayed; cut short: the file ends inside the header of record %d: unexpected EOF\"",
		f, n, n, n+1)
	if n < 1000 || !strings.Contains(logs.String(), want) {
		t.Fatalf("%d records; log has no %q:\n%s", n, want, logs)
	}
}

// A compressed file that is not MRT says so instead of replaying garbage.
func TestReplayRejectsNonMRTGzip(t *testing.T) {
	// A web page saved as the archive: named once, said to be no MRT.
	f := filepath.Join(t.TempDir(), "updates.20250428.1200.gz")
	os.WriteFile(f, gztest.Gzip([]byte("<!DOCTYPE html><title>404 Not Found</title>\n")), 0o644)
	_, _, err := run(t, "replay", f)
	if err == nil || err.Error() != f+`: record 0: type 17236 is no MRT type (RFC 6396): not an MRT file (it begins "<!DOCTYPE ht")` {
		t.Fatalf("err %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.bmp")
	os.WriteFile(empty, nil, 0o644)
	// An empty file is an input that fails, not a quiet replay.
	if _, err := runReplay([]string{empty}, replayOpts{}, nil); err == nil || err.Error() != empty+": empty: no record to replay" {
		t.Fatalf("empty BMP file: %v", err)
	}
}
