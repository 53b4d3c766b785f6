package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/score"
)

type scoredLabels struct {
	Results []score.Result `json:"results"`
	Diff    *score.Diff    `json:"diff"`
}

func scoreJSON(t *testing.T, args ...string) ([]score.Result, error) {
	t.Helper()
	out, _, err := run(t, append([]string{"score", "--json"}, args...)...)
	var rs []score.Result
	if jerr := json.Unmarshal([]byte(out), &rs); jerr != nil {
		t.Fatalf("output %q: %v (run: %v)", out, jerr, err)
	}
	return rs, err
}

func detections(r score.Result) string {
	var b strings.Builder
	for _, d := range r.Detected {
		res := "never"
		if d.Resolved != nil {
			res = d.Resolved.Format(time.RFC3339)
		}
		b.WriteString(d.Signal + " " + d.Entity + " fired " + d.FiredAt.Format(time.RFC3339) + " resolved " + res + "\n")
	}
	return b.String()
}

// The IODA example: an export of IODA's three signals, declared in the
// example rules with IODA's thresholds, replays to exactly the alerts its
// labels expect, each at the cadence of its source (active probing every
// 10 minutes), with no feed-health alert for the 10-minute feed. BGP's
// 42 % drop is past the rule's threshold but not a collapse, so it fires
// on its second bucket (the rule's for: two measurements); the
// telescope's and active probing's 96 % collapses fire on their first.
func TestIODAExampleScoresAgainstItsLabels(t *testing.T) {
	captureLog(t)
	rs, err := scoreJSON(t, "--rules", "../../examples/ioda/ioda.yaml", "--labels", "../../examples/ioda/labels.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	want := "bgp_visible_slash24 country:UG fired 2021-01-13T17:10:00Z resolved 2021-01-18T10:15:00Z\n" +
		"telescope_sources country:UG fired 2021-01-13T17:05:00Z resolved 2021-01-18T10:30:00Z\n" +
		"active_probing_slash24 country:UG fired 2021-01-13T17:10:00Z resolved 2021-01-18T10:30:00Z\n"
	if !r.Pass || r.Events != 6 || detections(r) != want {
		t.Fatalf("pass %v, %d events, detections\n%s\nwant\n%s", r.Pass, r.Events, detections(r), want)
	}
}

// The Radar example: a normalised HTTP-requests export every 15 minutes,
// judged week over week at its own cadence.
func TestRadarExampleScoresAgainstItsLabels(t *testing.T) {
	captureLog(t)
	rs, err := scoreJSON(t, "--rules", "../../examples/radar/radar.yaml", "--labels", "../../examples/radar/labels.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	want := "radar_http_requests country:PT fired 2025-04-28T11:15:00Z resolved 2025-04-29T03:00:00Z\n" +
		"radar_http_requests country:ES fired 2025-04-28T11:15:00Z resolved 2025-04-29T03:00:00Z\n"
	if !r.Pass || r.Events != 4 || detections(r) != want {
		t.Fatalf("pass %v, %d events, detections\n%s\nwant\n%s", r.Pass, r.Events, detections(r), want)
	}
}

// Two rule sets on the same export: the second wants the drop to last 40
// minutes, a collapse too (critical 0: by default a collapse fires on its
// first bucket), so it fires half an hour later, and it has no telescope
// rule.
func TestScoreComparesTwoRuleSets(t *testing.T) {
	captureLog(t)
	b, err := os.ReadFile("../../examples/ioda/ioda.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	doc = strings.Replace(doc, "      threshold: 0.2           # under 80 % of the median\n      for: 20m\n",
		"      threshold: 0.2           # under 80 % of the median\n      for: 40m\n      critical: 0\n", 1)
	doc = doc[:strings.Index(doc, "  - name: ioda-telescope")]
	rulesB := filepath.Join(t.TempDir(), "slower.yaml")
	os.WriteFile(rulesB, []byte(doc), 0o644)
	out, _, err := run(t, "score", "--json", "--rules", "../../examples/ioda/ioda.yaml", "--rules-b", rulesB,
		"--labels", "../../examples/ioda/labels.yaml")
	if err == nil || exitCode(err) != 2 {
		t.Fatalf("rule set B misses the telescope and the 10-minute detection, yet: %v", err)
	}
	var s scoredLabels
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Results) != 2 || !s.Results[0].Pass || s.Results[1].Pass || len(s.Results[1].Missed) != 2 {
		t.Fatalf("results %+v", s.Results)
	}
	d := s.Diff
	if d == nil || d.Same != 1 || len(d.OnlyA) != 1 || d.OnlyA[0].Signal != "telescope_sources" || len(d.OnlyB) != 0 ||
		len(d.Shifts) != 1 || d.Shifts[0].Signal != "active_probing_slash24" || d.Shifts[0].AtB.Sub(d.Shifts[0].AtA) != 30*time.Minute {
		t.Fatalf("diff %+v", d)
	}
}

func TestLabelsErrorsCarryFileAndLine(t *testing.T) {
	f := filepath.Join(t.TempDir(), "l.yaml")
	os.WriteFile(f, []byte("name: x\nexpect:\n  - {detector: traffic_drop, entity: \"country:UG\", onset: 2021-01-13T17:00:00Z, within: 15m}\n  - {detector: traffic_drop, onset: 2021-01-13T17:00:00Z}\n"), 0o644)
	_, _, err := run(t, "score", "--labels", f, "x.csv")
	if err == nil || err.Error() != f+":4: expect[1]: missing entity, within" {
		t.Fatalf("err %v", err)
	}
	os.WriteFile(f, []byte("name: x\nexpekt: []\n"), 0o644)
	if _, _, err := run(t, "score", "--labels", f, "x.csv"); err == nil || !strings.HasPrefix(err.Error(), f+`:2: unknown key "expekt"`) {
		t.Fatalf("err %v", err)
	}
}

// The Atlas example: one probe of three towards k-root degrades; its own
// series (probe:6002>193.0.14.0/24) alerts, and no other.
func TestAtlasExampleScoresAgainstItsLabels(t *testing.T) {
	captureLog(t)
	rs, err := scoreJSON(t, "--rules", "../../examples/atlas/atlas.yaml", "--labels", "../../examples/atlas/labels.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	want := "latency_p50 probe:6002>193.0.14.0/24 fired 2024-03-07T18:15:00Z resolved 2024-03-07T20:30:00Z\n"
	if !r.Pass || r.Events != 2 || detections(r) != want {
		t.Fatalf("pass %v, %d events, detections\n%s\nwant\n%s", r.Pass, r.Events, detections(r), want)
	}
}
