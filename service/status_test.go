package service

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/browsertest"
	"github.com/outagewatch/outagewatch/statuspage"
)

// The operations listener serves the outage page: the list, its JSON and
// an incident page, listing exactly the alerts the pipeline has firing.
func TestStatusPage(t *testing.T) {
	if raceEnabled {
		t.Skip("a whole-fixture run is too slow under the race detector; the store's locking is raced in package statuspage")
	}
	f := loadFixture(t)
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceFixture(t, addr, f)
	// As `outagewatch run` does: a store among the sinks keeps ended alerts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustValidate(t, testConfig(addr, t.TempDir(), f.topics...))
	cfg.HTTP.ChartHistory = 14 * 24 * time.Hour // charts of whole outages, with last week
	svc, err := New(cfg, Options{Rules: f.set, Map: f.m, Logger: quietLog(),
		Listener: ln, Sinks: []alerting.Sink{statuspage.NewStore()}, Outbox: alerting.OutboxConfig{InitialBackoff: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{svc: svc, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- svc.Run(ctx) }()
	waitDone(t, r, f)
	defer r.shutdown(t)

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get("http://" + r.svc.Addr() + path)
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
				ID string `json:"id"`
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
	base := "http://" + r.svc.Addr()
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
