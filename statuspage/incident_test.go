package statuspage

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/detectors"
)

func f(v float64) *float64 { return &v }

// An alert's peak is the worst bucket its notifications show: the firing
// value, the evidence inside the alert (not before its start), and what
// the detector kept of the whole episode; never the recovered value a
// resolve carries.
func TestPeakOverAnAlertsLife(t *testing.T) {
	t0 := time.Date(2025, 4, 28, 10, 35, 0, 0, time.UTC)
	end := t0.Add(15 * time.Hour)
	firing := alerting.Event{ID: "a", Status: alerting.Firing, Signal: "traffic_bytes", Start: t0, At: t0.Add(10 * time.Minute),
		Observed: 40, Baseline: 100, ChangePct: -60,
		Evidence: []alerting.Point{
			{Time: t0.Add(-5 * time.Minute), Value: f(10), Baseline: 100}, // before the start: not the alert's
			{Time: t0, Value: f(45), Baseline: 100},
			{Time: t0.Add(5 * time.Minute), Value: f(38), Baseline: 100}, // the worst: −62 %
			{Time: t0.Add(10 * time.Minute), Value: nil, Baseline: 100},
		}}
	resolve := alerting.Event{ID: "a", Status: alerting.Resolved, Signal: "traffic_bytes", Start: t0, End: &end, At: end.Add(30 * time.Minute),
		Observed: 95, Baseline: 100, ChangePct: -5,
		Evidence: []alerting.Point{{Time: end.Add(-5 * time.Minute), Value: f(80), Baseline: 100}}}
	s := NewStore()
	s.Add(firing)
	s.Add(resolve)
	p := s.peaks[episode(firing)]
	if p.ChangePct != -62 || p.Observed != 38 || !p.At.Equal(t0.Add(5*time.Minute)) || p.Episode {
		t.Errorf("traffic peak %+v, want −62 %% at 10:40", p)
	}
	// Routed space: the detector reports its lowest at resolve.
	space := alerting.Event{ID: "b", Status: alerting.Resolved, Signal: "bgp_announced_v4", Start: t0, End: &end, At: end,
		Observed: 244, Baseline: 243.838, ChangePct: 0.1, Details: map[string]any{"lowest": 60.0, "fired_against": 243.838}}
	if p := peakOf(space); p.ChangePct != -75.4 || p.Observed != 60 || !p.Episode {
		t.Errorf("routed space peak %+v, want −75.4 %% over the episode", p)
	}
	// A burst against no baseline: the largest count, which is a count in
	// one five-minute bucket and says so.
	burst := alerting.Event{ID: "c", Status: alerting.Resolved, Signal: "bgp_withdrawals", Start: t0, End: &end, At: end,
		Details: map[string]any{"peak_withdrawals": 315}}
	if p := peakOf(burst); p.Observed != 315 || p.Baseline != 0 || peakWords("bgp_withdrawals", p) != "315 prefixes per 5 min (baseline 0)" {
		t.Errorf("burst peak %+v (%s), want 315 prefixes per 5 min (baseline 0)", p, peakWords("bgp_withdrawals", p))
	}
}

