package obsfile

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/gztest"
	"github.com/outagewatch/outagewatch/obs"
)

// iodaLines reads with read and returns each record as "time-in-seconds
// offset line", the offset from 0.
func iodaLines(t *testing.T, read func(func(ingest.Record) error) (IODAStats, error)) ([]string, IODAStats) {
	t.Helper()
	var got []string
	st, err := read(func(r ingest.Record) error {
		if r.Stream != Stream || r.Format != FormatCSV {
			t.Errorf("record of %s/%s, want %s/%s", r.Stream, r.Format, Stream, FormatCSV)
		}
		got = append(got, strconv.FormatInt(r.Time/1e9, 10)+" "+strconv.FormatInt(r.Offset, 10)+" "+string(r.Value))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, st
}

// The API's response replays each of IODA's outage sources as its
// signal, a value every step from `from`, nulls as gaps; UCSD's telescope
// gives way to Merit's for the same entity, and what has no signal, is not
// a number or has no place in time is counted, not replayed.
func TestReadIODAJSON(t *testing.T) {
	got, st := iodaLines(t, func(fn func(ingest.Record) error) (IODAStats, error) {
		return ReadIODAJSON(strings.NewReader(iodaResponse), fn)
	})
	want := []string{
		"1698364800 0 1698364800,region:1226,bgp_visible_slash24,560",
		"1698365400 1 1698365400,region:1226,bgp_visible_slash24,542",
		"1698364800 2 1698364800,region:1226,active_probing_slash24,31",
		"1698365400 3 1698365400,region:1226,active_probing_slash24,17.5",
		"1698364800 4 1698364800,region:1226,telescope_sources,4.4",
		"1692489600 9 1692489600,country:IQ,telescope_sources,120",
	}
	if !slices.Equal(got, want) {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantSkipped := map[string]int64{SkipSource: 3, SkipSeries: 1, SkipNotNumber: 1}
	if st.Values != 11 || st.Records != 6 || !maps.Equal(st.Skipped, wantSkipped) || st.FirstSkipped != 6 ||
		st.FirstWhy != `source "ucsd-nt": `+skipText[SkipSource] {
		t.Errorf("stats %+v; want 11 values, 6 records, skipped %v, the first the 6th (ucsd-nt beside merit-nt)", st, wantSkipped)
	}
	if want := map[string]string{"region:1226": "Gaza Strip"}; !maps.Equal(st.Names, want) {
		t.Errorf("names %v, want %v (the API's entityName; Iraq's series gives none)", st.Names, want)
	}
}

// iodaResponse is a signals/raw response of two entities.
const iodaResponse = `{"type":"signals","metadata":{"requestTime":"2023-10-27T00:00:00Z"},"error":null,"perf":null,"data":[[
 {"entityType":"region","entityCode":"1226","entityName":"Gaza Strip","datasource":"bgp","subtype":"","from":1698364800,"until":1698365700,"step":300,"nativeStep":300,"values":[560,null,542]},
 {"entityType":"region","entityCode":"1226","datasource":"ping-slash24","from":1698364800,"step":600,"values":[31,17.5]},
 {"entityType":"region","entityCode":"1226","datasource":"merit-nt","from":1698364800,"step":300,"values":[4.4]},
 {"entityType":"region","entityCode":"1226","datasource":"ucsd-nt","from":1698364800,"step":300,"values":[9,9]},
 {"entityType":"region","entityCode":"1226","datasource":"gtr","subtype":"WEB_SEARCH","from":1698364800,"step":1800,"values":[0.5,null]},
 {"entityType":"region","entityCode":"1226","datasource":"ping-slash24","from":1698364800,"step":0,"values":[30]}],
 [{"entityType":"country","entityCode":"IQ","datasource":"ucsd-nt","from":1692489600,"step":300,"values":[120,{"agg_values":{}}]}]],
 "copyright":"IODA"}`

// A response cut short anywhere (a download cut off) replays its whole
// series before the cut, never part of one, and says where it was cut;
// gzipped too, as one line.
func TestReadIODAJSONCutShort(t *testing.T) {
	var all []string
	if _, err := ReadIODAJSON(strings.NewReader(iodaResponse), func(r ingest.Record) error { all = append(all, string(r.Value)); return nil }); err != nil {
		t.Fatal(err)
	}
	for cut := 1; cut < len(iodaResponse); cut++ {
		var got []string
		_, err := ReadIODAJSON(strings.NewReader(iodaResponse[:cut]), func(r ingest.Record) error { got = append(got, string(r.Value)); return nil })
		var torn *ingest.TornError
		// Merit's series comes before UCSD's in this response, so the
		// series before any cut replay as a prefix of the whole.
		if !errors.As(err, &torn) || len(got) > len(all) || !slices.Equal(got, all[:len(got)]) || torn.Record > 7 ||
			!strings.Contains(err.Error(), fmt.Sprintf("the response ends inside series %d", torn.Record+1)) {
			t.Fatalf("cut at %d (…%q): %d records, %v", cut, iodaResponse[max(cut-20, 0):cut], len(got), err)
		}
	}
	z := gztest.Gzip([]byte(strings.ReplaceAll(iodaResponse, "\n", "")))
	path := filepath.Join(t.TempDir(), "ioda.json.gz")
	if err := os.WriteFile(path, z[:len(z)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	var n int
	_, err := ReadIODAFile(path, func(ingest.Record) error { n++; return nil })
	var torn *ingest.TornError
	if !errors.As(err, &torn) || torn.Record < 1 || n < 2 || n > len(all) {
		t.Fatalf("gzipped response cut short: %d records, %v", n, err)
	}
}

// A body that is not IODA's signals response, or is its error, is the
// file's error, saying which.
func TestReadIODAJSONRefuses(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"type":"signals","error":"entityType must be one of country, region, asn","data":null}`, "IODA's error: \"entityType must be one of"},
		{`time,entity,signal,value`, "not an IODA signals response (JSON)"},
		{" \n[{\"type\":\"ping\",\"prb_id\":1}]", "name a RIPE Atlas download *.atlas.json"},
		{`{"type":"outages"}`, `no "data"`},
		{`{"data":{"signals":[]}}`, `"data" is not a list`},
		{`{"data":[[{"from":"yesterday"}]]}`, "data[0]"},
	} {
		_, err := ReadIODAJSON(strings.NewReader(c.body), func(ingest.Record) error { return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40s: error %v, want one saying %q", c.body, err, c.want)
		}
	}
}

// An IODA CSV export replays its sources' columns as their signals, for
// the entity its name gives; its label and date columns are not values,
// an empty or nan cell is a gap, and a row or a cell that cannot be read
// is counted and left out, the rest of the file replayed.
func TestReadIODACSV(t *testing.T) {
	const body = "timestamp,gtr,merit-nt,bgp,ping-slash24,ucsd-nt,datetime,LABEL\n" +
		"1698364800,0.5,4.4,560,31.0,9,2023-10-27 00:00:00+00:00,0\n" +
		"1698365100,,nan,559,,9,2023-10-27 00:05:00+00:00,1\n" +
		"1698365400,0.4,4.1,five,17,9,2023-10-27 00:10:00+00:00,1\n" +
		"1698365700,0.4,4.1\n" +
		"yesterday,0.4,4.1,540,17,9,x,1\n" +
		"1698366000.0,0.4,3.9,541,16,9,2023-10-27 00:20:00+00:00,1\n"
	got, st := iodaLines(t, func(fn func(ingest.Record) error) (IODAStats, error) {
		return ReadIODACSV(strings.NewReader(body), "region:1226", fn)
	})
	want := []string{
		"1698364800 1 1698364800,region:1226,telescope_sources,4.4",
		"1698364800 2 1698364800,region:1226,bgp_visible_slash24,560",
		"1698364800 3 1698364800,region:1226,active_probing_slash24,31",
		"1698365100 5 1698365100,region:1226,bgp_visible_slash24,559",
		"1698365400 8 1698365400,region:1226,telescope_sources,4.1",
		"1698365400 10 1698365400,region:1226,active_probing_slash24,17",
		"1698366000 15 1698366000,region:1226,telescope_sources,3.9",
		"1698366000 16 1698366000,region:1226,bgp_visible_slash24,541",
		"1698366000 17 1698366000,region:1226,active_probing_slash24,16",
	}
	if !slices.Equal(got, want) {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantSkipped := map[string]int64{SkipSource: 7, SkipNotNumber: 1, SkipRow: 2}
	if st.Values != 19 || st.Records != 9 || !maps.Equal(st.Skipped, wantSkipped) || st.FirstSkipped != 1 ||
		st.FirstWhy != `source "gtr": `+skipText[SkipSource] {
		t.Errorf("stats %+v; want 19 values, 9 records, skipped %v, the first the 1st (gtr)", st, wantSkipped)
	}
	if _, err := ReadIODACSV(strings.NewReader("time,entity,signal,value\n"), "region:1226", func(ingest.Record) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "want an IODA export's") {
		t.Errorf("observation lines read as an IODA export: %v", err)
	}
}

// An export's file name is the only place it names its entity: its kind
// and code, then what IODA calls it.
func TestIODAEntity(t *testing.T) {
	for name, want := range map[string][2]string{
		"/data/ioda_country_IQ_iraq.csv.gz":         {"country:IQ", "iraq"},
		"ioda_region_1226_gazastrip.csv":            {"region:1226", "gazastrip"},
		"ioda_asn_20294_mtn-uganda.csv":             {"asn:20294", "mtn-uganda"},
		"ioda_country_PK.csv.gz":                    {"country:PK", ""},
		"ioda_city_5128581_new-york.csv":            {"", "new-york"},
		"iraq.csv":                                  {"", ""},
		"ioda_country__iraq.csv":                    {"", "iraq"},
		"export_ioda_country_IQ_iraq.csv.gz":        {"", "IQ_iraq"},
		"/tmp/ioda_region_4369_zhytomyr.csv.gz.csv": {"region:4369", "zhytomyr"},
	} {
		got, err := IODAEntity(name)
		if got != want[0] || (want[0] == "") != (err != nil) {
			t.Errorf("IODAEntity(%q) = %q, %v; want %q", name, got, err, want[0])
		}
		if got := iodaFileName(name); got != want[1] {
			t.Errorf("iodaFileName(%q) = %q, want %q", name, got, want[1])
		}
	}
}

// Whatever the bytes, the readers return; every value is counted once,
// replayed or skipped, and every record is a line of four fields whose
// time is the record's.
func FuzzReadIODAJSON(f *testing.F) {
	f.Add(`{"data":[[{"entityType":"country","entityCode":"IQ","datasource":"bgp","from":1692489600,"step":300,"values":[2917,null,2916]}]]}`)
	f.Add(`{"data":[{"entityType":"asn","entityCode":"20294","datasource":"ping-slash24","from":1,"step":9223372036,"values":[1,2,3]}]}`)
	f.Add(`{"error":null,"data":[[{"entityType":"region","entityCode":"1","datasource":"merit-nt","from":1698364800,"step":300,"values":[{"agg_values":1},"7",1e400]}]]}`)
	f.Add(`{"data":[]}`)
	declareIODACounts(f)
	f.Fuzz(func(t *testing.T, body string) {
		st, err := ReadIODAJSON(strings.NewReader(body), checkIODARecord(t))
		checkIODAStats(t, st, err)
	})
}

func FuzzReadIODACSV(f *testing.F) {
	f.Add("timestamp,bgp,ping-slash24,merit-nt,LABEL\n1698364800,560,31,4.4,0\n1698365100,,nan,x,1\n")
	f.Add("timestamp,ucsd-nt,merit-nt\n\"1698364800\",1,\"2\n")
	f.Add("timestamp,bgp\n-5,1\n9223372036854775807,1\n1,1,1\n")
	declareIODACounts(f)
	f.Fuzz(func(t *testing.T, body string) {
		st, err := ReadIODACSV(strings.NewReader(body), "country:IQ", checkIODARecord(t))
		checkIODAStats(t, st, err)
	})
}

func checkIODARecord(t *testing.T) func(ingest.Record) error {
	return func(r ingest.Record) error {
		f := strings.Split(string(r.Value), ",")
		if len(f) != 4 {
			t.Fatalf("record %q: want time,entity,signal,value", r.Value)
		}
		sec, err := ParseTime(f[0])
		if err != nil || sec != r.Time {
			t.Fatalf("record %q at %d: its time reads %d, %v", r.Value, r.Time, sec, err)
		}
		if _, err := strconv.ParseFloat(f[3], 64); err != nil {
			t.Fatalf("record %q: value %v", r.Value, err)
		}
		return nil
	}
}

func checkIODAStats(t *testing.T, st IODAStats, err error) {
	var skipped int64
	for _, n := range st.Skipped {
		skipped += n
	}
	var torn *ingest.TornError
	if (err == nil || errors.As(err, &torn)) && st.Records+skipped != st.Values {
		t.Fatalf("%d values, %d replayed and %d skipped", st.Values, st.Records, skipped)
	}
	if c := st.Caveat(); strings.Contains(c, "whole numbers") && st.Records < minWhole {
		t.Fatalf("%d values replayed, and the caveat says they are whole numbers: %s", st.Records, c)
	}
}

// A series the API averaged over a longer step than its native one is
// declareIODACounts declares the counts as the IODA rules do (noise:
// poisson; the telescope the mean of five one-minute counts); BGP's
// visible space is no sampled count.
func declareIODACounts(t testing.TB) {
	t.Helper()
	for _, d := range []obs.SignalDef{
		{Name: "active_probing_slash24", Unit: "/24 blocks up", Kind: obs.KindGauge, Feed: "ioda-active-probing", Agg: obs.Last,
			Cadence: int64(10 * time.Minute), Poisson: true},
		{Name: "telescope_sources", Unit: "unique source IPs", Kind: obs.KindDistinct, Feed: "ioda-telescope", Agg: obs.Max,
			Cadence: int64(5 * time.Minute), Poisson: true, MeanOf: 5},
	} {
		if _, err := obs.Declare(d); err != nil {
			t.Fatal(err)
		}
	}
}

// An export whose telescope column holds whole numbers only holds single
// counts, not the means of five the rules take it for: it replays, and
// says so. Means of five (4.4), or too few values to tell, say nothing;
// active probing, a plain count, is whole by nature.
func TestReadIODACSVWholeTelescope(t *testing.T) {
	declareIODACounts(t)
	csvOf := func(n int, odd float64) string {
		var b strings.Builder
		b.WriteString("timestamp,merit-nt,ping-slash24,LABEL\n")
		for i := range n {
			v := float64(3 + i%4)
			if i == 5 && odd > 0 {
				v = odd
			}
			fmt.Fprintf(&b, "%d,%g,%d,0\n", 1698364800+300*i, v, 30+i%3)
		}
		return b.String()
	}
	read := func(doc string) *IODAStats {
		t.Helper()
		st, err := ReadIODACSV(strings.NewReader(doc), "region:1226", func(ingest.Record) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return &st
	}
	want := "all 25 values of telescope_sources above 0 are whole numbers: single counts, not the means of 5 that its declaration (counted_every) takes them for; " +
		"their sampling noise reads 2.24 times too small, and chance falls may page"
	if got := read(csvOf(25, 0)).Caveat(); got != want {
		t.Errorf("whole numbers: caveat %q\nwant %q", got, want)
	}
	if got := read(csvOf(25, 4.4)).Caveat(); got != "" {
		t.Errorf("one mean of five among them: caveat %q", got)
	}
	if got := read(csvOf(minWhole-1, 0)).Caveat(); got != "" {
		t.Errorf("%d values: caveat %q", minWhole-1, got)
	}
}

// replayed as it comes, and said to be averages: judged as one reading
// each, its sampling noise is overstated.
func TestReadIODAJSONAveraged(t *testing.T) {
	const body = `{"data":[[
 {"entityType":"region","entityCode":"1226","datasource":"bgp","from":1698364800,"step":300,"nativeStep":300,"values":[560,560]},
 {"entityType":"region","entityCode":"1226","datasource":"ping-slash24","from":1698364800,"step":3600,"nativeStep":600,"values":[31,30]},
 {"entityType":"region","entityCode":"1226","datasource":"merit-nt","from":1698364800,"step":3600,"nativeStep":300,"values":[4.4]},
 {"entityType":"region","entityCode":"1226","datasource":"gtr","from":1698364800,"step":3600,"nativeStep":1800,"values":[0.5]}]]}`
	declareIODACounts(t)
	st, err := ReadIODAJSON(strings.NewReader(body), func(ingest.Record) error { return nil })
	if err != nil || st.Records != 5 || st.Averaged != 2 || st.Step != 3600 || st.NativeStep != 600 {
		t.Fatalf("stats %+v, %v: want 5 records, 2 series averaged, the first at 3600 s of 600", st, err)
	}
	want := "2 series are IODA's averages of 6 readings (step 3600s, native 600s), judged as one reading each: " +
		"a count's sampling noise reads 2.45 times too large, and smaller drops pass unseen; ask the API for a shorter range to get native steps"
	if got := st.Caveat(); got != want {
		t.Errorf("caveat %q\nwant %q", got, want)
	}
	if st, _ := ReadIODAJSON(strings.NewReader(iodaResponse), func(ingest.Record) error { return nil }); st.Caveat() != "" {
		t.Errorf("native steps: caveat %q", st.Caveat())
	}
}
