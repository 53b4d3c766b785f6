package correlate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack/slacktest"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/rules"
	"github.com/outagewatch/outagewatch/scenario"
	"github.com/outagewatch/outagewatch/silence"
)

// run replays a fixture through the pipeline into a dispatcher with a
// JSON-lines sink (records everything), a webhook and Slack (pages) and an
// Alertmanager, and returns what each received.
type run struct {
	alerts, events []alerting.Event // as emitted
	jsonl          []alerting.Event // as the JSON-lines sink wrote them
	lines          [][]byte         // the same, as bytes
	webhook        []alerting.Event // as the webhook receiver got them
	slack          *slackCalls      // what slacktest's server was asked
	am             []amPost         // what the Alertmanager received
}

// amPost is one POST /api/v2/alerts: the kind and status of each alert in
// it (resolved: endsAt in the past, as an event-time end is).
type amPost []string

func replayFixture(t *testing.T, name string, mute ...correlate.Muter) *run {
	t.Helper()
	return replayWith(t, name, nil, mute...)
}

// replayWith adds sinks to the dispatcher.
func replayWith(t *testing.T, name string, sinks []alerting.Sink, mute ...correlate.Muter) *run {
	t.Helper()
	return replayRules(t, name, nil, sinks, mute...)
}

// replayRules replays with a rules set (nil: the shipped rules).
func replayRules(t *testing.T, name string, set *rules.Set, sinks []alerting.Sink, mute ...correlate.Muter) *run {
	t.Helper()
	return replayWait(t, name, set, 0, sinks, mute...)
}

// replayWait replays with a group wait (0: the default, negative: none).
func replayWait(t *testing.T, name string, set *rules.Set, groupWait time.Duration, sinks []alerting.Sink, mute ...correlate.Muter) *run {
	t.Helper()
	spec, err := scenario.Load(filepath.Join("..", "fixtures", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	r := &run{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var ev alerting.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		mu.Lock()
		r.webhook = append(r.webhook, ev)
		mu.Unlock()
	}))
	defer srv.Close()
	wh, err := alerting.NewWebhook(alerting.WebhookConfig{Name: "hook", URL: srv.URL + "/hook", Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	// An Alertmanager's API endpoint, counting what it is sent; the sink's
	// refresh is set beyond the replay, so each post is one notification.
	amSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var batch []struct {
			Labels map[string]string `json:"labels"`
			EndsAt time.Time         `json:"endsAt"`
		}
		if req.URL.Path != "/api/v2/alerts" || json.NewDecoder(req.Body).Decode(&batch) != nil {
			t.Errorf("alertmanager: %s %s", req.Method, req.URL.Path)
		}
		var post amPost
		for _, a := range batch {
			status := alerting.Firing
			if a.EndsAt.Before(time.Now()) {
				status = alerting.Resolved
			}
			post = append(post, a.Labels["kind"]+" "+status)
		}
		mu.Lock()
		r.am = append(r.am, post)
		mu.Unlock()
	}))
	defer amSrv.Close()
	am, err := alerting.NewAlertmanager(alerting.AlertmanagerConfig{Name: "am", URL: amSrv.URL, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	r.slack = &slackCalls{}
	slackSrv := slacktest.NewTestServer(r.slack.bind)
	r.slack.srv = slackSrv
	slackSrv.Start()
	defer slackSrv.Stop()
	sl, err := alerting.NewSlack(alerting.SlackConfig{Name: "noc", Token: "xoxb-test", Channel: "#noc", APIURL: slackSrv.GetAPIURL(),
		StateDir: filepath.Join(t.TempDir(), "noc")})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	disp, err := alerting.NewDispatcher(alerting.DispatcherConfig{Dir: t.TempDir(), Outbox: alerting.OutboxConfig{NoSync: true}},
		append([]alerting.Sink{alerting.NewJSONL("jsonl", &buf), wh, am, sl}, sinks...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer disp.Close()
	dispatch := func(ev *alerting.Event) {
		if err := disp.Dispatch(ev); err != nil {
			t.Fatal(err)
		}
	}
	p, err := pipeline.New(pipeline.Config{Rules: set, Map: spec.Map(), LocalASNs: spec.LocalASNs, Mute: mute, GroupWait: groupWait,
		Events: func(ev *alerting.Event) { r.events = append(r.events, *ev); dispatch(ev) }},
		func(ev *alerting.Event) { r.alerts = append(r.alerts, *ev); dispatch(ev) })
	if err != nil {
		t.Fatal(err)
	}
	if err := replay.Run(p, srcs, nil); err != nil {
		t.Fatal(err)
	}
	if err := disp.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev alerting.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("jsonl line %s: %v", line, err)
		}
		if ev.Kind != alerting.KindAlert && ev.Kind != alerting.KindEvent {
			t.Fatalf("line without kind: %s", line)
		}
		r.jsonl = append(r.jsonl, ev)
		r.lines = append(r.lines, line)
	}
	return r
}

// byEvent groups event notifications by event ID, in order of first
// notification.
func byEvent(evs []alerting.Event) (ids []string, m map[string][]alerting.Event) {
	m = map[string][]alerting.Event{}
	for _, ev := range evs {
		if _, ok := m[ev.ID]; !ok {
			ids = append(ids, ev.ID)
		}
		m[ev.ID] = append(m[ev.ID], ev)
	}
	return ids, m
}

func updates(ns []alerting.Event) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Update+"@"+n.At.Format("01-02T15:04")+"/"+n.Severity)
	}
	return strings.Join(s, " ")
}

