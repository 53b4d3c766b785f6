package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/outagewatch/outagewatch/ingest/recordfile"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
)

// recordUganda writes what `outagewatch record` would have written had the
// Uganda fixture's streams run through Kafka, the mapping file an operator
// would keep beside it, and labels with the fixture's expectations, and
// returns their paths.
func recordUganda(t *testing.T) (rec, mapFile, labels string) {
	t.Helper()
	spec, err := scenario.Load("../../fixtures/uganda-2021-01-13.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := replay.Collect(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec = filepath.Join(dir, "uganda.owrec.gz")
	f, err := os.Create(rec)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	bw := bufio.NewWriterSize(zw, 1<<20)
	for i, r := range recs {
		r.Topic, r.Offset = r.Stream, int64(i)
		if err := recordfile.Write(bw, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	m := spec.Map()
	type asn struct {
		Country string `yaml:"country"`
		Name    string `yaml:"name"`
	}
	type pfx struct {
		Prefix string `yaml:"prefix"`
		Origin uint32 `yaml:"origin,omitempty"`
		Region string `yaml:"region,omitempty"`
	}
	mf := struct {
		ASNs     map[uint32]asn `yaml:"asns"`
		Prefixes []pfx          `yaml:"prefixes"`
	}{ASNs: map[uint32]asn{}}
	for a, cc := range m.Countries {
		mf.ASNs[a] = asn{cc, m.Names[a]}
	}
	m.Origins.Walk(func(p netip.Prefix, v uint32) bool {
		mf.Prefixes = append(mf.Prefixes, pfx{Prefix: p.String(), Origin: v})
		return true
	})
	m.Regions.Walk(func(p netip.Prefix, v string) bool {
		mf.Prefixes = append(mf.Prefixes, pfx{Prefix: p.String(), Region: v})
		return true
	})
	b, err := yaml.Marshal(&mf)
	if err != nil {
		t.Fatal(err)
	}
	mapFile = filepath.Join(dir, "map.yaml")
	os.WriteFile(mapFile, b, 0o644)

	lb, err := yaml.Marshal(map[string]any{"name": "uganda-recorded", "inputs": []string{"uganda.owrec.gz"},
		"expect": spec.Expect, "allow": spec.Allow})
	if err != nil {
		t.Fatal(err)
	}
	labels = filepath.Join(dir, "labels.yaml")
	os.WriteFile(labels, lb, 0o644)
	return rec, mapFile, labels
}

// A recording of the Uganda shutdown, scored against labels with the
// fixture's expectations, passes as the fixture does; without the DNS rules
// it misses the three DNS expectations, and the diff lists exactly the DNS
// alerts as the ones only the shipped rules raised.
func TestScoreLabelsOnARecordingComparesRuleSets(t *testing.T) {
	if testing.Short() {
		t.Skip("replays four weeks of the Uganda fixture twice")
	}
	captureLog(t)
	_, mapFile, labels := recordUganda(t)
	noDNS := t.TempDir()
	for _, f := range []string{"10-traffic.yaml", "30-bgp.yaml", "40-quality.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../rules/default", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(noDNS, f), b, 0o644)
	}
	out, _, err := run(t, "score", "--json", "--labels", labels, "--map", mapFile, "--local-asn", "64500",
		"--rules", "../../rules/default", "--rules-b", noDNS)
	if err == nil || exitCode(err) != 2 {
		t.Fatalf("rule set B misses the DNS alerts, yet: %v", err)
	}
	var s scoredLabels
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	a, b := s.Results[0], s.Results[1]
	if !a.Pass || len(a.Detected) != 9 || a.Rules != "../../rules/default" {
		t.Fatalf("shipped rules on the recording: pass %v, %d detected, missed %+v, false %+v", a.Pass, len(a.Detected), a.Missed, a.False)
	}
	var missed []string
	for _, m := range b.Missed {
		missed = append(missed, m.Entity)
	}
	slices.Sort(missed)
	if b.Pass || len(b.Detected) != 6 || strings.Join(missed, " ") != "asn:20294 asn:36977 country:UG" || len(b.False) != 0 {
		t.Fatalf("without DNS rules: pass %v, %d detected, missed %v, %d false", b.Pass, len(b.Detected), missed, len(b.False))
	}
	d := s.Diff
	var only []string
	for _, ev := range d.OnlyA {
		only = append(only, ev.Signal)
	}
	if len(d.OnlyB) != 0 || len(d.Shifts) != 0 || len(only) == 0 || slices.ContainsFunc(only, func(s string) bool { return !strings.HasPrefix(s, "dns_") }) {
		t.Fatalf("diff: only A %v, only B %d, shifts %d", only, len(d.OnlyB), len(d.Shifts))
	}
	// The shipped rules raise 21 firing alerts on the recording; four are
	// DNS query drops (UG, its two main networks, and a smaller one that
	// the labels allow), the rest the same under both sets.
	if len(only) != 4 || d.Same != 17 {
		t.Fatalf("diff: %d the same, only with the shipped rules %v", d.Same, only)
	}
}

// score -c judges a recording as the live service of that config would:
// its rules (here without DNS), its mapping file (named relative to the
// config) and its own AS numbers, with no flag repeating them; a flag
// given wins over the config.
func TestScoreLabelsWithServiceConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("replays four weeks of the Uganda fixture twice")
	}
	captureLog(t)
	_, mapFile, labels := recordUganda(t)
	dir := filepath.Dir(mapFile)
	os.Mkdir(filepath.Join(dir, "rules"), 0o755)
	for _, f := range []string{"10-traffic.yaml", "30-bgp.yaml", "40-quality.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../rules/default", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "rules", f), b, 0o644)
	}
	cfg := filepath.Join(dir, "outagewatch.yaml")
	os.WriteFile(cfg, []byte(`kafka:
  brokers: [localhost:9092]
  topics:
    - {name: flows, stream: flows, format: goflow2-pb}
data_dir: `+t.TempDir()+`
rules: rules
map: map.yaml
local_asns: [64500]
`), 0o644)
	detected := func(args ...string) (pass bool, n int, missed string) {
		t.Helper()
		rs, err := scoreJSON(t, append([]string{"--labels", labels, "-c", cfg}, args...)...)
		if err != nil && exitCode(err) != 2 {
			t.Fatal(err)
		}
		r := rs[0]
		var m []string
		for _, w := range r.Missed {
			m = append(m, w.Entity)
		}
		slices.Sort(m)
		return r.Pass, len(r.Detected), strings.Join(m, " ")
	}
	if pass, n, missed := detected(); pass || n != 6 || missed != "asn:20294 asn:36977 country:UG" {
		t.Fatalf("the config's rules, without DNS: pass %v, %d detected, missed %s", pass, n, missed)
	}
	if pass, n, missed := detected("--rules", "../../rules/default"); !pass || n != 9 || missed != "" {
		t.Fatalf("--rules over the config's: pass %v, %d detected, missed %s", pass, n, missed)
	}
}

