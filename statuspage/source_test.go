package statuspage

import (
	"context"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
)

func TestGroupByPlaceAndTime(t *testing.T) {
	t0 := time.Date(2021, 1, 13, 17, 0, 0, 0, time.UTC)
	end := t0.Add(5 * 24 * time.Hour)
	later := end.Add(48 * time.Hour)
	laterEnd := later.Add(time.Hour)
	ev := func(id, signal, entity, cc, display, sev string, start time.Time, stop *time.Time) alerting.Event {
		st := alerting.Firing
		if stop != nil {
			st = alerting.Resolved
		}
		return alerting.Event{ID: id, Status: st, Signal: signal, Entity: entity, Severity: sev, Start: start, End: stop, At: start,
			Labels: map[string]string{"country": cc, "display": display}}
	}
	evs := []alerting.Event{
		ev("a", "traffic_bytes", "country:UG", "UG", "Uganda", "critical", t0, &end),
		ev("b", "bgp_announced_v4", "asn:20294", "UG", "MTN Uganda (AS20294)", "critical", t0, nil),
		ev("c", "dns_queries", "asn:36977", "UG", "Airtel Uganda (AS36977)", "warning", t0.Add(5*time.Minute), &end),
		ev("d", "traffic_bytes", "country:KE", "KE", "Kenya", "warning", later, &laterEnd),
		ev("e", "latency_p50", "transit:1299@ams01", "", "Arelion (AS1299) at ams01", "warning", t0, &end),
	}
	ins := Group(evs)
	if len(ins) != 3 {
		t.Fatalf("%d incidents, want 3: %+v", len(ins), ins)
	}
	ug := ins[0]
	if ug.Place != "Uganda" || !ug.Active() || ug.Severity != "critical" || len(ug.Alerts) != 3 {
		t.Fatalf("first incident %+v", ug)
	}
	if got := ug.Networks; len(got) != 2 || got[0] != "Airtel Uganda (AS36977)" || got[1] != "MTN Uganda (AS20294)" {
		t.Errorf("networks %q", got)
	}
	if got := ug.Signals; len(got) != 3 || got[0] != "bgp_announced_v4" {
		t.Errorf("signals %q", got)
	}
	// Traffic, routing and DNS agree: three views, as sure as an outage
	// event of the same three (1 - 0.6/4).
	if ug.Confidence != 0.85 {
		t.Errorf("confidence %v, want 0.85", ug.Confidence)
	}
	// Ended incidents follow, the most recently ended first: Kenya (ended
	// two days after the transit one).
	if ins[1].Place != "Kenya" || !ins[1].End.Equal(laterEnd) || ins[1].Confidence != 0.4 {
		t.Errorf("second %+v", ins[1])
	}
	if ins[2].Place != "Arelion (AS1299) at ams01" || ins[2].Active() || ins[2].Duration(time.Time{}) != 5*24*time.Hour {
		t.Errorf("third %+v", ins[2])
	}
	// A store drops incidents ended more than Recent before its newest event.
	s := NewStore()
	for _, e := range evs {
		s.Add(e)
	}
	s.Recent = 24 * time.Hour
	if n := len(s.Incidents()); n != 2 {
		t.Errorf("store lists %d incidents, want 2 (the transit one ended over a day before Kenya's start)", n)
	}
	if got := human(5*24*time.Hour + 3*time.Hour); got != "5 d 3 h" {
		t.Errorf("human %q", got)
	}
}

// The service's sink goroutine adds while HTTP handlers read (run with
// -race).
func TestStoreConcurrent(t *testing.T) {
	s := NewStore()
	t0 := time.Date(2021, 1, 13, 17, 0, 0, 0, time.UTC)
	s.Active = func() []alerting.Event {
		return []alerting.Event{{ID: "live", Status: alerting.Firing, Entity: "country:UG", Signal: "traffic_bytes", Start: t0, At: t0,
			Labels: map[string]string{"country": "UG"}}}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			at := t0.Add(time.Duration(i) * time.Minute)
			_ = s.Send(context.Background(), &alerting.Event{ID: "a", Status: alerting.Firing, Entity: "asn:20294", Signal: "bgp_announced_v4",
				Start: t0, At: at, Labels: map[string]string{"country": "UG", "display": "MTN Uganda (AS20294)"}})
		}
	}()
	for range 200 {
		_ = s.Incidents()
		_ = s.Now()
	}
	<-done
	ins := s.Incidents()
	if len(ins) != 1 || len(ins[0].Alerts) != 2 || !s.Now().Equal(t0.Add(199*time.Minute)) {
		t.Fatalf("%+v, now %v", ins, s.Now())
	}
}

// Outage events from the correlation stage are the incidents, as it judged
// them; alerts in no event (a feed fault) are grouped beside them.
func TestStoreShowsOutageEvents(t *testing.T) {
	t0 := time.Date(2021, 1, 13, 17, 0, 0, 0, time.UTC)
	alert := func(id, entity, signal, event string) alerting.Event {
		return alerting.Event{Kind: alerting.KindAlert, ID: id, Status: alerting.Firing, Entity: entity, Signal: signal,
			Severity: "warning", Start: t0, At: t0, OutageEvent: event}
	}
	out := func(rev int, members ...string) alerting.Event {
		return alerting.Event{Kind: alerting.KindEvent, ID: "ev1", Status: alerting.Firing, Entity: "country:UG",
			Severity: "critical", Start: t0, At: t0.Add(time.Duration(rev) * 5 * time.Minute),
			Outage: &alerting.Outage{Title: "Uganda", Confidence: 0.85, Members: members, Revision: rev,
				Scope: alerting.Scope{Place: "country:UG", Name: "Uganda", Entities: []alerting.ScopeEntity{
					{Entity: "country:UG", Name: "Uganda"}, {Entity: "asn:20294", Name: "MTN Uganda (AS20294)"}}},
				Signals: []alerting.SignalChange{{Kind: "traffic", Signal: "traffic_bytes"}, {Kind: "routing", Signal: "bgp_announced_v4"}}}}
	}
	s := NewStore()
	for _, ev := range []alerting.Event{
		alert("a", "country:UG", "traffic_bytes", "ev1"),
		alert("b", "asn:20294", "bgp_announced_v4", "ev1"),
		alert("f", "feed:bgp@rrc00", "bgp_full_feed_peers", ""),
		out(2, "a", "b"),
		out(1, "a"), // an older revision delivered late changes nothing
	} {
		s.Add(ev)
	}
	ins := s.Incidents()
	if len(ins) != 2 {
		t.Fatalf("%d incidents, want the event and the feed fault: %+v", len(ins), ins)
	}
	ug := ins[0]
	if ug.ID != "ev1" || ug.Place != "Uganda" || ug.Severity != "critical" || ug.Confidence != 0.85 || len(ug.Alerts) != 2 ||
		len(ug.Networks) != 1 || ug.Networks[0] != "MTN Uganda (AS20294)" || len(ug.Signals) != 2 {
		t.Fatalf("event incident %+v", ug)
	}
	if ins[1].Place != "feed:bgp@rrc00" || len(ins[1].Alerts) != 1 {
		t.Fatalf("feed fault incident %+v", ins[1])
	}
}