// An outage event's incident: scope label, type, each signal's worst and
// latest change, the networks' shares, its pages with what changed, and a
// muted alert of its place shown apart, not as an incident of its own.
func TestOutageEventIncident(t *testing.T) {
	t0 := time.Date(2025, 4, 28, 10, 30, 0, 0, time.UTC)
	alert := func(id, entity, signal string, pct float64, at time.Time) alerting.Event {
		return alerting.Event{Kind: alerting.KindAlert, ID: id, Status: alerting.Firing, Entity: entity, Signal: signal,
			Severity: "warning", Start: t0, At: at, Observed: 100 + pct, Baseline: 100, ChangePct: pct, OutageEvent: "ev",
			Labels: map[string]string{"country": "ES"}}
	}
	digi := alerting.ScopeEntity{Entity: "asn:57269", Name: "Digi Spain (AS57269)", Share: 0.125}
	page := func(rev int, update, sev, title string, members []string, ents []alerting.ScopeEntity, sigs ...alerting.SignalChange) alerting.Event {
		return alerting.Event{Kind: alerting.KindEvent, ID: "ev", Status: alerting.Firing, Entity: "country:ES", Severity: sev,
			Start: t0, At: t0.Add(time.Duration(rev) * 5 * time.Minute),
			Outage: &alerting.Outage{Title: title, Members: members, Revision: rev, Update: update, Impact: 0.6,
				Cause: "3 networks lost traffic within minutes of each other (power-like or a shutdown)",
				Scope: alerting.Scope{Place: "country:ES", Name: "Spain", Share: 1, Entities: ents}, Signals: sigs}}
	}
	v4 := alerting.SignalChange{Kind: "routing", Signal: "bgp_announced_v4", Entity: "country:ES", ChangePct: -22.2, Alerts: 1}
	tr := alerting.SignalChange{Kind: "traffic", Signal: "traffic_bytes", Entity: "country:ES", ChangePct: -60.8, Alerts: 1}
	es := alerting.ScopeEntity{Entity: "country:ES", Name: "Spain", Share: 1}
	muted := alerting.Event{Kind: alerting.KindAlert, ID: "m", Status: alerting.Firing, Entity: "asn:3352", Signal: "dns_queries",
		Start: t0.Add(time.Hour), At: t0.Add(time.Hour), Muted: "silence s1", Labels: map[string]string{"country": "ES"}}
	s := NewStore()
	for _, ev := range []alerting.Event{
		alert("r", "country:ES", "bgp_announced_v4", -22.2, t0.Add(5*time.Minute)),
		page(1, "open", "info", "Digi Spain (AS57269) in Spain", []string{"r"}, []alerting.ScopeEntity{es, digi}, v4),
		alert("t", "country:ES", "traffic_bytes", -60.8, t0.Add(15*time.Minute)),
		page(3, "grow", "critical", "Spain", []string{"r", "t"}, []alerting.ScopeEntity{es, digi}, tr, v4),
		page(3, "grow", "critical", "Spain", []string{"r", "t"}, []alerting.ScopeEntity{es, digi}, tr, v4), // a repeat
		muted,
	} {
		s.Add(ev)
	}
	// The traffic alert's latest is milder than its worst.
	later := alert("t", "country:ES", "traffic_bytes", -40, t0.Add(2*time.Hour))
	s.Add(later)
	ins := s.Within(0)
	if len(ins) != 1 {
		t.Fatalf("%d incidents, want the event alone (the muted alert with it): %+v", len(ins), ins)
	}
	in := ins[0]
	if in.Scope != "nationwide" || in.Type != "power outage or shutdown" || in.Title != "Spain" || in.PlaceEntity != "country:ES" {
		t.Errorf("scope %q type %q title %q place %q", in.Scope, in.Type, in.Title, in.PlaceEntity)
	}
	if len(in.Changes) != 2 || in.Changes[0].Signal != "traffic_bytes" || in.Changes[0].Peak.ChangePct != -60.8 || in.Changes[0].NowPct != -40 ||
		!in.Changes[0].Firing || in.Changes[0].Name != "Spain" {
		t.Errorf("changes %+v", in.Changes)
	}
	if len(in.Nets) != 1 || in.Nets[0].Name != "Digi Spain (AS57269)" || in.Nets[0].Share != 0.125 {
		t.Errorf("networks %+v", in.Nets)
	}
	if len(in.Muted) != 1 || in.Muted[0].ID != "m" {
		t.Errorf("muted %+v", in.Muted)
	}
	var got []string
	for _, p := range in.Pages {
		got = append(got, p.Update+": "+p.Changed)
	}
	want := []string{"open: opened: Digi Spain (AS57269) in Spain",
		"grow: severity info → critical; now Spain (was Digi Spain (AS57269) in Spain); new signals: traffic; 1 more member alert (2)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pages\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if in.Peaks["t"].ChangePct != -60.8 {
		t.Errorf("peaks %+v", in.Peaks)
	}
	// The scope label of an event of networks only, of one whose headline
	// is a network though the country's routed space fell with it, of a
	// region, and of a transit.
	for _, c := range []struct {
		title string
		ents  []alerting.ScopeEntity
		want  string
	}{
		{"Digi Spain (AS57269) in Spain", []alerting.ScopeEntity{digi}, "network"},
		{"Digi Spain (AS57269) in Spain", []alerting.ScopeEntity{es, digi}, "network"},
		{"Spain", []alerting.ScopeEntity{es, digi}, "nationwide"},
		{"Digi Spain (AS57269) in Spain", []alerting.ScopeEntity{{Entity: "region:ES-MD"}, digi}, "regional"},
	} {
		ev := alerting.Event{Outage: &alerting.Outage{Title: c.title, Scope: alerting.Scope{Place: "country:ES", Name: "Spain", Entities: c.ents}}}
		if l := scopeLabel(ev); l != c.want {
			t.Errorf("%s with %v: %q, want %q", c.title, c.ents, l, c.want)
		}
	}
	if l := scopeLabel(alerting.Event{Outage: &alerting.Outage{Scope: alerting.Scope{Place: "transit:1299"}}}); l != "transit" {
		t.Errorf("transit: %q", l)
	}
}

