package service

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/browsertest"
	"github.com/outagewatch/outagewatch/statuspage"
)

// The operations listener serves the outage page: the list, its JSON and
// an incident page, listing exactly the alerts of the replay, with the
// charts drawn from the observed values kept for http.chart_history: as
// far back as it says (the Uganda fixture has four weeks, two are kept)
// and no further, last week's line included.
func TestStatusPage(t *testing.T) {
	if raceEnabled {
		t.Skip("a whole-fixture run is too slow under the race detector; the store's locking is raced in package statuspage")
	}
	f := loadFixture(t)
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceFixture(t, addr, f)
	dir := t.TempDir()
	cfg := testConfig(addr, dir, f.topics...)
	cfg.LocalASNs = f.local
	cfg.Kafka.InternalPartitions = 2
	const history = 14 * 24 * time.Hour // charts of whole outages, with last week
	cfg.HTTP.ChartHistory = history
	// As `outagewatch run` does: a store among the sinks keeps ended alerts.
	base, st, stop := startStaged(t, mustValidate(t, cfg), Options{Rules: f.set, Map: f.m,
		Sinks: []alerting.Sink{statuspage.NewStore()}})
	defer stop()
	wantLines, err := byDeliveryKey(f.want)
	if err != nil {
		t.Fatal(err)
	}
	waitLines(t, filepath.Join(dir, "alerts.jsonl"), wantLines)
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s: %s", path, resp.Status, b)
		}
		return string(b)
	}
	if page := get("/"); !strings.Contains(page, "<h1>Outages</h1>") {
		t.Fatalf("/ is not the outage page:\n%.400s", page)
	}
	var body struct {
		Incidents []struct {
			ID     string `json:"id"`
			Place  string `json:"place"`
			Alerts []struct {
				ID     string `json:"id"`
				Signal string `json:"signal"`
				Entity string `json:"entity"`
			} `json:"alerts"`
		} `json:"incidents"`
	}
	if err := json.Unmarshal([]byte(get("/api/v1/incidents")), &body); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, in := range body.Incidents {
		for _, a := range in.Alerts {
			listed = append(listed, a.ID)
		}
	}
	// Every alert of the replay, fired and resolved within the last day of
	// data, is in exactly one incident: its outage event's, or, for one in
	// no event, its place's.
	var want []string
	for _, l := range f.want {
		var ev struct{ ID, Kind string }
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind == alerting.KindAlert {
			want = append(want, ev.ID)
		}
	}
	slices.Sort(listed)
	slices.Sort(want)
	want = slices.Compact(want)
	waitFor(t, "the outbox to deliver to the page", 30*time.Second, func() bool {
		if err := json.Unmarshal([]byte(get("/api/v1/incidents")), &body); err != nil {
			t.Fatal(err)
		}
		listed = listed[:0]
		for _, in := range body.Incidents {
			for _, a := range in.Alerts {
				listed = append(listed, a.ID)
			}
		}
		slices.Sort(listed)
		return slices.Equal(listed, want)
	})
	if len(want) == 0 {
		t.Fatal("no alert to list")
	}
	if page := get("/incident/" + body.Incidents[0].ID); !strings.Contains(page, "Member alerts") || !strings.Contains(page, body.Incidents[0].Place) ||
		!strings.Contains(page, ">same time last week</text>") {
		t.Fatalf("incident page (want its members and charts from the kept history, last week included):\n%.400s", page)
	}
	// The recorder keeps the configured history of each series: Uganda's
	// traffic, in the flows since the fixture's first day, two weeks back
	// from its last bucket, and no more than the eighth it may run over
	// before trimming. (Measured on the series itself: the data time is
	// the least watermark of the partitions, which may trail it.)
	ch := st.charts.ChartBetween("traffic_bytes{country:UG}", nil, time.Unix(0, 1), time.Unix(0, 1<<62))
	if ch == nil || len(ch.Series) == 0 {
		t.Fatal("no chart kept for traffic_bytes{country:UG}")
	}
	step := max(ch.Step, time.Duration(aggregate.DefaultWidth))
	if kept := ch.Step * time.Duration(len(ch.Series[0].Values)); kept < history || kept > history+history/8+2*step {
		t.Errorf("chart of %v from %v (%d points of %v); want %v to %v", kept, ch.Start, len(ch.Series[0].Values), ch.Step,
			history, history+history/8+2*step)
	}
	// The operations endpoints are still theirs.
	if !strings.Contains(get("/healthz"), "ok") {
		t.Fatal("/healthz")
	}

	// In a browser: the list and an incident page, no console error.
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Log("no chromium: browser part skipped")
		return
	}
	b := browsertest.New(t)
	b.Do(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#incidents tbody tr")))
	if place := b.Text(`#incidents tbody tr:first-child td[data-l=place]`); place != body.Incidents[0].Place {
		t.Errorf("first incident in the browser %q, the API says %q", place, body.Incidents[0].Place)
	}
	b.Shot("service-status-list.png", 1000, 700)
	b.Do(chromedp.Navigate(base+"/incident/"+body.Incidents[0].ID), chromedp.WaitVisible(chromedp.CSS("#place")))
	if n := b.Int(`document.querySelectorAll('table.alerts tbody tr').length`); n != len(body.Incidents[0].Alerts) {
		t.Errorf("incident page lists %d alerts, want %d", n, len(body.Incidents[0].Alerts))
	}
	b.Shot("service-status-incident.png", 1000, 700)
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
