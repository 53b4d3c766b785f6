package service

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/silence"
)

func apiCall(t *testing.T, srv *httptest.Server, method, path, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
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

// Silences are set and removed through the token-guarded API and survive
// a restart; the config's are listed but cannot be deleted.
func TestSilencesAPI(t *testing.T) {
	t.Setenv("OUTAGEWATCH_TEST_TOKEN", "tok")
	dir := t.TempDir()
	cfg := testConfig("127.0.0.1:1", dir)
	cfg.HTTP.TokenEnv = "OUTAGEWATCH_TEST_TOKEN"
	cfg.Silences = []silence.Silence{{Entity: "country:PT", Start: time.Date(2025, 4, 28, 0, 0, 0, 0, time.UTC),
		End: time.Date(2025, 4, 29, 0, 0, 0, 0, time.UTC), Author: "noc", Comment: "planned"}}
	mustValidate(t, cfg)
	svc, err := New(cfg, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	body := `{"entity":"asn:5089","start":"2023-04-04T00:00:00Z","end":"2023-04-04T09:00:00Z","author":"ana","comment":"core maintenance"}`
	if code, _ := apiCall(t, srv, "POST", "/api/v1/silences", "", body); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code, msg := apiCall(t, srv, "POST", "/api/v1/silences", "tok", `{"entity":"asn:5089","start":"2023-04-04T00:00:00Z","end":"2023-04-04T09:00:00Z","author":"ana"}`); code != http.StatusBadRequest || !strings.Contains(msg, "comment: required") {
		t.Fatalf("no comment: %d %s", code, msg)
	}
	if code, msg := apiCall(t, srv, "POST", "/api/v1/silences", "tok", `{"entty":"asn:1"}`); code != http.StatusBadRequest || !strings.Contains(msg, "unknown field") {
		t.Fatalf("unknown field: %d %s", code, msg)
	}
	code, msg := apiCall(t, srv, "POST", "/api/v1/silences", "tok", body)
	var added silence.Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(msg), &added) != nil || added.ID == "" {
		t.Fatalf("add: %d %s", code, msg)
	}
	if code, _ := apiCall(t, srv, "DELETE", "/api/v1/silences/config-1", "tok", ""); code != http.StatusConflict {
		t.Fatalf("delete config silence: %d", code)
	}
	srv.Close()
	svc.disp.Close()

	// Restart on the same data directory.
	svc2, err := New(cfg, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc2.disp.Close()
	srv2 := httptest.NewServer(svc2.Handler())
	defer srv2.Close()
	code, msg = apiCall(t, srv2, "GET", "/api/v1/silences", "", "")
	var list struct{ Silences []silence.Silence }
	if code != http.StatusOK || json.Unmarshal([]byte(msg), &list) != nil || len(list.Silences) != 2 ||
		list.Silences[0].ID != "config-1" || list.Silences[1].ID != added.ID || list.Silences[1].Comment != "core maintenance" {
		t.Fatalf("after restart: %d %s", code, msg)
	}
	if code, _ := apiCall(t, srv2, "DELETE", "/api/v1/silences/"+added.ID, "tok", ""); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := apiCall(t, srv2, "DELETE", "/api/v1/silences/"+added.ID, "tok", ""); code != http.StatusNotFound {
		t.Fatalf("delete again: %d", code)
	}
	if code, msg := apiCall(t, srv2, "GET", "/api/v1/events", "", ""); code != http.StatusOK || strings.TrimSpace(msg) != `{"events":[]}` {
		t.Fatalf("events: %d %s", code, msg)
	}
	if code, _ := apiCall(t, srv2, "GET", "/api/v1/events/572ab3495d561011", "", ""); code != http.StatusNotFound {
		t.Fatalf("unknown event: %d", code)
	}
}
