package bgp

import (
	"bytes"
	stdjson "encoding/json"
	"net/netip"
	"os"
	"runtime"
	"testing"

	"github.com/osrg/gobgp/v3/pkg/packet/mrt"

	rib "github.com/outagewatch/outagewatch/bgp"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

// discard is a sink that keeps nothing, so benchmarks measure decoding and
// the table, not a slice growing.
type discard struct{ n int }

func (d *discard) Observe(*obs.Observation) { d.n++ }

// BenchmarkRIBLoad loads a synthetic TABLE_DUMP_V2 of 20 peers × 50,000
// prefixes (1M routes) into an empty table and reports routes/s and the
// heap the table holds per route once loaded.
func BenchmarkRIBLoad(b *testing.B) {
	const peers, nPrefixes = 20, 50_000
	recs := syntheticRIB(b, peers, nPrefixes)
	b.ResetTimer()
	var perRoute float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tab := rib.New(rib.Config{})
		d := NewMRT(tab, "rrc00")
		var sink discard
		b.StartTimer()
		for _, r := range recs {
			if err := d.Decode(r, &sink); err != nil {
				b.Fatal(err)
			}
		}
		tab.Refresh()
		b.StopTimer()
		d = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		if st := tab.Stats(); st.Routes != peers*nPrefixes || st.Visible != nPrefixes {
			b.Fatalf("stats %+v", st)
		}
		perRoute = float64(after.HeapAlloc-before.HeapAlloc) / float64(peers*nPrefixes)
		runtime.KeepAlive(tab)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N*peers*nPrefixes)/b.Elapsed().Seconds(), "routes/s")
	b.ReportMetric(perRoute, "bytes/route")
}

func risRecords(b *testing.B) [][]byte {
	var recs [][]byte
	if err := ReadMRTFile("testdata/ris-updates.20160811.1600.gz", func(r ingest.Record) error {
		recs = append(recs, r.Value)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return recs
}

// BenchmarkMRTUpdates runs the real RIS update file (17,406 records, 41k
// prefix changes from 45 peers) through parse and table, over and over on
// one table.
func BenchmarkMRTUpdates(b *testing.B) {
	recs := risRecords(b)
	tab := rib.New(rib.Config{})
	d := NewMRT(tab, "rrc00")
	var sink discard
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Decode(recs[i%len(recs)], &sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkMRTBareParse is the baseline: gobgp's own parse of the same
// records, with nothing done with the result.
func BenchmarkMRTBareParse(b *testing.B) {
	recs := risRecords(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := recs[i%len(recs)]
		var h mrt.MRTHeader
		if err := h.DecodeFromBytes(r); err != nil {
			b.Fatal(err)
		}
		if _, err := mrt.ParseMRTBody(&h, r[mrt.MRT_COMMON_HEADER_LEN:]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkOriginAS looks up addresses in the visible table of a loaded
// synthetic RIB (50,000 visible prefixes; netmap's BenchmarkLookup1M covers
// a 1M-prefix table).
func BenchmarkOriginAS(b *testing.B) {
	recs := syntheticRIB(b, 4, 50_000)
	tab := rib.New(rib.Config{})
	d := NewMRT(tab, "rrc00")
	for _, r := range recs {
		if err := d.Decode(r, nil); err != nil {
			b.Fatal(err)
		}
	}
	tab.Refresh()
	addrs := make([]netip.Addr, 4096)
	for i := range addrs {
		j := i * 12 % 50_000
		addrs[i] = netip.AddrFrom4([4]byte{10 + byte(j>>17), byte(j >> 9), byte(j >> 1), byte(i)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	found := 0
	for i := 0; i < b.N; i++ {
		if _, ok := tab.OriginAS(addrs[i&4095]); ok {
			found++
		}
	}
	if found != b.N {
		b.Fatalf("%d misses", b.N-found)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

// risLiveLines are the real RIS Live messages of the package's sample
// that carry BGP (not its error message nor its torn last line).
func risLiveLines(b *testing.B) [][]byte {
	raw, err := os.ReadFile("testdata/ris-live-stream.json")
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	for l := range bytes.Lines(raw) {
		if l = bytes.TrimSpace(l); stdjson.Valid(l) && !bytes.Contains(l, []byte("ris_error")) {
			lines = append(lines, l)
		}
	}
	return lines
}

// BenchmarkRISLive decodes the sample's messages into a routing table:
// parse, validation, the table's update.
func BenchmarkRISLive(b *testing.B) {
	lines := risLiveLines(b)
	d := NewRISLive(rib.New(rib.Config{}))
	var sink discard
	b.ResetTimer()
	for b.Loop() {
		for _, l := range lines {
			if err := d.Decode(l, &sink); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(lines))/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkRISLiveStdlibParse is the yardstick: the same messages parsed
// by the standard library's encoding/json into the decoder's own types,
// nothing else done with them.
func BenchmarkRISLiveStdlibParse(b *testing.B) {
	lines := risLiveLines(b)
	b.ResetTimer()
	for b.Loop() {
		for _, l := range lines {
			var env risEnvelope
			var m risMessage
			if err := stdjson.Unmarshal(l, &env); err != nil {
				b.Fatal(err)
			}
			if err := stdjson.Unmarshal(env.Data, &m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(lines))/b.Elapsed().Seconds(), "msgs/s")
}
