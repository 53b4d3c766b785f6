package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSeries writes three weeks of a daily-cycle traffic export for
// entity, one line every step, leaving out the lines skip says.
func writeSeries(t *testing.T, name, entity string, step time.Duration, skip func(time.Time) bool) string {
	t.Helper()
	r := rand.New(rand.NewPCG(3, uint64(step)))
	var b strings.Builder
	b.WriteString("time,entity,signal,value\n")
	t0 := time.Date(2024, 6, 3, 0, 0, 0, 0, time.UTC)
	for ts := t0; ts.Before(t0.Add(21 * 24 * time.Hour)); ts = ts.Add(step) {
		v := 1e9 * (1.2 + 0.5*math.Sin(float64(ts.Hour()*60+ts.Minute())/1440*2*math.Pi)) * (1 + 0.03*r.NormFloat64())
		if !skip(ts) {
			fmt.Fprintf(&b, "%d,%s,traffic_bytes,%.0f\n", ts.Unix(), entity, v)
		}
	}
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// A traffic export every 30 minutes (no cadence declared) and one every 5
// minutes missing 30 % of its lines at random replay without a single
// alert: neither is a silent feed, and neither reads as traffic gone.
func TestCoarseAndGappyExportsRaiseNoAlert(t *testing.T) {
	captureLog(t)
	coarse := writeSeries(t, "coarse.csv", "country:XX", 30*time.Minute, func(time.Time) bool { return false })
	r := rand.New(rand.NewPCG(7, 7))
	gappy := writeSeries(t, "gappy.csv", "country:YY", 5*time.Minute, func(time.Time) bool { return r.Float64() < 0.3 })
	for _, f := range []string{coarse, gappy} {
		out, _, err := run(t, "replay", f)
		if err != nil {
			t.Fatal(err)
		}
		if out != "" {
			t.Errorf("%s: %d alerts:\n%.600s", filepath.Base(f), strings.Count(out, "\n"), out)
		}
	}
}

// The same 30-minute export with twelve hours missing: the feed is silent,
// and says so once, from the first report that did not come.
func TestASilentCoarseFeedAlertsOnce(t *testing.T) {
	captureLog(t)
	h0 := time.Date(2024, 6, 18, 0, 0, 0, 0, time.UTC)
	f := writeSeries(t, "hole.csv", "country:XX", 30*time.Minute, func(ts time.Time) bool {
		return !ts.Before(h0) && ts.Before(h0.Add(12*time.Hour))
	})
	out, _, err := run(t, "replay", f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Status, Detector, Entity, Start, At string }
		if err := jsonUnmarshal(l, &ev); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got = append(got, ev.Status+" "+ev.Detector+" "+ev.Entity+" "+ev.Start+" "+ev.At)
	}
	// Reports due at 00:00, 00:30 and 01:00 did not come: known at 01:05.
	want := "firing feed_health feed:flows 2024-06-18T00:00:00Z 2024-06-18T01:05:00Z\n" +
		"resolved feed_health feed:flows 2024-06-18T00:00:00Z 2024-06-18T12:05:00Z"
	if strings.Join(got, "\n") != want {
		t.Fatalf("alerts\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
