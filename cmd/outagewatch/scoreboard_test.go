package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/score"
	"gonum.org/v1/gonum/stat"
)

// --every keeps the rows of an IODA export on its grid, and only those:
// a row every 30 minutes from 22:00, or from 22:15 with an offset.
func TestScoreboardEveryKeepsTheRowsOnItsGrid(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "export.csv")
	var b strings.Builder
	b.WriteString("timestamp,bgp,LABEL\n")
	for i := range 12 { // 2023-11-14 22:00 to 22:55, every 5 minutes
		b.WriteString(strconv.Itoa(1_699_999_200+300*i) + "," + strconv.Itoa(500+i) + ",0\n")
	}
	rows, err := score.ParseIODACSV(src, strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	for every, want := range map[string][]string{
		"":        {"22:00,500", "22:05,501", "22:10,502", "22:15,503", "22:20,504", "22:25,505", "22:30,506", "22:35,507", "22:40,508", "22:45,509", "22:50,510", "22:55,511"},
		"30m":     {"22:00,500", "22:30,506"},
		"30m@15m": {"22:15,503", "22:45,509"},
		"20m@5m":  {"22:05,501", "22:25,505", "22:45,509"},
	} {
		grid, err := parseEvery("--every", every)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "obs.csv")
		if err := writeIODAObservations(src, rows, dst, "country:XX", map[string]string{"bgp": "bgp_visible_slash24"}, grid, nil); err != nil {
			t.Fatal(err)
		}
		out, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
			// 2023-11-14T22:05:00Z,country:XX,bgp_visible_slash24,501
			f := strings.Split(l, ",")
			got = append(got, f[0][11:16]+","+f[3])
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("--every %q kept %v, want %v", every, got, want)
		}
	}
	for _, bad := range []string{"0s", "-1h", "1h@1h", "1h@-5m", "hourly", "1h@x"} {
		if _, err := parseEvery("--every", bad); err == nil {
			t.Errorf("--every %q accepted", bad)
		}
	}
}

// --noise perturbs the columns it names and no other, a value held on
// the rows of its round keeps its draw, one seed gives one export, and
// a Poisson draw of a count keeps its mean.
func TestScoreboardNoise(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "export.csv")
	var b strings.Builder
	b.WriteString("timestamp,bgp,ping-slash24,LABEL\n")
	for i := range 2000 { // the probing value held on two rows, a round of 10 minutes
		b.WriteString(strconv.Itoa(1_699_999_200+300*i) + "," + strconv.Itoa(500+i%7) + "," + strconv.Itoa(40+i/2%2) + ",0\n")
	}
	rows, err := score.ParseIODACSV(src, strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string]string{"bgp": "bgp_visible_slash24", "ping-slash24": "active_probing_slash24"}
	write := func(spec []string, seed uint64) (bgp, ping []float64) {
		n, err := parseNoise(spec)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "obs.csv")
		if err := writeIODAObservations(src, rows, dst, "country:XX", cols, rowGrid{}, n.seeded(seed)); err != nil {
			t.Fatal(err)
		}
		out, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
			f := strings.Split(l, ",")
			v, err := strconv.ParseFloat(f[3], 64)
			if err != nil {
				t.Fatal(err)
			}
			if f[2] == "bgp_visible_slash24" {
				bgp = append(bgp, v)
			} else {
				ping = append(ping, v)
			}
		}
		return bgp, ping
	}
	bgp, ping := write([]string{"ping-slash24=poisson"}, 1)
	var sum, sq float64
	for i, v := range ping {
		if bgp[i] != float64(500+i%7) {
			t.Fatalf("row %d: bgp %v, want %d untouched", i, bgp[i], 500+i%7)
		}
		if v != math.Trunc(v) {
			t.Fatalf("row %d: a Poisson draw of %v", i, v)
		}
		if i%2 == 1 && v != ping[i-1] {
			t.Fatalf("rows %d, %d: a held value drawn twice (%v, %v)", i-1, i, ping[i-1], v)
		}
		if i%2 == 0 {
			sum, sq = sum+v, sq+v*v
		}
	}
	// 1,000 draws of means 40 and 41: their mean is 40.5 ± 0.2, their
	// variance 40.75 ± 1.8 (Poisson: the mean).
	n := float64(len(ping) / 2)
	mean := sum / n
	if vr := sq/n - mean*mean; math.Abs(mean-40.5) > 0.8 || math.Abs(vr-40.75) > 8 {
		t.Errorf("Poisson draws of mean %.2f and variance %.2f, want about 40.5 and 40.75", mean, vr)
	}
	if _, again := write([]string{"ping-slash24=poisson"}, 1); !slices.Equal(ping, again) {
		t.Error("seed 1 drew two different exports")
	}
	if _, other := write([]string{"ping-slash24=poisson"}, 2); slices.Equal(ping, other) {
		t.Error("seeds 1 and 2 drew the same export")
	}
	bgp, _ = write([]string{"bgp=lognormal:0.1"}, 1)
	var logs []float64
	for i, v := range bgp {
		logs = append(logs, math.Log(v/float64(500+i%7)))
	}
	if m, sd := stat.MeanStdDev(logs, nil); math.Abs(m) > 0.01 || math.Abs(sd-0.1) > 0.01 {
		t.Errorf("log-normal noise of mean %.3f and σ %.3f on the log scale, want 0 and 0.1", m, sd)
	}
	for _, bad := range []string{"bgp", "=poisson", "bgp=lognormal", "bgp=lognormal:0", "bgp=lognormal:-1", "bgp=gauss:1", "bgp=late", "bgp=late:0", "bgp=poisson:1"} {
		if _, err := parseNoise([]string{bad}); err == nil {
			t.Errorf("--noise %q accepted", bad)
		}
	}
	if _, err := parseNoise([]string{"bgp=poisson", "bgp=lognormal:0.1"}); err == nil {
		t.Error("a column given twice accepted")
	}
}

