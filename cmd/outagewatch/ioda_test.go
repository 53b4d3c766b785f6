package main

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/internal/gztest"
	"github.com/outagewatch/outagewatch/score"
)

// IODA's files replay as an operator downloads them, with the shipped
// IODA rules and nothing rewritten: Gaza's export as it comes (a CSV of
// one region, named as IODA names it) and the same signals as IODA's API
// gives them (GET /v2/signals/raw/region/1226: one series a source,
// values every step, null for a gap) give the same alerts, byte for
// byte but for the region's name (the API's entityName, the export's file
// name): the three blackouts on active probing and the telescope's gaps.
// produce plays the response into Kafka as a live feed of observations.
func TestReplayIODAFilesAsTheyCome(t *testing.T) {
	export, err := filepath.Abs("../../../shared/testdata/ioda-labelled/ioda_region_1226_gazastrip.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(export); err != nil {
		t.Skip("no labelled sets beside the repository:", err)
	}
	rows, err := score.ReadIODACSV(export)
	if err != nil {
		t.Fatal(err)
	}
	api := filepath.Join(t.TempDir(), "gaza.json.gz")
	writeIODAResponse(t, api, "region", "1226", rows)

	rules := "../../examples/ioda/ioda.yaml"
	fromCSV, _, err := run(t, "replay", "--rules", rules, export)
	if err != nil {
		t.Fatal(err)
	}
	fromAPI, _, err := run(t, "replay", "--rules", rules, api)
	if err != nil {
		t.Fatal(err)
	}
	// Each names the region as it can: the API by its entityName, the
	// export by its file name. Past that, the same bytes.
	for _, c := range []struct{ out, name string }{{fromCSV, "gazastrip (region 1226)"}, {fromAPI, "Gaza Strip (region 1226)"}} {
		if !strings.Contains(c.out, `"display":"`+c.name+`"`) || !strings.Contains(c.out, "Outage in "+c.name+":") {
			t.Errorf("the region is not named %q:\n%s", c.name, c.out)
		}
	}
	if a, b := strings.ReplaceAll(fromCSV, "gazastrip (region 1226)", "…"), strings.ReplaceAll(fromAPI, "Gaza Strip (region 1226)", "…"); a != b {
		t.Errorf("the export and the API's response replay differently:\n%s\n---\n%s", a, b)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(fromCSV), "\n") {
		var a struct{ Kind, Status, Rule, Entity, Start string }
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatal(err)
		}
		if a.Kind == "alert" && a.Status == "firing" {
			got = append(got, a.Start+" "+a.Rule+" "+a.Entity)
		}
	}
	want := []string{
		"2023-10-26T21:00:00Z feed-health feed:ioda-telescope",
		"2023-10-27T15:30:00Z ioda-active-probing region:1226",
		"2023-10-27T17:00:00Z feed-health feed:ioda-telescope",
		"2023-10-28T05:00:00Z feed-health feed:ioda-telescope",
		"2023-10-28T20:00:00Z feed-health feed:ioda-telescope",
		"2023-10-31T02:00:00Z feed-health feed:ioda-telescope",
		"2023-11-01T01:00:00Z ioda-active-probing region:1226",
		"2023-11-05T05:00:00Z feed-health feed:ioda-telescope",
		"2023-11-05T16:30:00Z ioda-active-probing region:1226",
	}
	if !slices.Equal(got, want) {
		t.Errorf("alerts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Played into Kafka, the API's response is the observation lines a
	// live service's observations topic takes, each at its event time.
	addr := startKfake(t)
	runProduce(t, api, "--brokers", addr)
	recs := consumeAll(t, addr, []string{"observations"}, 9894)["observations"]
	first := slices.MinFunc(recs, func(a, b consumed) int { return int(a.ts - b.ts) })
	if first.ts != rows[0].Time.UnixMilli() || !strings.HasPrefix(first.value, strconv.FormatInt(rows[0].Time.Unix(), 10)+",region:1226,") {
		t.Errorf("first record %+v; want the export's first row, at its time", first)
	}
}

// writeIODAResponse writes rows as IODA's API answers for them, gzipped:
// the envelope, one series a source column, a value every 5 minutes from
// the first row, null where the export has none.
func writeIODAResponse(t *testing.T, path, kind, code string, rows []score.IODARow) {
	t.Helper()
	const step = 300
	from := rows[0].Time.Unix()
	n := int((rows[len(rows)-1].Time.Unix()-from)/step) + 1
	var series []map[string]any
	for _, src := range []string{"bgp", "ping-slash24", "merit-nt"} {
		vs := make([]any, n)
		for _, r := range rows {
			if v, ok := r.Values[src]; ok && v == v {
				vs[(r.Time.Unix()-from)/step] = v
			}
		}
		series = append(series, map[string]any{"entityType": kind, "entityCode": code, "entityName": "Gaza Strip",
			"datasource": src, "subtype": "", "from": from, "until": from + int64(n)*step, "step": step, "nativeStep": step, "values": vs})
	}
	body := map[string]any{"type": "signals", "error": nil, "perf": nil,
		"metadata": map[string]any{"requestTime": time.Now().UTC().Format(time.RFC3339)}, "data": [][]map[string]any{series}}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if err := json.NewEncoder(zw).Encode(body); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// An export saved by a spreadsheet begins with a byte order mark: it
// replays exactly as the file without one (the mark is no part of the
// header's first column), and a labelled trace so saved scores as the
// trace does.
func TestFilesSavedWithAByteOrderMark(t *testing.T) {
	withBOM := func(src, name string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, append([]byte("\ufeff"), gztest.ReadFile(t, src)...), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rules := "../../examples/ioda/ioda.yaml"
	plain, _, err := run(t, "replay", "--rules", rules, "../../examples/ioda/uganda-2021-01-13.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	marked, _, err := run(t, "replay", "--rules", rules, withBOM("../../examples/ioda/uganda-2021-01-13.csv.gz", "uganda.csv"))
	if err != nil || marked != plain || !strings.Contains(plain, `"status":"firing"`) {
		t.Fatalf("with a byte order mark (err %v): the replay differs from the file's without one", err)
	}

	trace := "../../detectors/testdata/atlas-rtt-labelled/11180.csv.gz"
	plain, _, err = run(t, "scoreboard", "--json", trace)
	if err != nil {
		t.Fatal(err)
	}
	marked, _, err = run(t, "scoreboard", "--json", withBOM(trace, "11180.csv"))
	if err != nil || marked != plain || !strings.Contains(plain, `"detected": 2`) {
		t.Fatalf("a trace with a byte order mark (err %v) scores\n%s\nwhere the trace scores\n%s", err, marked, plain)
	}
}
