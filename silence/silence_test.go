package silence

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
)

var t0 = time.Date(2023, 4, 4, 0, 0, 0, 0, time.UTC)

func window(entity string) Silence {
	return Silence{Entity: entity, Start: t0, End: t0.Add(2 * time.Hour), Author: "noc", Comment: "planned work"}
}

func TestMatches(t *testing.T) {
	s := window("asn:50*")
	s.Labels = map[string]string{"country": "GB"}
	ev := &alerting.Event{Entity: "asn:5089", Labels: map[string]string{"country": "GB"}, At: t0.Add(time.Hour)}
	if !s.Matches(ev) {
		t.Fatal("in window, entity and label match: not silenced")
	}
	for name, mod := range map[string]func(e alerting.Event) alerting.Event{
		"before start": func(e alerting.Event) alerting.Event { e.At = t0.Add(-time.Minute); return e },
		"at end":       func(e alerting.Event) alerting.Event { e.At = t0.Add(2 * time.Hour); return e },
		"other entity": func(e alerting.Event) alerting.Event { e.Entity = "asn:2856"; return e },
		"other label":  func(e alerting.Event) alerting.Event { e.Labels = map[string]string{"country": "IE"}; return e },
	} {
		e := mod(*ev)
		if s.Matches(&e) {
			t.Errorf("%s: silenced", name)
		}
	}
}

func TestValidate(t *testing.T) {
	for want, s := range map[string]Silence{
		"matchers":   {Start: t0, End: t0.Add(time.Hour), Author: "a", Comment: "c"},
		"end: must":  {Entity: "asn:1", Start: t0, End: t0, Author: "a", Comment: "c"},
		"author":     {Entity: "asn:1", Start: t0, End: t0.Add(time.Hour), Comment: "c"},
		"comment":    {Entity: "asn:1", Start: t0, End: t0.Add(time.Hour), Author: "a"},
		"pattern":    {Entity: "asn:[", Start: t0, End: t0.Add(time.Hour), Author: "a", Comment: "c"},
		"start, end": {Entity: "asn:1", Author: "a", Comment: "c"},
	} {
		err := s.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("want error starting %q, got %v", want, err)
		}
	}
}

func TestStorePersistsAndDeletes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "silences.json")
	conf := []Silence{window("country:PT")}
	st, err := Open(file, conf)
	if err != nil {
		t.Fatal(err)
	}
	added, err := st.Add(window("asn:5089"))
	if err != nil || len(added.ID) != 16 {
		t.Fatalf("add: %+v %v", added, err)
	}
	// A restart: the API silence is back, the config one comes from the
	// config again.
	st2, err := Open(file, conf)
	if err != nil {
		t.Fatal(err)
	}
	l := st2.List()
	if len(l) != 2 || l[0].ID != "config-1" || !l[0].FromConfig || l[1].ID != added.ID || l[1].Entity != "asn:5089" {
		t.Fatalf("after reopen: %+v", l)
	}
	why, ok := st2.Mutes(&alerting.Event{Entity: "asn:5089", At: t0.Add(time.Minute)})
	if !ok || why != "silence "+added.ID {
		t.Fatalf("mutes: %q %v", why, ok)
	}
	if err := st2.Delete("config-1"); !errors.Is(err, ErrFromConfig) {
		t.Fatalf("delete config silence: %v", err)
	}
	if err := st2.Delete("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete unknown: %v", err)
	}
	if err := st2.Delete(added.ID); err != nil {
		t.Fatal(err)
	}
	st3, _ := Open(file, nil)
	if l := st3.List(); len(l) != 0 {
		t.Fatalf("deleted silence came back: %+v", l)
	}
}
