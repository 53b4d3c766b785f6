package service

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/alerting"
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

// checkStagedPage checks the outage page, the silence API and the manual
// checkpoint of a staged process that has delivered want (lines by
// delivery key) and runs with the token "tok".
func checkStagedPage(t *testing.T, base string, want map[string]string) {
	t.Helper()
	var events []string
	for _, l := range want {
		var ev struct{ ID, Kind, Status string }
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind == alerting.KindEvent && !slices.Contains(events, ev.ID) {
			events = append(events, ev.ID)
		}
	}
	slices.Sort(events)
	code, body := apiDo(t, base, "GET", "/api/v1/incidents", "", "")
	var page struct {
		Incidents []struct{ ID, Place string }
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
		t.Fatalf("incidents: %d %.300s", code, body)
	}
	var got []string
	for _, in := range page.Incidents {
		got = append(got, in.ID)
	}
	slices.Sort(got)
	if len(events) == 0 || !slices.Equal(got, events) {
		t.Fatalf("outage page incidents\n got %v\nwant the replay's events %v", got, events)
	}
	if code, body := apiDo(t, base, "GET", "/", "", ""); code != http.StatusOK || !strings.Contains(body, page.Incidents[0].Place) {
		t.Fatalf("outage page: %d, without %q", code, page.Incidents[0].Place)
	}

	sil := `{"entity":"asn:5089","start":"2023-04-04T00:00:00Z","end":"2023-04-04T09:00:00Z","author":"ana","comment":"core maintenance"}`
	if code, _ := apiDo(t, base, "POST", "/api/v1/silences", "", sil); code != http.StatusUnauthorized {
		t.Fatalf("silence without a token: %d", code)
	}
	code, body = apiDo(t, base, "POST", "/api/v1/silences", "tok", sil)
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
	if code, body := apiDo(t, base, "POST", "/api/v1/checkpoint", "tok", ""); code != http.StatusOK || body != "checkpoint written\n" {
		t.Fatalf("checkpoint: %d %q", code, body)
	}
}