// The list goes back as far as asked: a day by default, or all the store
// holds; the API says the same, with the worst change in words.
func TestListRange(t *testing.T) {
	t0 := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewStore()
	for i, cc := range []string{"KE", "UG"} {
		start := t0.Add(time.Duration(i) * 10 * 24 * time.Hour)
		end := start.Add(time.Hour)
		s.Add(alerting.Event{ID: cc, Status: alerting.Resolved, Signal: "traffic_bytes", Entity: "country:" + cc, Severity: "warning",
			Start: start, End: &end, At: end, ChangePct: -50, Observed: 50, Baseline: 100, Labels: map[string]string{"country": cc}})
	}
	srv := httptest.NewServer(Handler(s, nil, "t"))
	defer srv.Close()
	places := func(q string) string {
		resp, err := srv.Client().Get(srv.URL + "/api/v1/incidents" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Incidents []struct{ Place string } }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, in := range body.Incidents {
			out = append(out, in.Place)
		}
		return strings.Join(out, ",")
	}
	for q, want := range map[string]string{"": "Uganda", "?range=7d": "Uganda", "?range=30d": "Uganda,Kenya", "?range=all": "Uganda,Kenya"} {
		if got := places(q); got != want {
			t.Errorf("%q lists %q, want %q", q, got, want)
		}
	}
	// A range there is not says which there are.
	bad := map[string]string{"/api/v1/incidents?range=2d": `unknown range "2d": one of 1d, 7d, 30d, all`,
		"/?range=2d": `unknown range "2d": one of 1d, 7d, 30d, all`,
		"/incident/" + s.Within(0)[0].ID + "?chart=2d": `unknown chart window "2d": one of incident, week, all`}
	for path, want := range bad {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s: %s %q", path, resp.Status, b)
		}
	}
}

// One alert (one rule on one series: one ID) that fires twice in a day,
// for two outage events, is two episodes: each event shows its own, with
// its own peak. A loss against a threshold reads as the value and its bar.
func TestEpisodesOfOneAlert(t *testing.T) {
	t0 := time.Date(2023, 4, 4, 0, 30, 0, 0, time.UTC)
	var evs []alerting.Event
	for i, pct := range []float64{-97, -60} {
		start := t0.Add(time.Duration(i) * 14 * time.Hour)
		end := start.Add(6 * time.Hour)
		id := []string{"ev1", "ev2"}[i]
		evs = append(evs,
			alerting.Event{ID: "a", Status: alerting.Firing, Signal: "traffic_bytes", Entity: "asn:5089", Start: start, At: start,
				Observed: 100 + pct, Baseline: 100, ChangePct: pct, OutageEvent: id},
			alerting.Event{ID: "a", Status: alerting.Resolved, Signal: "traffic_bytes", Entity: "asn:5089", Start: start, End: &end, At: end,
				Observed: 99, Baseline: 100, ChangePct: -1, OutageEvent: id},
			alerting.Event{Kind: alerting.KindEvent, ID: id, Status: alerting.Resolved, Entity: "asn:5089", Start: start, End: &end, At: end,
				Outage: &alerting.Outage{Title: "Virgin Media (AS5089) in United Kingdom", Members: []string{"a"}, Revision: 2, Update: "resolve",
					Scope:   alerting.Scope{Place: "country:GB", Name: "United Kingdom"},
					Signals: []alerting.SignalChange{{Kind: "traffic", Signal: "traffic_bytes", Entity: "asn:5089", ChangePct: pct}}}})
	}
	s := NewStore()
	for _, ev := range evs {
		s.Add(ev)
	}
	ins := s.Within(0)
	if len(ins) != 2 {
		t.Fatalf("%d incidents, want 2", len(ins))
	}
	for _, in := range ins {
		want := map[string]float64{"ev1": -97, "ev2": -60}[in.ID]
		if len(in.Alerts) != 1 || !in.Alerts[0].Start.Equal(in.Start) || in.Changes[0].Peak.ChangePct != want {
			t.Errorf("%s: %d alerts from %v, peak %v; want its own episode, peak %v", in.ID, len(in.Alerts), in.Alerts[0].Start, in.Changes[0].Peak.ChangePct, want)
		}
	}
	loss := Peak{Observed: 0.298, Baseline: 0.1, Method: "threshold"}
	if got := peakWords("packet_loss", loss); got != "29.8 % (threshold 10 %)" {
		t.Errorf("loss reads %q", got)
	}
	// The latest of a signal judged against a threshold, or against no
	// baseline, is its value: a change from the bar means nothing.
	if got := nowWords("packet_loss", loss, 0, 0.02); got != "2 %" {
		t.Errorf("loss now reads %q, want 2 %%", got)
	}
	if got := nowWords("bgp_withdrawals", Peak{Observed: 315}, 0, 0); got != "0 prefixes per 5 min" {
		t.Errorf("withdrawals now read %q, want 0 prefixes per 5 min", got)
	}
	if got := nowWords("traffic_bytes", Peak{ChangePct: -97, Observed: 3, Baseline: 100}, -4.2, 96); got != "−4.2 %" {
		t.Errorf("traffic now reads %q, want −4.2 %%", got)
	}
}