// The config's silences mute a replay -c as they would have muted the
// live service: a silence matches by the alert's event time, so a
// maintenance window set for the Uganda shutdown mutes that network's
// alerts in a replay of it, and no other.
func TestReplayWithServiceConfigSilences(t *testing.T) {
	captureLog(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "outagewatch.yaml")
	os.WriteFile(cfg, []byte(`kafka:
  brokers: [localhost:9092]
  topics:
    - {name: flows, stream: flows, format: goflow2-pb}
data_dir: `+dir+`
silences:
  - {entity: "asn:20294", start: 2021-01-13T00:00:00Z, end: 2021-01-14T00:00:00Z, author: noc, comment: maintenance}
`), 0o644)
	out, _, err := run(t, "replay", "-c", cfg, "uganda-2021-01-13")
	if err != nil {
		t.Fatal(err)
	}
	muted := map[string]int{}
	for line := range strings.Lines(out) {
		var ev struct{ Kind, Entity, Muted string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if ev.Kind == "alert" {
			muted[ev.Entity+" "+ev.Muted]++
		}
	}
	for k, n := range muted {
		if strings.HasPrefix(k, "asn:20294 ") != strings.HasSuffix(k, " silence config-1") {
			t.Errorf("%d alerts of %q", n, k)
		}
	}
	// Five alerts fire for AS20294 on the 13th and resolve on the 18th,
	// past the window: an alert muted when it fired stays muted.
	if muted["asn:20294 silence config-1"] != 10 {
		t.Fatalf("muted alerts of asn:20294: %v", muted)
	}
}