func kinds(ev alerting.Event) []string {
	var out []string
	for _, s := range ev.Signals {
		if !slices.Contains(out, s.Kind) {
			out = append(out, s.Kind)
		}
	}
	slices.Sort(out)
	return out
}

func networks(ev alerting.Event) []string {
	var out []string
	for _, e := range ev.Scope.Entities {
		if strings.HasPrefix(e.Entity, "asn:") {
			out = append(out, e.Name)
		}
	}
	return out
}

// sinks is what each sink received: JSON lines every alert and event
// notification; the webhook the pages; Slack one message per page that
// opens something (posted) and an update per page that changes it; the
// Alertmanager a post per notification not muted.
type sinks struct{ jsonl, hook, slackPosts, slackUpdates, am int }

// checkSinks asserts what each sink received.
func checkSinks(t *testing.T, r *run, want sinks) {
	t.Helper()
	if len(r.jsonl) != len(r.alerts)+len(r.events) || len(r.jsonl) != want.jsonl {
		t.Errorf("jsonl sink got %d lines, want %d (%d alerts + %d events)", len(r.jsonl), want.jsonl, len(r.alerts), len(r.events))
	}
	if len(r.webhook) != want.hook {
		t.Errorf("webhook got %d notifications, want %d", len(r.webhook), want.hook)
	}
	var posts, updates int
	for _, c := range r.slack.calls {
		switch {
		case c.method == "chat.postMessage" && c.form.Get("thread_ts") == "":
			posts++
		case c.method == "chat.update":
			updates++
		}
	}
	if posts != want.slackPosts || updates != want.slackUpdates || posts+updates != want.hook {
		t.Errorf("slack got %d messages and %d updates, want %d and %d (the webhook's %d pages)", posts, updates, want.slackPosts, want.slackUpdates, want.hook)
	}
	unmuted := 0
	for _, ev := range r.jsonl {
		if ev.Muted == "" {
			unmuted++
		}
	}
	if len(r.am) != want.am || len(r.am) != unmuted {
		t.Errorf("alertmanager got %d posts, want %d (%d notifications not muted)", len(r.am), want.am, unmuted)
	}
	// Each post leads with its notification, in order; an escalated event
	// adds the end of its old label set after it.
	i := 0
	for _, ev := range r.jsonl {
		if ev.Muted != "" || i >= len(r.am) {
			continue
		}
		if got, want := r.am[i][0], ev.Kind+" "+ev.Status; got != want {
			t.Errorf("alertmanager post %d is %s, want %s (%s)", i, got, want, ev.ID)
		}
		i++
	}
	for _, ev := range r.webhook {
		if ev.Kind == alerting.KindAlert && ev.OutageEvent != "" {
			t.Errorf("webhook paged member alert %s of event %s", ev.ID, ev.OutageEvent)
		}
	}
	// Every line carries its delivery key, one per notification: an
	// event's growth is a new one, a repeat would not be.
	keys := map[string]bool{}
	for _, ev := range r.jsonl {
		if ev.DeliveryKey == "" || ev.DeliveryKey != alerting.DeliveryKey(&ev) || keys[ev.DeliveryKey] {
			t.Errorf("line %s %s: delivery key %q", ev.ID, ev.Status, ev.DeliveryKey)
		}
		keys[ev.DeliveryKey] = true
	}
}