// A peak is rendered in phrases that each stay on one line, so that a
// phone's narrow cell breaks "−50 % (8.2k /48 prefixes vs 16k /48
// prefixes)" between its figures and never between a figure and its unit.
func TestPeakWrapsBetweenFigures(t *testing.T) {
	in := Incident{ID: "x", Place: "Spain", Start: time.Date(2025, 4, 28, 10, 30, 0, 0, time.UTC),
		Detail: Detail{Changes: []Change{{Kind: "routing", Signal: "bgp_announced_v6", Entity: "asn:57269", Name: "Digi Spain (AS57269)",
			Peak: Peak{ChangePct: -50, Observed: 8192, Baseline: 16388}}}}}
	h, err := IncidentHTML(in, nil, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `<td data-l="worst" class="n worst"><span class="n">−50 %</span> <span class="n">(8.2k /48 prefixes</span> <span class="n">vs 16k /48 prefixes)</span></td>`
	if !strings.Contains(string(h), want) {
		t.Errorf("worst cell not in phrases; want %s in\n%s", want, h)
	}
}

// A resolved event's own figures, with no member alert of the signal to
// read a resolve from, are those it paged with, and the page says so
// rather than calling them the level at resolve.
func TestResolvedFiguresAsPaged(t *testing.T) {
	t0 := time.Date(2021, 1, 13, 13, 30, 0, 0, time.UTC)
	o := alerting.Event{Kind: alerting.KindEvent, ID: "ev", Status: alerting.Resolved, Entity: "country:UG", Start: t0, At: t0.Add(time.Hour),
		Outage: &alerting.Outage{Title: "Uganda", Revision: 2, Update: "resolve", FiguresAt: "paged",
			Scope:   alerting.Scope{Place: "country:UG", Name: "Uganda"},
			Signals: []alerting.SignalChange{{Kind: "traffic", Signal: "traffic_bytes", Entity: "country:UG", ChangePct: -97, Observed: 3, Baseline: 100, ObservedUnit: "bytes/300s"}}}}
	d := detail(o, nil, nil, nil, nil)
	if len(d.Changes) != 1 || d.Changes[0].NowAt != "paged" || d.Changes[0].Firing || d.Changes[0].Peak.Unit != "bytes/300s" {
		t.Fatalf("changes %+v, want one, now as paged, in bytes/300s", d.Changes)
	}
	h, err := IncidentHTML(Incident{ID: "ev", Place: "Uganda", Start: t0, Detail: d}, nil, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `<td data-l="now"><span class="n">−97 %</span> <span class="n">when paged</span></td>`; !strings.Contains(string(h), want) {
		t.Errorf("page lacks %s", want)
	}
}

// A figure and its "%" stay together wherever the page sets them in
// running text (the list's worst change, why, the shares, a member's
// summary): a no-break space joins them.
func TestPercentKeptWithItsFigure(t *testing.T) {
	in := Incident{ID: "x", Place: "Spain", Start: time.Date(2025, 4, 28, 10, 30, 0, 0, time.UTC), Confidence: 0.8,
		Detail: Detail{PlaceEntity: "country:ES", Impact: 0.3, Share: 0.5,
			Changes: []Change{{Kind: "traffic", Signal: "traffic_bytes", Entity: "country:ES", Name: "Spain",
				Peak: Peak{ChangePct: -60.8, Observed: 39, Baseline: 100}}},
			Nets: []Network{{Entity: "asn:3352", Name: "Telefonica de Espana (AS3352)", Share: 0.333}},
			Members: []Member{{Event: alerting.Event{Status: alerting.Firing, Signal: "traffic_bytes", Entity: "country:ES",
				Summary: "Spain: traffic −61 % against similar days"}}}}}
	if got := worst(in); got != "traffic −61\u00a0%" {
		t.Errorf("worst %q", got)
	}
	h, err := IncidentHTML(in, nil, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"confidence 80\u00a0%",
		"traffic −61\u00a0%, 50\u00a0% of Spain&#39;s traffic affected",
		"33.3\u00a0% of Spain&#39;s traffic",
		"<td data-l=\"summary\">Spain: traffic −61\u00a0% against similar days</td>",
	} {
		if !strings.Contains(string(h), want) {
			t.Errorf("page lacks %q in\n%s", want, h)
		}
	}
}

// A member alert closed because its rule no longer judges it has no
// latest figure: the page says it was not judged, and why, where it would
// give the level at resolve.
func TestAlertClosedUnjudged(t *testing.T) {
	t0 := time.Date(2023, 4, 4, 0, 30, 0, 0, time.UTC)
	end := t0.Add(55 * time.Minute)
	o := alerting.Event{Kind: alerting.KindEvent, ID: "ev", Status: alerting.Resolved, Entity: "asn:5089", Start: t0, At: t0.Add(8 * time.Hour),
		Outage: &alerting.Outage{Title: "Virgin Media (AS5089) in United Kingdom", Revision: 3, Update: "resolve", FiguresAt: "paged",
			Scope: alerting.Scope{Place: "country:GB", Name: "United Kingdom"},
			Signals: []alerting.SignalChange{
				{Kind: "traffic", Signal: "traffic_bytes", Entity: "asn:5089", ChangePct: -97, Observed: 3, Baseline: 100, ObservedUnit: "bytes/300s"},
				{Kind: "dns", Signal: "dns_queries", Entity: "asn:5089", ChangePct: -100, Observed: 0, Baseline: 23, ObservedUnit: "queries/300s"}}}}
	members := []alerting.Event{
		{ID: "a", Status: alerting.Resolved, Rule: "asn-traffic-drop", Detector: "traffic_drop", Signal: "traffic_bytes", Entity: "asn:5089",
			Start: t0.Add(5 * time.Minute), End: &end, ChangePct: -97, Observed: 3, Baseline: 100, Reason: detectors.ReasonRuleRemoved,
			Summary: "traffic of Virgin Media (AS5089): alert closed, rule asn-traffic-drop is no longer in the rules; recovery not judged"},
		{ID: "b", Status: alerting.Resolved, Rule: "asn-dns-query-drop", Detector: "traffic_drop", Signal: "dns_queries", Entity: "asn:5089",
			Start: t0.Add(5 * time.Minute), End: &end, ChangePct: -4, Observed: 22, Baseline: 23, Reason: detectors.ReasonRecovered},
	}
	d := detail(o, members, nil, nil, nil)
	if len(d.Changes) != 2 || d.Changes[0].NowAt != "rule removed" || d.Changes[1].NowAt != "resolve" {
		t.Fatalf("changes %+v, want traffic not judged (rule removed), DNS at resolve", d.Changes)
	}
	h, err := IncidentHTML(Incident{ID: "ev", Place: "United Kingdom", Start: t0, Detail: d}, nil, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	page := string(h)
	if want := `<td data-l="now"><span class="n">not judged</span> <span class="n">(rule removed)</span></td>`; strings.Count(page, want) != 2 {
		t.Errorf("page has %d of %s, want 2 (the change and the member alert)", strings.Count(page, want), want)
	}
	if want := `<span class="n">at resolve</span>`; strings.Count(page, want) != 2 {
		t.Errorf("page has %d of %s, want 2 (the DNS change and its member alert)", strings.Count(page, want), want)
	}
}