// --noise rtt=lognormal:SIGMA jitters an Atlas trace's RTTs as written
// into ping results, and leaves a lost sample lost.
func TestScoreboardNoiseOnAtlasRTT(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "4242.csv")
	var b strings.Builder
	b.WriteString("epoch;rtt;cp\n")
	for i := range 2000 {
		rtt := "100"
		if i%10 == 9 {
			rtt = "-3"
		}
		b.WriteString(time.Unix(1_476_000_000+int64(240*i), 0).UTC().Format("2006-01-02 15:04:05") + ";" + rtt + ";0\n")
	}
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := parseNoise([]string{"rtt=lognormal:0.05"})
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "out.jsonl")
	if _, err := writeAtlasResults([]string{src}, dst, rowGrid{}, n.seeded(1)); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	var logs []float64
	lost := 0
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Rcvd   int `json:"rcvd"`
			Result []struct {
				RTT *float64 `json:"rtt"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Rcvd == 0 {
			lost++
			continue
		}
		logs = append(logs, math.Log(*r.Result[0].RTT/100))
	}
	if m, sd := stat.MeanStdDev(logs, nil); lost != 200 || len(logs) != 1800 || math.Abs(m) > 0.005 || math.Abs(sd-0.05) > 0.005 {
		t.Errorf("%d lost, %d answered with log-RTT of mean %.4f and σ %.4f; want 200, 1800, 0 and 0.05", lost, len(logs), m, sd)
	}
	// rtt=late:SIGMA only ever delays: the log-RTT is half-normal, its
	// mean σ·√(2/π) and none under the path's own 100 ms.
	n, err = parseNoise([]string{"rtt=late:0.05"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeAtlasResults([]string{src}, dst, rowGrid{}, n.seeded(1)); err != nil {
		t.Fatal(err)
	}
	if out, err = os.ReadFile(dst); err != nil {
		t.Fatal(err)
	}
	logs = logs[:0]
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Result []struct {
				RTT *float64 `json:"rtt"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Result[0].RTT != nil {
			logs = append(logs, math.Log(*r.Result[0].RTT/100))
		}
	}
	if m := stat.Mean(logs, nil); len(logs) != 1800 || slices.Min(logs) < 0 || math.Abs(m-0.05*math.Sqrt(2/math.Pi)) > 0.003 {
		t.Errorf("late noise: %d answered, least log-RTT %.4f, mean %.4f; want 1800, ≥ 0, and %.4f", len(logs), slices.Min(logs), m, 0.05*math.Sqrt(2/math.Pi))
	}
}