func TestIberiaOneEventPerCountry(t *testing.T) {
	// A second webhook pages only critical: both events open critical, as
	// their first page waits for the traffic view (group wait), and it
	// gets the growth (each country's bandwidth joining at 10:50) and the
	// resolves.
	var mu sync.Mutex
	var critical []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var ev alerting.Event
		json.NewDecoder(req.Body).Decode(&ev)
		mu.Lock()
		critical = append(critical, ev.Scope.Place+" "+ev.Update+" "+ev.Severity)
		mu.Unlock()
	}))
	defer srv.Close()
	crit, err := alerting.NewWebhook(alerting.WebhookConfig{Name: "critical", URL: srv.URL, MinSeverity: "critical"})
	if err != nil {
		t.Fatal(err)
	}
	r := replayWith(t, "iberia-2025-04-28", []alerting.Sink{crit})
	wantCritical := "country:PT open critical,country:ES open critical,country:PT grow critical,country:ES grow critical,country:PT resolve critical,country:ES resolve critical"
	if got := strings.Join(critical, ","); got != wantCritical {
		t.Errorf("critical-only webhook got\n %s\nwant %s", got, wantCritical)
	}
	ids, m := byEvent(r.events)
	if len(ids) != 2 {
		t.Fatalf("%d events, want 2: %v", len(ids), ids)
	}
	want := map[string]struct {
		updates     string
		first, grew string
		kinds       []string
		networks    []string
		members     int
	}{
		"country:ES": {"open@04-28T10:45/critical grow@04-28T10:50/critical resolve@04-29T06:15/critical",
			"Outage in Spain: traffic 1.8 Gbit/s vs 4.7 Gbit/s expected, −61 %", "scope + Euskaltel (AS12338)",
			[]string{"dns", "quality", "routing", "traffic"},
			[]string{"Telefonica de Espana (AS3352)", "Euskaltel (AS12338)", "Vodafone Spain (AS12430)", "Orange Espagne (AS12479)", "Digi Spain (AS57269)"}, 20},
		// Portugal's bandwidth alert (quality) joins at 10:50, a growth.
		"country:PT": {"open@04-28T10:45/critical grow@04-28T10:50/critical resolve@04-29T00:30/critical",
			"Outage in Portugal: traffic 507 Mbit/s vs 1.1 Gbit/s expected, −55 %", "seen in + quality",
			[]string{"dns", "quality", "routing", "traffic"},
			[]string{"NOS (AS2860)", "MEO (AS3243)", "NOWO (AS13156)"}, 14},
	}
	for _, id := range ids {
		ns := m[id]
		last := ns[len(ns)-1]
		w, ok := want[last.Scope.Place]
		if !ok {
			t.Fatalf("event for %s", last.Scope.Place)
		}
		if got := updates(ns); got != w.updates {
			t.Errorf("%s notifications:\n got %s\nwant %s", last.Scope.Place, got, w.updates)
		}
		// The first page names the country, the growth what it adds.
		if ns[0].Title != last.Scope.Name || !strings.HasPrefix(ns[0].Summary, w.first) {
			t.Errorf("%s first page %q: %s", last.Scope.Place, ns[0].Title, ns[0].Summary)
		}
		if got := strings.Join(ns[1].Grew, "; "); got != w.grew {
			t.Errorf("%s growth says %q, want %q", last.Scope.Place, got, w.grew)
		}
		if last.Status != alerting.Resolved || last.Severity != "critical" || last.End == nil {
			t.Errorf("%s last notification %s %s", last.Scope.Place, last.Status, last.Severity)
		}
		if got := kinds(last); !slices.Equal(got, w.kinds) {
			t.Errorf("%s signal kinds %v, want %v", last.Scope.Place, got, w.kinds)
		}
		if got := networks(last); !slices.Equal(got, w.networks) {
			t.Errorf("%s networks %v, want %v", last.Scope.Place, got, w.networks)
		}
		if len(last.Members) != w.members || last.Scope.Share != 1 {
			t.Errorf("%s: %d members, share %v", last.Scope.Place, len(last.Members), last.Scope.Share)
		}
	}
	// Every outage alert names its event; none is left out.
	for _, a := range r.alerts {
		if a.OutageEvent == "" || m[a.OutageEvent] == nil {
			t.Errorf("alert %s %s %s in no event", a.ID, a.Entity, a.Signal)
		}
	}
	checkSinks(t, r, sinks{jsonl: 68 + 6, hook: 6, slackPosts: 2, slackUpdates: 4, am: 74})
}

