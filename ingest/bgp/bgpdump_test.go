package bgp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/gztest"
	"github.com/outagewatch/outagewatch/obs"
)

// replayInto reads a file of BGP updates (MRT or bgpdump's text, by its
// content) into a table of its own through the decoder its records name,
// and returns the table and the observations summed by signal, entity and
// second: what the aggregator's buckets would hold.
func replayInto(t *testing.T, path string) (*rib.Table, map[string]float64, map[string]int) {
	t.Helper()
	tab := rib.New(rib.Config{})
	mrtDec, textDec := NewMRT(tab, ""), NewBgpdump(tab, "")
	var sink obs.Slice
	formats := map[string]int{}
	err := ReadBGPFile(path, func(r ingest.Record) error {
		formats[r.Format]++
		var err error
		switch r.Format {
		case FormatMRT:
			err = mrtDec.Decode(r.Value, &sink)
		case FormatBgpdump:
			err = textDec.Decode(r.Value, &sink)
		}
		if err != nil {
			return fmt.Errorf("%s record %d: %w", r.Format, r.Offset, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]float64{}
	for _, o := range sink {
		sums[fmt.Sprintf("%s %s %d", o.Signal, o.Entity, o.Time/1e9)] += o.Value
	}
	return tab, sums, formats
}

// bgpdump's own text of an MRT file replays into the same table and the
// same counts as the file: every withdrawal and announcement of every
// origin, each second, and the routes, prefixes, paths and visible space
// the table ends with. Only the peers that sent nothing but keepalives
// in the five minutes are missing from the text, which has no line for
// them. (The long withdrawal's prefixes were never announced in its
// file: it counts nothing, either way.)
func TestBgpdumpTextReplaysAsItsMRT(t *testing.T) {
	for i, name := range []string{"ris-updates.20160811.1600", "ris-updates.long_withdrawal"} {
		mrtTab, mrtSums, mrtFormats := replayInto(t, filepath.Join("testdata", name+".gz"))
		textTab, textSums, textFormats := replayInto(t, filepath.Join("testdata", name+".bgpdump-m.txt.gz"))
		if mrtFormats[FormatMRT] == 0 || textFormats[FormatBgpdump] == 0 || len(mrtFormats)+len(textFormats) != 2 {
			t.Fatalf("%s: formats read %v and %v", name, mrtFormats, textFormats)
		}
		if i == 0 && len(mrtSums) < 1000 {
			t.Fatalf("%s: only %d counts", name, len(mrtSums))
		}
		for k, v := range mrtSums {
			if textSums[k] != v {
				t.Errorf("%s: %s: %v from MRT, %v from bgpdump's text", name, k, v, textSums[k])
			}
		}
		for k, v := range textSums {
			if _, ok := mrtSums[k]; !ok {
				t.Errorf("%s: %s: %v from bgpdump's text only", name, k, v)
			}
		}
		m, x := mrtTab.Stats(), textTab.Stats()
		if x.Peers > m.Peers || x.Routes == 0 && i == 0 {
			t.Errorf("%s: %d peers from bgpdump's text, %d from MRT; %d routes", name, x.Peers, m.Peers, x.Routes)
		}
		if m.Peers, x.Peers = 0, 0; m != x {
			t.Errorf("%s: table %+v from MRT, %+v from bgpdump's text", name, m, x)
		}
	}
}

// Lines a decoder must refuse, each with its reason, and an AS path's
// origin as MRT reads it.
func TestBgpdumpLines(t *testing.T) {
	tab := rib.New(rib.Config{})
	d := NewBgpdump(tab, "")
	for line, reason := range map[string]string{
		"BGP4MP|1470931200|A|37.49.236.123|198290":                                 "fields",
		"OSPF|1470931200|A|37.49.236.123|198290|10.0.0.0/8|1 2|IGP":                "unsupported",
		"BGP4MP|soon|A|37.49.236.123|198290|10.0.0.0/8|1 2|IGP":                    "time",
		"BGP4MP|1470931200|A|37.49.236.300|198290|10.0.0.0/8|1 2|IGP":              "peer",
		"BGP4MP|1470931200|A|37.49.236.123|198290|10.0.0.0/33|1 2|IGP":             "prefix",
		"BGP4MP|1470931200|A|37.49.236.123|198290|10.0.0.0/8|1 x|IGP":              "as_path",
		"BGP4MP|1470931200|STATE|37.49.236.123|198290|6":                           "state",
		"BGP4MP|1470931200|X|37.49.236.123|198290|10.0.0.0/8":                      "unsupported",
		"BGP4MP_ET|1470931200.5|A|37.49.236.123|198290|10.0.0.0/8|1 {2,3}|IGP|x|0": "",
	} {
		err := d.Decode([]byte(line), nil)
		if reason == "" && err != nil || reason != "" && ingest.Reason(err) != reason {
			t.Errorf("%s: %v, want reason %q", line, err, reason)
		}
	}
	for s, want := range map[string]uint32{"1 2 3": 3, "1 {2,3}": 0, "1 {3}": 3, "": 0, "1 [2,3] 4": 4, "(65001 65002) 7": 7, "1 (65001)": 65001} {
		if _, got, err := parsePath(nil, s); err != nil || got != want {
			t.Errorf("path %q: origin %d, %v; want %d", s, got, err, want)
		}
	}
	if at, err := BgpdumpTime([]byte("BGP4MP_ET|1470931200.000123|A|")); err != nil || at != 1470931200_000123000 {
		t.Errorf("time with microseconds: %d, %v", at, err)
	}
}

// A gzipped text dump cut short replays its whole lines, never part of
// one (a prefix cut to "10.0.0.0/2" is another prefix), and says where it
// was cut.
func TestBgpdumpFileCutShort(t *testing.T) {
	var text bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&text, "BGP4MP|1470931200|A|37.49.236.123|198290|10.%d.%d.0/24|198290 6661 %d|IGP|37.49.236.123|0|0||NAG||\n", i/256, i%256, 64500+i%7)
	}
	z := gztest.Gzip(text.Bytes())
	path := filepath.Join(t.TempDir(), "updates.gz")
	if err := os.WriteFile(path, z[:len(z)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(text.Bytes(), []byte("\n"))
	n := 0
	err := ReadBGPFile(path, func(r ingest.Record) error {
		if r.Format != FormatBgpdump || !bytes.Equal(r.Value, lines[n]) {
			return fmt.Errorf("record %d: %s %q, want line %q", n, r.Format, r.Value, lines[n])
		}
		n++
		return nil
	})
	var torn *ingest.TornError
	if !errors.As(err, &torn) || torn.Record != int64(n) || n < 100 || n >= 3000 {
		t.Fatalf("%d lines, then %v", n, err)
	}
}

// FuzzBgpdump: any line decodes or is refused with a reason, never a
// panic.
func FuzzBgpdump(f *testing.F) {
	for _, l := range []string{
		"BGP4MP|1470931200|A|2001:7f8:54::188|59689|2804:14d::/40|59689 6939 3356 4230 28573|IGP|2001:7f8:54::10|0|0|59689:200|NAG||",
		"BGP4MP|1470931201|W|37.49.236.123|198290|192.140.252.0/22",
		"BGP4MP|1470931201|STATE|37.49.232.25|60427|6|1",
		"TABLE_DUMP2|1470931200|B|37.49.236.123|198290|192.140.252.0/22|198290 {6661,2914}|IGP|37.49.236.123|0|0||NAG||",
		"BGP4MP_ET|1470931200.999999|A|::ffff:10.0.0.1|1|0.0.0.0/0||INCOMPLETE",
	} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		d := NewBgpdump(rib.New(rib.Config{}), "")
		var sink obs.Slice
		if err := d.Decode(line, &sink); err != nil && ingest.Reason(err) == "other" {
			t.Fatalf("%q: an error without a reason: %v", line, err)
		}
	})
}
