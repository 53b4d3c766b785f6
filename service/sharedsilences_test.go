package service

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/silence"
)

// A silence set through one of two instances is listed by both and mutes
// on both; deleted through the other, it is gone from both. The config's
// silence is listed by each and cannot be deleted.
func TestStagedSilencesTravel(t *testing.T) {
	t.Setenv("OUTAGEWATCH_TEST_TOKEN", "tok")
	c := startBroker(t, 0, "", "flows")
	defer c.Close()
	addr := c.ListenAddrs()[0]
	inst := func(i int) (string, *Staged, func()) {
		dir := filepath.Join(t.TempDir(), "instance")
		cfg := stagedConfig(childSpec{Broker: addr, Dir: dir, Stage: StageBoth,
			Topics: []Topic{{Name: "flows", Stream: "flows", Format: "goflow2-pb"}}})
		cfg.HTTP.TokenEnv = "OUTAGEWATCH_TEST_TOKEN"
		cfg.Silences = []silence.Silence{{Entity: "country:PT", Start: time.Date(2025, 4, 28, 0, 0, 0, 0, time.UTC),
			End: time.Date(2025, 4, 29, 0, 0, 0, 0, time.UTC), Author: "noc", Comment: "planned"}}
		return runStagedObj(t, cfg, quietLog())
	}
	baseA, stA, stopA := inst(0)
	defer stopA()
	baseB, stB, stopB := inst(1)
	defer stopB()
	list := func(base string) []string {
		code, body := apiDo(t, base, "GET", "/api/v1/silences", "", "")
		var l struct{ Silences []silence.Silence }
		if code != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil {
			t.Fatalf("silences: %d %s", code, body)
		}
		var ids []string
		for _, s := range l.Silences {
			ids = append(ids, s.ID+" "+s.Entity+" "+s.Comment)
		}
		return ids
	}
	var code int
	var body string
	// The first request may come before the topic exists.
	waitFor(t, "a silence accepted", waitLong, func() bool {
		code, body = apiDo(t, baseA, "POST", "/api/v1/silences", "tok",
			`{"entity":"asn:5089","start":"2023-04-04T00:00:00Z","end":"2023-04-04T09:00:00Z","author":"ana","comment":"core maintenance"}`)
		return code != http.StatusBadRequest && code != http.StatusInternalServerError
	})
	var added silence.Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &added) != nil {
		t.Fatalf("add: %d %s", code, body)
	}
	want := []string{"config-1 country:PT planned", added.ID + " asn:5089 core maintenance"}
	waitFor(t, "the silence on the other instance", waitLong, func() bool { return slices.Equal(list(baseB), want) })
	if got := list(baseA); !slices.Equal(got, want) {
		t.Fatalf("instance A lists %v, want %v", got, want)
	}
	ev := &alerting.Event{Kind: alerting.KindAlert, Entity: "asn:5089", At: time.Date(2023, 4, 4, 3, 0, 0, 0, time.UTC)}
	for name, st := range map[string]*Staged{"A": stA, "B": stB} {
		if why, ok := st.mute.Mutes(ev); !ok || why != "silence "+added.ID {
			t.Fatalf("instance %s: %q %v, want muted by silence %s", name, why, ok, added.ID)
		}
	}
	if code, _ := apiDo(t, baseB, "DELETE", "/api/v1/silences/config-1", "tok", ""); code != http.StatusConflict {
		t.Fatalf("delete the config's silence: %d", code)
	}
	if code, _ := apiDo(t, baseB, "DELETE", "/api/v1/silences/"+added.ID, "tok", ""); code != http.StatusNoContent {
		t.Fatalf("delete through B: %d", code)
	}
	waitFor(t, "the silence gone from A", waitLong, func() bool { return slices.Equal(list(baseA), want[:1]) })
	if code, _ := apiDo(t, baseA, "DELETE", "/api/v1/silences/"+added.ID, "tok", ""); code != http.StatusNotFound {
		t.Fatalf("delete again through A: %d", code)
	}
}