func TestUgandaOneEvent(t *testing.T) {
	r := replayFixture(t, "uganda-2021-01-13")
	ids, m := byEvent(r.events)
	if len(ids) != 1 {
		t.Fatalf("%d events, want 1", len(ids))
	}
	ns := m[ids[0]]
	// The first page waits ten minutes after the first alert (13:35)
	// and opens as a warning; it grows critical at 14:00.
	want := "open@01-13T13:45/warning grow@01-13T14:00/critical grow@01-13T17:05/critical grow@01-13T17:10/critical resolve@01-19T16:00/critical"
	if got := updates(ns); got != want {
		t.Errorf("notifications:\n got %s\nwant %s", got, want)
	}
	last := ns[len(ns)-1]
	if last.Scope.Name != "Uganda" || len(last.Members) != 21 || last.Confidence != 0.85 {
		t.Errorf("scope %s, %d members, confidence %v", last.Scope.Name, len(last.Members), last.Confidence)
	}
	checkSinks(t, r, sinks{jsonl: 42 + 5, hook: 5, slackPosts: 1, slackUpdates: 4, am: 47})
}

func TestVirginMediaOneEventPerOutage(t *testing.T) {
	r := replayFixture(t, "virginmedia-2023-04-04")
	ids, m := byEvent(r.events)
	if len(ids) != 2 {
		t.Fatalf("%d events, want 2", len(ids))
	}
	starts := []string{"2023-04-04T00:30", "2023-04-04T15:00"}
	// Each first page waits ten minutes after the first alert, by when
	// traffic and DNS have joined the routes; then it grows critical.
	wantUpdates := []string{"open@04-04T00:45/warning grow@04-04T01:00/critical resolve@04-04T08:10/critical",
		"open@04-04T15:15/warning grow@04-04T15:30/critical resolve@04-04T18:25/critical"}
	for i, id := range ids {
		ns := m[id]
		last := ns[len(ns)-1]
		if got := last.Start.Format("2006-01-02T15:04"); got != starts[i] {
			t.Errorf("event %d starts %s, want %s", i, got, starts[i])
		}
		if got := updates(ns); got != wantUpdates[i] || last.Status != alerting.Resolved {
			t.Errorf("event %d: %s", i, updates(ns))
		}
		if !strings.Contains(last.Cause, "routes withdrawn by Virgin Media (AS5089)") ||
			!strings.Contains(last.Cause, "DNS failures for virginmedia.com") {
			t.Errorf("event %d cause %q", i, last.Cause)
		}
		var ents []string
		for _, e := range last.Scope.Entities {
			ents = append(ents, e.Entity)
		}
		if !slices.Equal(ents, []string{"country:GB", "asn:5089", "zone:virginmedia.com"}) || len(last.Members) != 9 {
			t.Errorf("event %d scope %v, %d members", i, ents, len(last.Members))
		}
		if last.Entity != "asn:5089" || last.Signal != "traffic_bytes" || last.Severity != "critical" {
			t.Errorf("event %d headline %s %s %s", i, last.Entity, last.Signal, last.Severity)
		}
		// The network carried 30 % of the country's traffic.
		if last.Scope.Share < 0.28 || last.Scope.Share > 0.32 {
			t.Errorf("event %d share %v", i, last.Scope.Share)
		}
	}
	checkSinks(t, r, sinks{jsonl: 36 + 6, hook: 6, slackPosts: 2, slackUpdates: 4, am: 42})
	// The documents show the second notification of the first outage, the
	// growth to critical.
	for i, ev := range r.jsonl {
		if ev.ID == ids[0] && ev.Revision == 2 {
			checkDocJSON(t, eventExample, r.lines[i])
		}
	}
}

