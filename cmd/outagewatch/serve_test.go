package main

import (
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart/recorder"
)

// `replay --serve` shows the replay's outage events as incidents, with
// their cause, worst changes and pages, charted from the recorded series.
func TestReplayPage(t *testing.T) {
	var events, outages []alerting.Event
	o := replayOpts{recorder: recorder.New(), events: func(ev *alerting.Event) { outages = append(outages, *ev) }}
	if _, err := runReplay([]string{"../../fixtures/uganda-2021-01-13.yaml"}, o, func(ev *alerting.Event) { events = append(events, *ev) }); err != nil {
		t.Fatal(err)
	}
	h, store := replayPage("uganda", append(events, outages...), o.recorder)
	ins := store.Incidents()
	if len(ins) != 1 {
		t.Fatalf("%d incidents, want the one of Uganda", len(ins))
	}
	// Five pages: the open at 13:45 (the first routing alert's bucket
	// and the ten minutes the first page waits for its place), severity
	// critical at 14:00, the four networks at 17:05, traffic and DNS at
	// 17:10, the resolve.
	var pages []string
	for _, p := range ins[0].Pages {
		pages = append(pages, p.At.Format("15:04")+" "+p.Update)
	}
	if ins[0].Place != "Uganda" || ins[0].Type != "power outage or shutdown" ||
		strings.Join(pages, ", ") != "13:45 open, 14:00 grow, 17:05 grow, 17:10 grow, 16:00 resolve" {
		t.Fatalf("incident %q type %q with pages %q; want Uganda, power outage or shutdown, 13:45 open, 14:00 grow, 17:05 grow, 17:10 grow, 16:00 resolve",
			ins[0].Place, ins[0].Type, pages)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/incident/" + ins[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	for _, want := range []string{"<title>Uganda — outagewatch replay: uganda</title>", `<p class="cause">Likely cause: 4 networks lost traffic`,
		`<figure class="overlay"`, `<table class="pages">`, `https://radar.cloudflare.com/as20294`} {
		if !strings.Contains(page, want) {
			t.Errorf("incident page lacks %s", want)
		}
	}
}

// A transit's loss, judged per site, is charted by its sites' series.
func TestReplayPageTransit(t *testing.T) {
	var events, outages []alerting.Event
	o := replayOpts{recorder: recorder.New(), events: func(ev *alerting.Event) { outages = append(outages, *ev) }}
	if _, err := runReplay([]string{"../../fixtures/telia-2019-06-20.yaml"}, o, func(ev *alerting.Event) { events = append(events, *ev) }); err != nil {
		t.Fatal(err)
	}
	h, store := replayPage("telia", append(events, outages...), o.recorder)
	ins := store.Incidents()
	if len(ins) == 0 || ins[0].Scope != "transit" || ins[0].Type != "transit loss" {
		t.Fatalf("%d incidents, first %+v", len(ins), ins)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/incident/" + ins[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if n := len(regexp.MustCompile(`<figure class="signal" aria-label="[^"]*packet_loss\{transit:1299@(ams01|fra01|lon01)\}`).FindAllString(page, -1)); n != 3 {
		t.Errorf("%d per-site charts of the transit's loss, want one for each of ams01, fra01, lon01", n)
	}
	if !strings.Contains(page, `<span class="n">29.8 %</span> <span class="n">(threshold 10 %)</span>`) {
		t.Errorf("the loss does not read against its threshold")
	}
}
