package score_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/score"
)

func at(hm string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", "2024-03-01 "+hm)
	if err != nil {
		panic(err)
	}
	return t
}

func TestScoreWindows(t *testing.T) {
	windows := []score.Window{{From: at("10:00"), To: at("11:00")}, {From: at("14:00"), To: at("15:00")}, {From: at("18:00"), To: at("19:00")}}
	alert := func(id, start, raised string) alerting.Event {
		return alerting.Event{ID: id, Kind: alerting.KindAlert, Status: alerting.Firing, Detector: "prefix_withdrawal",
			Rule: "r", Entity: "country:XX", Start: at(start), At: at(raised)}
	}
	page := func(id, start, update string) alerting.Event {
		return alerting.Event{ID: id, Kind: alerting.KindEvent, Status: alerting.Firing, Entity: "country:XX",
			Start: at(start), At: at(start), Outage: &alerting.Outage{Update: update}}
	}
	muted := alert("m", "12:00", "12:05")
	muted.Muted = "silence s1"
	feed := alert("f", "12:00", "12:05")
	feed.Detector = "feed_health"
	resolved := alert("a", "09:50", "10:40")
	resolved.Status = alerting.Resolved
	events := []alerting.Event{
		alert("a", "09:50", "10:05"), // 10 min before the window: detects it, raised inside
		page("e1", "09:50", "open"),
		resolved,
		alert("a", "09:50", "10:50"), // back inside its hold: the same alert
		page("e1", "09:50", "grow"),
		alert("b", "12:00", "12:10"), // outside every window: false
		page("e2", "12:00", "open"),  // so is its page
		muted, feed,
		alert("c", "14:30", "15:10"), // detects the second window, raised after it
		alert("d", "13:40", "13:50"), // 20 min before a window: false
	}
	got := score.ScoreWindows("set", windows, events)
	want := score.Row{Set: "set", Windows: 3, Detected: 2, Inside: 1, Alerts: 4, False: 2, Pages: 2, FalsePages: 1, Feed: 1,
		Delay:   5 * time.Minute,
		Missed:  []time.Time{at("18:00")},
		FalseAt: []string{"2024-03-01T12:00:00Z r country:XX", "2024-03-01T13:40:00Z r country:XX"}}
	// As JSON: every field a reader of the board sees.
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Fatalf("got  %s\nwant %s", g, w)
	}
}

func TestUpwardShiftsAndTheirScore(t *testing.T) {
	t0 := at("00:00")
	var s []score.Sample
	for m := 0; m < 400; m += 4 {
		rtt := 100.0
		switch {
		case m >= 200 && m < 260:
			rtt = 130 // +30 %, +30 ms for an hour: an upward shift
		case m >= 300 && m < 320:
			rtt = 150 // +50 % for 20 minutes: too short
		}
		if m == 96 {
			rtt = -3 // lost: not in the means
		}
		s = append(s, score.Sample{Time: t0.Add(time.Duration(m) * time.Minute), RTT: rtt, CP: m == 200 || m == 260 || m == 300 || m == 320})
	}
	// One shift before the warm-up would not count either.
	s[20].CP = true // at 80 min: inside the first 2 h 40 min
	shifts := score.UpwardShifts(s)
	if len(shifts) != 1 || !shifts[0].Equal(t0.Add(200*time.Minute)) {
		t.Fatalf("shifts %v, want the one at 200 min", shifts)
	}
	alert := func(start, raised int) alerting.Event {
		return alerting.Event{ID: "p", Kind: alerting.KindAlert, Status: alerting.Firing, Entity: "probe:1>192.0.2.0/24",
			Start: t0.Add(time.Duration(start) * time.Minute), At: t0.Add(time.Duration(raised) * time.Minute)}
	}
	r := score.ScoreShifts("atlas", s, []alerting.Event{alert(204, 240), alert(140, 170), alert(305, 330)})
	if r.Windows != 1 || r.Detected != 1 || r.Inside != 1 || r.Alerts != 3 || r.False != 1 || r.Delay != 40*time.Minute {
		t.Fatalf("got %+v: want 1 shift detected and raised inside at 40 min, 3 alerts of which the one at 140 min false", r)
	}
	// Raised more than an hour after: missed, as the scoring defines a
	// detection (and the alert, starting at the shift, is not false).
	if r := score.ScoreShifts("atlas", s, []alerting.Event{alert(204, 261)}); r.Detected != 0 || r.Inside != 0 || len(r.Missed) != 1 || r.False != 0 {
		t.Fatalf("late alert: %+v", r)
	}
	// An hour to the minute is in time.
	if r := score.ScoreShifts("atlas", s, []alerting.Event{alert(204, 260)}); r.Detected != 1 || r.Inside != 1 {
		t.Fatalf("alert raised at the hour: %+v", r)
	}
}