// eventExample marks the event line the documents show.
const eventExample = "<!-- go test ./correlate checks this example against the replay -->"

func TestTeliaOneEventPerTransitIncident(t *testing.T) {
	r := replayFixture(t, "telia-2019-06-20")
	ids, m := byEvent(r.events)
	if len(ids) != 2 {
		t.Fatalf("%d events, want 2", len(ids))
	}
	// The 06-17 episode, then the 06-20 one: lossy destinations in
	// address order (198.18.2.0/24 before 198.18.10.0/24).
	dests := []int{22, 34}
	// Each opens critical: by the end of its ten-minute group wait the
	// loss has lasted long enough to weigh in full.
	wantUpdates := []string{"open@06-17T08:45/critical resolve@06-17T09:25/critical",
		"open@06-20T12:25/critical resolve@06-20T12:45/critical"}
	first := []string{"198.18.0.0/24", "198.18.1.0/24"}
	for i, id := range ids {
		last := m[id][len(m[id])-1]
		if last.Scope.Place != "transit:1299" || !slices.Equal(last.Scope.Sites, []string{"ams01", "fra01", "lon01"}) ||
			len(last.Scope.Destinations) != dests[i] || last.Scope.Destinations[0] != first[i] || last.Scope.Destinations[9] != "198.18.10.0/24" && i == 0 {
			t.Errorf("event %d scope %+v", i, last.Scope)
		}
		if !strings.HasPrefix(last.Cause, "packet loss through AS1299") {
			t.Errorf("event %d cause %q", i, last.Cause)
		}
		if got := updates(m[id]); got != wantUpdates[i] {
			t.Errorf("event %d notifications %s", i, got)
		}
	}
	checkSinks(t, r, sinks{jsonl: 4 + 4, hook: 4, slackPosts: 2, slackUpdates: 2, am: 8})
}

func TestNegativeFixturesNoEvent(t *testing.T) {
	for _, name := range []string{"baltic-cables-2024-11-17", "superbowl-2025-02-09", "quiet-weekend-2024-03-09",
		"holidays-2023-12-25", "evening-congestion-2024-10-07", "bgp-session-reset-2024-05-14"} {
		t.Run(name, func(t *testing.T) {
			r := replayFixture(t, name)
			if len(r.events) != 0 {
				t.Fatalf("%d events: %s", len(r.events), updates(r.events))
			}
			// The session reset raises one feed fault per collector,
			// firing and resolved: paged as alerts, in no event.
			want := sinks{}
			if name == "bgp-session-reset-2024-05-14" {
				want = sinks{jsonl: 4, hook: 4, slackPosts: 2, slackUpdates: 2, am: 4}
			}
			checkSinks(t, r, want)
		})
	}
}

