package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
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

// Silences an older version kept in data_dir/silences.json are carried
// over to the silence topic on start, under their own IDs: the other
// instance lists them and mutes with them. One that has ended is not
// carried. The file is renamed, and a second instance starting with a copy
// of it writes nothing twice.
func TestStagedSilencesCarriedOver(t *testing.T) {
	c := startBroker(t, 0, "", "flows")
	defer c.Close()
	addr := c.ListenAddrs()[0]
	day := time.Date(2023, 4, 4, 0, 0, 0, 0, time.UTC)
	old := []silence.Silence{
		{ID: "0a1b2c3d4e5f6071", Entity: "asn:5089", Start: day, End: time.Now().Add(30 * 24 * time.Hour),
			Author: "ana", Comment: "core maintenance, set before the upgrade"},
		{ID: "8192a3b4c5d6e7f8", Entity: "asn:15169", Start: day, End: day.Add(9 * time.Hour),
			Author: "ana", Comment: "ended long ago"},
	}
	legacy, err := json.MarshalIndent(old, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	inst := func(name string) (string, *Staged, string, func()) {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "silences.json"), legacy, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := stagedConfig(childSpec{Broker: addr, Dir: dir, Stage: StageBoth,
			Topics: []Topic{{Name: "flows", Stream: "flows", Format: "goflow2-pb"}}})
		base, st, stop := runStagedObj(t, cfg, quietLog())
		return base, st, dir, stop
	}
	migrated := func(dir string) bool {
		_, errOld := os.Stat(filepath.Join(dir, "silences.json"))
		b, errNew := os.ReadFile(filepath.Join(dir, "silences.json.migrated"))
		return errors.Is(errOld, fs.ErrNotExist) && errNew == nil && bytes.Equal(b, legacy)
	}
	_, _, dirA, stopA := inst("a")
	defer stopA()
	waitFor(t, "instance A's silences.json carried over and renamed", waitLong, func() bool { return migrated(dirA) })
	baseB, stB, dirB, stopB := inst("b")
	defer stopB()
	waitFor(t, "instance B's copy of the file renamed", waitLong, func() bool { return migrated(dirB) })
	var ids []string
	waitFor(t, "the carried silence listed by B", waitLong, func() bool {
		code, body := apiDo(t, baseB, "GET", "/api/v1/silences", "", "")
		var l struct{ Silences []silence.Silence }
		if code != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil {
			t.Fatalf("silences: %d %s", code, body)
		}
		ids = ids[:0]
		for _, s := range l.Silences {
			ids = append(ids, s.ID)
		}
		return len(ids) > 0
	})
	if want := []string{old[0].ID}; !slices.Equal(ids, want) {
		t.Fatalf("B lists %v, want %v (the ended one not carried)", ids, want)
	}
	at := day.Add(3 * time.Hour) // within both windows in event time
	if why, ok := stB.mute.Mutes(&alerting.Event{Kind: alerting.KindAlert, Entity: "asn:5089", At: at}); !ok || why != "silence "+old[0].ID {
		t.Fatalf("B: %q %v, want muted by silence %s", why, ok, old[0].ID)
	}
	if why, ok := stB.mute.Mutes(&alerting.Event{Kind: alerting.KindAlert, Entity: "asn:15169", At: at}); ok {
		t.Fatalf("B mutes with the ended silence: %q", why)
	}
	// Once on the topic, whichever instances start with the file.
	keys := map[string]int{}
	topic := stB.cfg.Kafka.SilenceTopic
	h, err := stB.highWatermarks(context.Background(), []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := kafkaio.ReadRange(ctx, []string{addr}, kafkaio.PlainDialer(), quietLog(), topic, 0, kafka.FirstOffset, h[tp{topic, 0}],
		func(m kafka.Message) error { keys[string(m.Key)]++; return nil }); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{old[0].ID: 1}; !maps.Equal(keys, want) {
		t.Fatalf("silence topic records by key: %v, want %v", keys, want)
	}
}
