package service

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/silence"
)

// Silences are set and removed through the token-guarded API and survive
// a restart (they are on the silence topic); the config's are listed but
// cannot be deleted; bad requests are refused with the reason.
func TestSilencesAPI(t *testing.T) {
	t.Setenv("OUTAGEWATCH_TEST_TOKEN", "tok")
	c := startBroker(t, 0, "", "flows")
	defer c.Close()
	dir := t.TempDir()
	cfg := testConfig(c.ListenAddrs()[0], dir)
	cfg.HTTP.TokenEnv = "OUTAGEWATCH_TEST_TOKEN"
	cfg.Kafka.InternalPartitions = 1
	cfg.Silences = []silence.Silence{{Entity: "country:PT", Start: time.Date(2025, 4, 28, 0, 0, 0, 0, time.UTC),
		End: time.Date(2025, 4, 29, 0, 0, 0, 0, time.UTC), Author: "noc", Comment: "planned"}}
	mustValidate(t, cfg)
	base, _, stop := startStaged(t, cfg, Options{})
	body := `{"entity":"asn:5089","start":"2023-04-04T00:00:00Z","end":"2023-04-04T09:00:00Z","author":"ana","comment":"core maintenance"}`
	if code, _ := apiDo(t, base, "POST", "/api/v1/silences", "", body); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code, msg := apiDo(t, base, "POST", "/api/v1/silences", "tok", `{"entity":"asn:5089","start":"2023-04-04T00:00:00Z","end":"2023-04-04T09:00:00Z","author":"ana"}`); code != http.StatusBadRequest || !strings.Contains(msg, "comment: required") {
		t.Fatalf("no comment: %d %s", code, msg)
	}
	if code, msg := apiDo(t, base, "POST", "/api/v1/silences", "tok", `{"entty":"asn:1"}`); code != http.StatusBadRequest || !strings.Contains(msg, "unknown field") {
		t.Fatalf("unknown field: %d %s", code, msg)
	}
	var code int
	var msg string
	// The silence topic is created as the stages start.
	waitFor(t, "a silence added", waitLong, func() bool {
		code, msg = apiDo(t, base, "POST", "/api/v1/silences", "tok", body)
		return !strings.Contains(msg, "silence not written")
	})
	var added silence.Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(msg), &added) != nil || added.ID == "" {
		t.Fatalf("add: %d %s", code, msg)
	}
	if code, _ := apiDo(t, base, "DELETE", "/api/v1/silences/config-1", "tok", ""); code != http.StatusConflict {
		t.Fatalf("delete config silence: %d", code)
	}
	stop()

	// Restart on the same data directory and broker.
	base, _, stop = startStaged(t, cfg, Options{})
	defer stop()
	var list struct{ Silences []silence.Silence }
	waitFor(t, "the silence read back from its topic", waitLong, func() bool {
		code, msg = apiDo(t, base, "GET", "/api/v1/silences", "", "")
		return code == http.StatusOK && json.Unmarshal([]byte(msg), &list) == nil && len(list.Silences) == 2
	})
	if list.Silences[0].ID != "config-1" || list.Silences[1].ID != added.ID || list.Silences[1].Comment != "core maintenance" {
		t.Fatalf("after restart: %d %s", code, msg)
	}
	if code, _ := apiDo(t, base, "DELETE", "/api/v1/silences/"+added.ID, "tok", ""); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := apiDo(t, base, "DELETE", "/api/v1/silences/"+added.ID, "tok", ""); code != http.StatusNotFound {
		t.Fatalf("delete again: %d", code)
	}
	if code, msg := apiDo(t, base, "GET", "/api/v1/events", "", ""); code != http.StatusOK || strings.TrimSpace(msg) != `{"events":[]}` {
		t.Fatalf("events: %d %s", code, msg)
	}
	if code, _ := apiDo(t, base, "GET", "/api/v1/events/572ab3495d561011", "", ""); code != http.StatusNotFound {
		t.Fatalf("unknown event: %d", code)
	}
}
