package correlate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/rules"
)

// writeRules writes a rules file and loads it.
func writeRules(t *testing.T, doc string) *rules.Set {
	t.Helper()
	f := filepath.Join(t.TempDir(), "paging.yaml")
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := rules.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The shipped rules and a correlator built without rules judge alike.
func TestDefaultThresholdsAreTheShippedRules(t *testing.T) {
	set, err := rules.Default()
	if err != nil {
		t.Fatal(err)
	}
	th, err := correlate.FromRules(set.Severity, correlate.Thresholds{})
	if err != nil || th != correlate.DefaultThresholds {
		t.Fatalf("shipped %+v (%v), default %+v", th, err, correlate.DefaultThresholds)
	}
}

// A country at −60 % escalates as it lasts, at the impacts its rules file
// sets: 0.6 × 5/60 = 0.05 is info, 0.15 at 15 minutes a warning, 0.45 at
// 45 minutes critical. The shipped thresholds would have opened it as a
// warning and made it critical at 15 minutes.
func TestEventEscalatesAtTheRulesThresholds(t *testing.T) {
	set := writeRules(t, "severity:\n  warning: 0.12\n  critical: 0.42\n  full_after: 1h\n")
	th, err := correlate.FromRules(set.Severity, correlate.Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	c := correlate.New(correlate.Config{Map: testMap(), GroupWait: -1, Severity: th})
	c.Add(alert(alerting.Firing, "traffic_drop", "traffic_bytes", "country:GB", t0, t0.Add(5*time.Minute), -60))
	var got []string
	for m := 5; m <= 60; m += 5 {
		at := t0.Add(time.Duration(m) * time.Minute)
		if m == 60 {
			c.Add(alert(alerting.Resolved, "traffic_drop", "traffic_bytes", "country:GB", t0, at, 0))
		}
		for _, ev := range c.Flush(at) {
			got = append(got, ev.Update+"@"+at.Format("15:04")+"/"+ev.Severity)
		}
	}
	want := []string{"open@10:05/info", "grow@10:15/warning", "grow@10:45/critical", "resolve@11:00/critical"}
	if len(got) != len(want) {
		t.Fatalf("notifications %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("notifications %v, want %v", got, want)
		}
	}
}

// An event escalates as its scope grows, at a rules file's thresholds: a
// network with 30 % of the country's traffic gone opens it as a warning
// (1 × 0.3 × 5/10 = 0.15, then 0.3 at ten minutes); a second, with 50 %,
// joining makes it critical (1 × 0.8 = 0.8).
func TestEventEscalatesAsItGrows(t *testing.T) {
	set := writeRules(t, "severity:\n  warning: 0.12\n  critical: 0.42\n  full_after: 10m\n")
	th, err := correlate.FromRules(set.Severity, correlate.Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	level := map[string]float64{"country:GB": 100, "asn:5089": 30, "asn:2856": 50}
	c := correlate.New(correlate.Config{Map: testMap(), GroupWait: -1, Severity: th, Level: func(signal, entity string, _ time.Time) (float64, bool) {
		v, ok := level[entity]
		return v, ok && signal == "traffic_bytes"
	}})
	c.Add(alert(alerting.Firing, "traffic_drop", "traffic_bytes", "asn:5089", t0, t0.Add(5*time.Minute), -100))
	var got []string
	for m := 5; m <= 20; m += 5 {
		at := t0.Add(time.Duration(m) * time.Minute)
		if m == 15 {
			c.Add(alert(alerting.Firing, "traffic_drop", "traffic_bytes", "asn:2856", t0.Add(10*time.Minute), at, -100))
		}
		for _, ev := range c.Flush(at) {
			got = append(got, fmt.Sprintf("%s@%s/%s/%v/%d networks", ev.Update, at.Format("15:04"), ev.Severity, ev.Impact, len(networks(*ev))))
		}
	}
	want := "open@10:05/warning/0.15/1 networks grow@10:15/critical/0.8/2 networks"
	if strings.Join(got, " ") != want {
		t.Fatalf("notifications\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// The service configuration's correlation.severity overrides the rules'
// block field by field, and cannot leave critical at or below warning.
func TestConfigOverridesTheRulesSeverity(t *testing.T) {
	set := writeRules(t, "severity:\n  warning: 0.12\n  critical: 0.42\n  full_after: 1h\n")
	th, err := correlate.FromRules(set.Severity, correlate.Thresholds{Critical: 0.6})
	if err != nil || th != (correlate.Thresholds{Warning: 0.12, Critical: 0.6, FullAfter: time.Hour}) {
		t.Fatalf("%+v %v", th, err)
	}
	_, err = correlate.FromRules(set.Severity, correlate.Thresholds{Warning: 0.5})
	want := "event severity: critical 0.42 not above warning 0.5 once correlation.severity overrides the severity block at " + set.Severity.File + ":1"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

// The pipeline takes the thresholds from its rules set: with critical set
// out of reach (0.9), each Virgin Media outage (a network with 30 % of the
// country, −97 %) stays a warning, where the shipped rules page it as
// critical (TestVirginMediaOneEventPerOutage).
func TestReplayTakesSeverityFromTheRules(t *testing.T) {
	files, err := filepath.Glob("../rules/default/[1-4]*.yaml")
	if err != nil || len(files) != 4 {
		t.Fatalf("shipped detector rules: %v %v", files, err)
	}
	sev := filepath.Join(t.TempDir(), "paging.yaml")
	if err := os.WriteFile(sev, []byte("severity:\n  warning: 0.1\n  critical: 0.9\n  full_after: 30m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := rules.LoadAll(append(files, sev)...)
	if err != nil {
		t.Fatal(err)
	}
	// Paged at once (no group wait), so that the first page comes
	// before the traffic re-weighs the impact.
	r := replayWait(t, "virginmedia-2023-04-04", set, -1, nil)
	ids, m := byEvent(r.events)
	if len(ids) != 2 {
		t.Fatalf("%d events", len(ids))
	}
	// The second outage opens on its withdrawals alone (relative change
	// of the worst member), then weighs the traffic of a network with
	// 30 % of the country: its impact dips to info before it lasts, but
	// a page never walks back, so the growth at 15:10 still says warning
	// and the return to warning at 15:15 sends nothing.
	want := []string{
		"open@04-04T00:35/warning grow@04-04T00:40/warning resolve@04-04T08:10/warning",
		"open@04-04T15:05/warning grow@04-04T15:10/warning resolve@04-04T18:25/warning",
	}
	for i, id := range ids {
		if got := updates(m[id]); got != want[i] {
			t.Errorf("event %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
}

// An event is worth no more than its members' rules say: a whole
// country's traffic gone for an hour is impact 1, critical, but if its
// only rule is a warning the event pages as a warning; a second member
// at critical lifts the cap.
func TestEventSeverityCappedByItsRules(t *testing.T) {
	c := correlate.New(correlate.Config{Map: testMap(), GroupWait: -1})
	a := alert(alerting.Firing, "traffic_drop", "traffic_bytes", "country:GB", t0, t0.Add(5*time.Minute), -100)
	a.Severity = "warning"
	c.Add(a)
	var got []string
	for m := 5; m <= 60; m += 5 {
		at := t0.Add(time.Duration(m) * time.Minute)
		if m == 45 {
			c.Add(alert(alerting.Firing, "prefix_withdrawal", "bgp_announced_v4", "country:GB", t0.Add(40*time.Minute), at, -100))
		}
		for _, ev := range c.Flush(at) {
			got = append(got, ev.Update+"@"+at.Format("15:04")+"/"+ev.Severity)
		}
	}
	want := "open@10:05/warning grow@10:45/critical"
	if strings.Join(got, " ") != want {
		t.Fatalf("notifications %v, want %s", got, want)
	}
}