// Google's traffic for Iraq, on noisier copies of itself (log-normal
// noise of σ 0.2 on each 30-minute value, ten draws), read every 30
// minutes: the nightly shutdowns found, and no false alert. A collapse
// that the day's forecast cannot page on yet (the hour known from a few
// days, its error at the 95 % bound past any drop) is kept out of what
// the series learns; learnt, a missed night widened its hour's error
// and the nights after were missed too (41 of 80 found before).
func TestScoreboardGoogleNightsOnNoisierCopies(t *testing.T) {
	data := "../../../shared/testdata"
	if _, err := os.Stat(data); err != nil {
		t.Skip("no labelled sets beside the repository:", err)
	}
	s, err := score.LoadBoardSet("../../scoreboard/gtr-iraq-2023.yaml")
	if err != nil {
		t.Fatal(err)
	}
	grid, err := parseEvery("--every", "30m")
	if err != nil {
		t.Fatal(err)
	}
	noise, err := parseNoise([]string{"gtr-norm=lognormal:0.2"})
	if err != nil {
		t.Fatal(err)
	}
	row := score.Row{Set: s.Name}
	for seed := range uint64(10) {
		r, err := scoreSet(s, data, grid, rowGrid{}, noise.seeded(seed+1))
		if err != nil {
			t.Fatal(err)
		}
		row.Add(r)
	}
	if row.Windows != 80 || row.Detected != 59 || row.False != 0 {
		t.Errorf("%d of %d nights found, %d false alerts; want 59 of 80, none false", row.Detected, row.Windows, row.False)
	}
}

// IODA's exports given bare, as files nobody wrote a set for, score as
// the sets written for them: their entity from their names, IODA's
// sources they have, their windows from their LABEL column. The Atlas
// traces given bare are one row, the set's.
func TestScoreboardBareFilesScoreAsTheirSets(t *testing.T) {
	data, err := filepath.Abs("../../../shared/testdata")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(data); err != nil {
		t.Skip("no labelled sets beside the repository:", err)
	}
	t.Chdir("../..") // the shipped IODA rules are found from the repository root
	exports, _ := filepath.Glob(filepath.Join(data, "ioda-labelled", "ioda_*.csv.gz"))
	traces, _ := filepath.Glob(filepath.Join(data, "atlas-rtt-labelled", "*.csv.gz"))
	bare, err := loadSets(append(exports, traces...))
	if err != nil {
		t.Fatal(err)
	}
	named, err := loadSets([]string{"scoreboard/ioda-iraq-2023.yaml", "scoreboard/ioda-gaza-2023.yaml",
		"scoreboard/ioda-zhytomyr-2022.yaml", "scoreboard/atlas-rtt-2016.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bare) != 4 || len(exports) != 3 || len(traces) != 25 {
		t.Fatalf("%d sets from %d exports and %d traces, want 4 from 3 and 25", len(bare), len(exports), len(traces))
	}
	// Both in the same order: Iraq, Gaza, Zhytomyr, then the traces.
	for i := range bare {
		got, err := scoreSet(bare[i], data, rowGrid{}, rowGrid{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := scoreSet(named[i], data, rowGrid{}, rowGrid{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got.Set, want.Set = "", ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s given bare: %+v; its set %s: %+v", bare[i].Files[0], got, named[i].File, want)
		}
		if got.Windows == 0 || got.Alerts == 0 {
			t.Errorf("%s: nothing scored: %+v", named[i].File, got)
		}
	}
}

// A trace's probe is the number its file's name holds, however the name
// is dressed; a name with no number, or two, is refused.
func TestAtlasProbe(t *testing.T) {
	for name, want := range map[string]string{
		"/data/11119.csv.gz": "11119", "probe-11119.csv": "11119", "prb_0042_rtt.csv": "42",
		"trace.csv": "", "probe-11119-to-193.0.14.129.csv": "", "12345678901.csv": "",
	} {
		got, err := atlasProbe(name)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
}