// The windows of the sets read from IODA's exports (its three signals,
// and Google's traffic beside them) are the runs of their file's LABEL
// column.
func TestIODASetWindowsAreTheirLabels(t *testing.T) {
	all, _ := filepath.Glob("../scoreboard/*.yaml")
	n := 0
	for _, f := range all {
		s, err := score.LoadBoardSet(f)
		if err != nil {
			t.Fatal(err)
		}
		if s.Format != "ioda-csv" {
			continue
		}
		n++
		paths, err := s.Paths("../../shared/testdata")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := score.ReadIODACSV(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		if got := score.LabelWindows(rows); !reflect.DeepEqual(got, s.Windows) {
			t.Errorf("%s: windows %v, the LABEL column says %v", f, s.Windows, got)
		}
	}
	if n != 4 {
		t.Fatalf("%d sets read IODA's exports, want Gaza, Iraq, Zhytomyr and Iraq's Google traffic", n)
	}
}

// A set that leaves out an IODA export's entity, columns or windows has
// them read from the file: its name, IODA's sources it has (Merit's
// telescope over UCSD's when it has both; other columns, Google's
// traffic among them, left alone) and its LABEL column. What a set
// names is kept.
func TestForIODAFileReadsWhatTheSetLeavesOut(t *testing.T) {
	csv := "timestamp,gtr,ucsd-nt,merit-nt,bgp,ping-slash24,LABEL\n" +
		"1692493200,1,2,3,2917,581,0\n" +
		"1692493500,1,2,3,2917,581,1\n" +
		"1692493800,1,2,3,2917,581,1\n" +
		"1692494100,1,2,3,2917,581,0\n"
	rows, err := score.ParseIODACSV("x.csv", strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	bare := &score.BoardSet{Name: "x", Format: score.FormatIODACSV}
	f, err := bare.ForIODAFile("ioda_country_IQ_iraq.csv.gz", rows)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	want := score.IODAFile{Entity: "country:IQ",
		Columns: map[string]string{"bgp": "bgp_visible_slash24", "ping-slash24": "active_probing_slash24", "merit-nt": "telescope_sources"},
		Windows: []score.Window{{From: at(1692493500), To: at(1692494100)}}}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("bare set: %+v, want %+v", f, want)
	}
	named := &score.BoardSet{Name: "x", Format: score.FormatIODACSV, Entity: "region:1", Columns: map[string]string{"gtr": "g"},
		Windows: []score.Window{{From: at(1), To: at(2)}}}
	if f, err := named.ForIODAFile("ioda_country_IQ_iraq.csv.gz", rows); err != nil || f.Entity != "region:1" ||
		!reflect.DeepEqual(f.Columns, named.Columns) || !reflect.DeepEqual(f.Windows, named.Windows) {
		t.Errorf("named set: %+v, %v; want its own", f, err)
	}
	if f, err := bare.ForIODAFile("/data/Iraq exams.2023.csv", rows); err != nil || f.Entity != "region:iraq-exams" {
		t.Errorf("an export named otherwise: %+v, %v; want it scored as region:iraq-exams", f, err)
	}
	other, _ := score.ParseIODACSV("y.csv", strings.NewReader("timestamp,gtr,LABEL\n1,2,0\n"))
	if _, err := bare.ForIODAFile("ioda_country_IQ_iraq.csv", other); err == nil || !strings.Contains(err.Error(), "none of IODA's sources") {
		t.Errorf("export without IODA's sources: %v", err)
	}
}

// A labelled file is told by its header.
func TestSniffFormat(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ body, want string }{
		"ioda.csv":  {"timestamp,bgp,LABEL\n1,2,0\n", score.FormatIODACSV},
		"11119.csv": {"epoch;rtt;cp\r\n14/10/2016 21:17;178.9;0\r\n", score.FormatAtlasRTT},
		"11145.csv": {"rtt,epoch,cp\n178.9,1476479820,0\n", score.FormatAtlasRTT},
		"11150.csv": {"epoch;rtt\n14/10/2016 21:17;178.9\n", ""},
		"junk.csv":  {"time,entity,signal,value\n", ""},
		"empty.csv": {"", ""},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := score.SniffFormat(p)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%s: %q, %v; want %q", name, got, err, c.want)
		}
	}
}