// A maintenance window over the first Virgin Media outage: nothing of it
// is paged, its alerts are recorded as silenced, and the second outage,
// after the window, is one event as usual.
func TestSilencedWindowDuringReplay(t *testing.T) {
	st, err := silence.Open("", []silence.Silence{{Labels: map[string]string{"country": "GB"},
		Start: time.Date(2023, 4, 4, 0, 0, 0, 0, time.UTC), End: time.Date(2023, 4, 4, 9, 0, 0, 0, time.UTC),
		Author: "noc", Comment: "Virgin Media core maintenance"}})
	if err != nil {
		t.Fatal(err)
	}
	r := replayFixture(t, "virginmedia-2023-04-04", st)
	ids, m := byEvent(r.events)
	if len(ids) != 1 || m[ids[0]][0].Start.Format("15:04") != "15:00" {
		t.Fatalf("events %v", updates(r.events))
	}
	silenced := 0
	for _, a := range r.jsonl {
		if a.Kind != alerting.KindAlert {
			continue
		}
		inWindow := a.Start.Before(time.Date(2023, 4, 4, 9, 0, 0, 0, time.UTC))
		switch {
		case inWindow && a.Muted != "silence config-1":
			t.Errorf("alert %s %s %s in the window: muted %q", a.Status, a.Entity, a.Signal, a.Muted)
		case inWindow:
			silenced++
		case a.Muted != "":
			t.Errorf("alert %s %s after the window muted %q", a.Entity, a.Signal, a.Muted)
		}
	}
	// 9 alerts fired and resolved in the first outage.
	if silenced != 18 {
		t.Errorf("%d silenced alert lines, want 18", silenced)
	}
	for _, ev := range r.webhook {
		if ev.At.Before(time.Date(2023, 4, 4, 9, 0, 0, 0, time.UTC)) {
			t.Errorf("paged in the window: %s %s %s", ev.Kind, ev.ID, ev.Update)
		}
	}
	checkSinks(t, r, sinks{jsonl: 36 + 3, hook: 3, slackPosts: 1, slackUpdates: 2, am: 21})
}

// A silence of one entity, the network, over the first Virgin Media
// outage: its alerts are recorded as silenced and nothing names it in that
// window; what the rest of the country showed (routes, DNS failures of
// virginmedia.com) is still one event.
func TestSilencedEntityDuringReplay(t *testing.T) {
	until := time.Date(2023, 4, 4, 9, 0, 0, 0, time.UTC)
	st, err := silence.Open("", []silence.Silence{{Entity: "asn:5089",
		Start: time.Date(2023, 4, 4, 0, 0, 0, 0, time.UTC), End: until, Author: "noc", Comment: "AS5089 core maintenance"}})
	if err != nil {
		t.Fatal(err)
	}
	r := replayFixture(t, "virginmedia-2023-04-04", st)
	var silenced []string
	for _, a := range r.jsonl {
		if a.Kind == alerting.KindAlert && a.Muted != "" {
			silenced = append(silenced, a.Status+" "+a.Signal)
			if a.Entity != "asn:5089" || a.Muted != "silence config-1" || !a.Start.Before(until) {
				t.Errorf("muted %s %s at %s: %q", a.Entity, a.Signal, a.Start, a.Muted)
			}
		}
	}
	// The network's five alerts (its traffic, DNS queries, IPv4 and IPv6
	// space, withdrawals), firing and resolved.
	want := "firing bgp_announced_v4,firing bgp_announced_v6,firing bgp_withdrawals,firing traffic_bytes,firing dns_queries," +
		"resolved bgp_withdrawals,resolved bgp_announced_v4,resolved bgp_announced_v6,resolved dns_queries,resolved traffic_bytes"
	if got := strings.Join(silenced, ","); got != want {
		t.Errorf("silenced alert lines:\n got %s\nwant %s", got, want)
	}
	ids, m := byEvent(r.events)
	wantEvents := []struct {
		updates  string
		networks []string
	}{
		{"open@04-04T00:45/critical resolve@04-04T07:40/critical", nil},
		{"open@04-04T15:15/warning grow@04-04T15:30/critical resolve@04-04T18:25/critical", []string{"Virgin Media (AS5089)"}},
	}
	if len(ids) != len(wantEvents) {
		t.Fatalf("events: %s", updates(r.events))
	}
	for i, id := range ids {
		last := m[id][len(m[id])-1]
		if got := updates(m[id]); got != wantEvents[i].updates || !slices.Equal(networks(last), wantEvents[i].networks) {
			t.Errorf("event %d: %s, networks %v", i, got, networks(last))
		}
	}
	for _, ev := range r.webhook {
		if ev.At.Before(until) && (ev.Entity == "asn:5089" || slices.Contains(networks(ev), "Virgin Media (AS5089)")) {
			t.Errorf("paged in the window naming AS5089: %s %s %s", ev.Kind, ev.ID, ev.Update)
		}
	}
	checkSinks(t, r, sinks{jsonl: 36 + 5, hook: 5, slackPosts: 2, slackUpdates: 3, am: 41 - 10})
}
