package service

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/silence"
)

// apiDo is one request to a staged process's listener.
func apiDo(t *testing.T, base, method, path, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// activeIDs lists the IDs of the alerts an instance's API says fire.
func activeIDs(t *testing.T, base string) []string {
	t.Helper()
	code, b := apiDo(t, base, "GET", "/api/v1/alerts", "", "")
	var body struct {
		Alerts []alerting.Event `json:"alerts"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(b), &body) != nil {
		t.Fatalf("alerts: %d %.300s", code, b)
	}
	var got []string
	for _, a := range body.Alerts {
		got = append(got, a.ID)
	}
	slices.Sort(got)
	return got
}

// waitActive waits until an instance's alert API lists exactly want (the
// view it reads follows a topic), and fails with the difference if it
// never does.
func waitActive(t *testing.T, base string, want []string) {
	t.Helper()
	var got []string
	deadline := time.Now().Add(waitLong)
	for got = activeIDs(t, base); !slices.Equal(got, want) && time.Now().Before(deadline); got = activeIDs(t, base) {
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: active alerts\n got %v\nwant %v", base, got, want)
	}
}

// incidentIDs lists the incidents of an instance's outage page.
func incidentIDs(t *testing.T, base string) ([]string, []string) {
	t.Helper()
	code, body := apiDo(t, base, "GET", "/api/v1/incidents", "", "")
	var page struct {
		Incidents []struct{ ID, Place string }
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
		t.Fatalf("incidents: %d %.300s", code, body)
	}
	var ids, places []string
	for _, in := range page.Incidents {
		ids = append(ids, in.ID)
		places = append(places, in.Place)
	}
	slices.Sort(ids)
	return ids, places
}

// replayEvents lists the outage events among replay lines.
func replayEvents(t *testing.T, want map[string]string) []string {
	t.Helper()
	var events []string
	for _, l := range want {
		var ev struct{ ID, Kind string }
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind == alerting.KindEvent && !slices.Contains(events, ev.ID) {
			events = append(events, ev.ID)
		}
	}
	slices.Sort(events)
	return events
}

// waitIncidents waits until an instance's outage page lists exactly the
// replay's outage events; it returns their places.
func waitIncidents(t *testing.T, base string, events []string) []string {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	got, places := incidentIDs(t, base)
	for ; !slices.Equal(got, events) && time.Now().Before(deadline); got, places = incidentIDs(t, base) {
		time.Sleep(100 * time.Millisecond)
	}
	if len(events) == 0 || !slices.Equal(got, events) {
		t.Fatalf("%s: outage page incidents\n got %v\nwant the replay's events %v", base, got, events)
	}
	return places
}

// checkStagedPage checks the outage page, the silence API and the manual
// checkpoint of a staged process that has delivered want (lines by
// delivery key) and runs with the token "tok".
func checkStagedPage(t *testing.T, base string, want map[string]string) {
	t.Helper()
	places := waitIncidents(t, base, replayEvents(t, want))
	if code, body := apiDo(t, base, "GET", "/", "", ""); code != http.StatusOK || !strings.Contains(body, places[0]) {
		t.Fatalf("outage page: %d, without %q", code, places[0])
	}

	sil := `{"entity":"asn:5089","start":"2023-04-04T00:00:00Z","end":"2023-04-04T09:00:00Z","author":"ana","comment":"core maintenance"}`
	if code, _ := apiDo(t, base, "POST", "/api/v1/silences", "", sil); code != http.StatusUnauthorized {
		t.Fatalf("silence without a token: %d", code)
	}
	code, body := apiDo(t, base, "POST", "/api/v1/silences", "tok", sil)
	var added silence.Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &added) != nil || added.ID == "" {
		t.Fatalf("add silence: %d %s", code, body)
	}
	code, body = apiDo(t, base, "GET", "/api/v1/silences", "", "")
	var list struct{ Silences []silence.Silence }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Silences) != 1 || list.Silences[0].ID != added.ID {
		t.Fatalf("silences: %d %s", code, body)
	}
	if code, _ := apiDo(t, base, "DELETE", "/api/v1/silences/"+added.ID, "tok", ""); code != http.StatusNoContent {
		t.Fatalf("delete silence: %d", code)
	}

	if code, _ := apiDo(t, base, "POST", "/api/v1/checkpoint", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("checkpoint without a token: %d", code)
	}
	code, body = apiDo(t, base, "POST", "/api/v1/checkpoint", "tok", "")
	var cp DeploymentCheckpoint
	if code != http.StatusOK || json.Unmarshal([]byte(body), &cp) != nil || !cp.Complete || len(cp.Partitions) == 0 ||
		!slices.Equal(cp.Written, cp.Partitions) || len(cp.Missing) != 0 {
		t.Fatalf("checkpoint: %d %q", code, body)
	}
}

// Two instances, each holding part of the stage-two partitions, fed the
// Uganda fixture up to a day into the shutdown: once the replay's lines
// are delivered (somewhere), each instance's alert API lists every alert
// the replay leaves firing, and each one's outage page every outage event
// of the replay, not only those of its own partitions.
func TestStagedEveryInstanceWhole(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs days of the Uganda fixture through two instances")
	}
	f := loadFixture(t)
	cut := time.Date(2021, 1, 14, 17, 0, 0, 0, time.UTC).UnixNano()
	var recs []*ingest.Record
	for _, r := range loadStagedFixture(t).recs {
		if r.Time < cut {
			recs = append(recs, r)
		}
	}
	wantLines, p, err := replayLines(f, recs)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, a := range p.ActiveAlerts() {
		want = append(want, a.ID)
	}
	slices.Sort(want)
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceStreams(t, addr, f.topics, recs)
	var bases, dirs []string
	var sts []*Staged
	for i := range 2 {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("instance-%d", i))
		cfg := stagedConfig(childSpec{Broker: addr, Dir: dir, Stage: StageBoth, Topics: f.topics})
		cfg.LocalASNs = f.local
		base, st, stop := runStagedObj(t, cfg, quietLog())
		defer stop()
		bases, dirs, sts = append(bases, base), append(dirs, dir), append(sts, st)
	}
	waitFor(t, "every line of the replay delivered by one instance or the other", waitLong, func() bool {
		var all []string
		for _, d := range dirs {
			all = append(all, readLines(t, filepath.Join(d, "alerts.jsonl"))...)
		}
		got, err := byDeliveryKey(all)
		if err != nil {
			t.Fatal(err)
		}
		for k := range wantLines {
			if _, ok := got[k]; !ok {
				return false
			}
		}
		return true
	})
	for i, st := range sts {
		if n := len(st.status.held()); n == 0 || n == 4 {
			t.Fatalf("instance %d holds %d of the 4 stage-two partitions; the test needs them shared", i, n)
		}
	}
	events := replayEvents(t, wantLines)
	for _, base := range bases {
		waitActive(t, base, want)
		waitIncidents(t, base, events)
	}
}