// An IODA export reads the same with its label column in lower case,
// its label as true, its timestamps as floats or out of order; a
// timestamp given twice is refused, as its label would be a guess.
func TestParseIODACSVLayouts(t *testing.T) {
	want := []score.Window{{From: time.Unix(1698334200, 0).UTC(), To: time.Unix(1698334800, 0).UTC()}}
	for _, body := range []string{
		"timestamp,bgp,LABEL\n1698333900,560,0\n1698334200,542,1\n1698334500,540,1\n1698334800,559,0\n",
		"timestamp,bgp,label\n1698334200.0,542,true\n1698333900.0,560,0\n1698334800.0,559,0\n1698334500.0,540,1.0\n",
	} {
		rows, err := score.ParseIODACSV("x.csv", strings.NewReader(body))
		if err != nil || len(rows) != 4 || rows[1].Values["bgp"] != 542 || !reflect.DeepEqual(score.LabelWindows(rows), want) {
			t.Errorf("%q: %+v, %v; want 4 rows in time order, labelled %v", body, rows, err, want)
		}
	}
	_, err := score.ParseIODACSV("x.csv", strings.NewReader("timestamp,bgp,LABEL\n1698333900,560,0\n1698334200,542,1\n1698333900,561,1\n"))
	if err == nil || !strings.Contains(err.Error(), "x.csv:4: timestamp 1698333900 again (line 2)") {
		t.Errorf("a timestamp twice: %v", err)
	}
}

// A labelled trace reads the same however its columns are written out:
// ";" or ",", in any order, its epoch a date in either layout (with or
// without seconds) or Unix seconds, CR LF ends, blank lines, cp as 1 or
// true, a lost ping as a negative number or a missing value (empty,
// NaN, NA, null: lost, at -1).
func TestParseAtlasRTTLayouts(t *testing.T) {
	want := []score.Sample{
		{Time: time.Date(2016, 10, 14, 21, 17, 0, 0, time.UTC), RTT: 178.9},
		{Time: time.Date(2016, 10, 14, 21, 21, 0, 0, time.UTC), RTT: -3, CP: true},
		{Time: time.Date(2016, 10, 14, 21, 25, 0, 0, time.UTC), RTT: 201.25},
	}
	for _, body := range []string{
		"epoch;rtt;cp\n14/10/2016 21:17;178.9;0\n14/10/2016 21:21;-3;1\n14/10/2016 21:25;201.25;0\n",
		"epoch;rtt;cp\r\n14/10/2016 21:17:00;178.9;0\r\n14/10/2016 21:21:00;-3;1\r\n\r\n14/10/2016 21:25:00;201.25;0\r\n",
		"epoch,rtt,cp\n2016-10-14 21:17:00,178.9,0\n2016-10-14 21:21,-3,1\n2016-10-14T21:25:00Z,201.25,0\n",
		"rtt;cp;epoch\n178.9;0;1476479820\n-3;true;1476480060\n201.25;0;1476480300.0\n",
		" Epoch ; RTT ; CP \n1476479820 ; 178.9 ; 0\n1476480060;-3;1\n\n1476480300;201.25;0",
	} {
		got, err := score.ParseAtlasRTT("x.csv", strings.NewReader(body))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n%+v, %v\nwant %+v", body, got, err, want)
		}
	}
	lost, err := score.ParseAtlasRTT("x.csv", strings.NewReader("epoch,rtt,cp\n1476479820,,0\n1476480060,NaN,1\n1476480300, NA ,0\n1476480540,null,0\n1476480780,None,0\n"))
	if err != nil || len(lost) != 5 || !lost[1].CP {
		t.Fatalf("missing RTTs: %+v, %v", lost, err)
	}
	for _, s := range lost {
		if s.RTT != -1 {
			t.Errorf("missing RTT at %v read as %v, want -1 (lost)", s.Time, s.RTT)
		}
	}
	for body, why := range map[string]string{
		"epoch;rtt\n":                        "want the columns epoch, rtt and cp",
		"epoch;rtt;cp\n14/10/2016;178.9;0\n": `x.csv:2: epoch "14/10/2016"`,
		"epoch;rtt;cp\n1476479820;+Inf;0\n":  "x.csv:2: rtt:",
		"epoch;rtt;cp\n1476479820;12ms;0\n":  "x.csv:2: rtt:",
		"epoch;rtt;cp\n1476479820;1;0;4\n":   "x.csv:2: want 3 fields",
	} {
		if _, err := score.ParseAtlasRTT("x.csv", strings.NewReader(body)); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: error %v, want %q", body, err, why)
		}
	}
}

func TestLoadBoardSetErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ doc, want string }{
		{"name: x\nrules: r.yaml\nformat: ioda-csv\nfiles: [a.csv]\nentity: XX\ncolumns: {bgp: b}\n", `x.yaml:5: entity "XX": want kind:name`},
		{"name: x\nrules: r.yaml\nformat: csv\nfiles: [a.csv]\n", `x.yaml:3: format "csv": want ioda-csv or atlas-rtt`},
		{"name: x\nrules: r.yaml\nformat: atlas-rtt\nfiles: [a]\nwindows: [{from: 2024-01-01T00:00:00Z, to: 2024-01-02T00:00:00Z}]\n", "x.yaml:5: format atlas-rtt is labelled by its own change points"},
		{"name: x\nrules: r.yaml\nformat: atlas-rtt\nfiles: [a]\nwindow: []\n", `x.yaml:5: unknown key "window"`},
		{"rules: r.yaml\n", "x.yaml:1: missing name"},
	} {
		f := filepath.Join(dir, "x.yaml")
		if err := os.WriteFile(f, []byte(c.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := score.LoadBoardSet(f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.doc, err, c.want)
		}
	}
}

func FuzzParseIODACSV(f *testing.F) {
	f.Add([]byte("timestamp,bgp,LABEL\n1698333900,560,0\n1698334200,542,1\n"))
	f.Add([]byte("timestamp,merit-nt,bgp,LABEL\n1,,3,1\n2,0.4,nan,0\n"))
	f.Add([]byte("timestamp,LABEL\n2,0\n1,0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, err := score.ParseIODACSV("fuzz.csv", bytes.NewReader(b))
		if err != nil {
			return
		}
		for i := 1; i < len(rows); i++ {
			if !rows[i].Time.After(rows[i-1].Time) {
				t.Fatalf("rows out of order: %v then %v", rows[i-1].Time, rows[i].Time)
			}
		}
		for _, w := range score.LabelWindows(rows) {
			if !w.To.After(w.From) {
				t.Fatalf("window %v", w)
			}
		}
	})
}

func FuzzParseAtlasRTT(f *testing.F) {
	f.Add([]byte("epoch;rtt;cp\n14/10/2016 21:17;178.924995;0\n14/10/2016 21:21;-3;1\n"))
	f.Add([]byte("epoch;rtt;cp\n2016-10-14 21:17:00;1e400;0\n"))
	f.Add([]byte("rtt,cp,epoch\n12.5,true,1476479820.5\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := score.ParseAtlasRTT("fuzz.csv", bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, x := range s {
			if x.RTT != x.RTT {
				t.Fatalf("NaN RTT accepted")
			}
		}
		score.UpwardShifts(s)
	})
}
