package service

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/rules"
)

func TestMapWatcherReloads(t *testing.T) {
	file := filepath.Join(t.TempDir(), "map.yaml")
	write := func(body string, mtime time.Time) {
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(file, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write("asns:\n  20294: {country: UG, name: MTN}\n", t0)
	m, err := netmap.LoadFile(nil, file)
	if err != nil {
		t.Fatal(err)
	}
	w := newMapWatcher(file, quietLog())
	if w.check(false) {
		t.Fatal("reloaded an unchanged file")
	}
	write("asns:\n  20294: {country: UG, name: MTN Uganda}\nprefixes:\n  - {prefix: \"41.210.128.0/17\", origin: 20294}\n", t0.Add(time.Minute))
	if !w.check(false) {
		t.Fatal("a changed file was not loaded")
	}
	if m.Names[20294] != "MTN" {
		t.Fatal("the map changed before apply")
	}
	apply := func(have int64) int64 {
		n, v := w.since(have)
		if n != nil {
			m.Replace(n)
		}
		return v
	}
	v := apply(0)
	if v != 1 {
		t.Fatalf("version %d after the first reload", v)
	}
	if m.Name("asn:20294") != "MTN Uganda (AS20294)" || m.Origins.Len() != 1 {
		t.Fatalf("after apply: %q, %d origins", m.Name("asn:20294"), m.Origins.Len())
	}
	// A broken file is refused and the map kept.
	write("asns:\n  20294: {country: Uganda}\n", t0.Add(2*time.Minute))
	if w.check(false) {
		t.Fatal("a broken file was accepted")
	}
	if n, _ := w.since(v); n != nil {
		t.Fatal("a broken file made a new version")
	}
	if m.Name("asn:20294") != "MTN Uganda (AS20294)" {
		t.Fatalf("the broken file replaced the map: %q", m.Name("asn:20294"))
	}
	// SIGHUP forces a reload of an unchanged (now fixed) file.
	write("asns:\n  20294: {country: UG, name: MTN Uganda Ltd}\n", t0.Add(2*time.Minute))
	if !w.check(true) {
		t.Fatal("forced reload refused")
	}
	if v = apply(v); v != 2 {
		t.Fatalf("version %d after the forced reload", v)
	}
	if m.Names[20294] != "MTN Uganda Ltd" || m.Origins.Len() != 0 {
		t.Fatalf("after forced reload: %q, %d origins", m.Names[20294], m.Origins.Len())
	}
}

// switchingSource replays recs and swaps next into m as it hands out the
// first record at or after at: the reference replay of a mapping file
// reloaded mid-run.
type switchingSource struct {
	*replay.SliceSource
	at      int64
	m, next *netmap.Map
}

func (s *switchingSource) Next() (*ingest.Record, error) {
	r, err := s.SliceSource.Next()
	if r != nil && s.next != nil && r.Time >= s.at {
		s.m.Replace(s.next)
		s.next = nil
	}
	return r, err
}

// The mapping file, changed on disk while `run` works through the Uganda
// fixture (MTN Uganda renamed between the shutdown and its end), is
// reloaded into both stages: the alerts raised before the change name the
// network as the old file does, those after it as the new one does, each
// line exactly what a replay that switches maps at the same point gives.
func TestStagedReloadsMap(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs days of the Uganda fixture through both stages")
	}
	f := loadFixture(t)
	recs := loadStagedFixture(t).recs
	cut := time.Date(2021, 1, 15, 0, 0, 0, 0, time.UTC).UnixNano()
	const oldName, newName = "MTN Uganda", "MTN Uganda Limited"
	dir := t.TempDir()
	file := filepath.Join(dir, "map.yaml")
	writeMap := func(m *netmap.Map) {
		var b bytes.Buffer
		if err := netmap.Write(&b, m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeMap(f.m)
	renamed, err := netmap.LoadFile(nil, file)
	if err != nil {
		t.Fatal(err)
	}
	if renamed.Names[20294] != oldName {
		t.Fatalf("the fixture names AS20294 %q", renamed.Names[20294])
	}
	renamed.Names[20294] = newName

	// The reference: one pipeline whose map is switched at the cut.
	m, err := netmap.LoadFile(nil, file)
	if err != nil {
		t.Fatal(err)
	}
	want := referenceLines(t, f, f.set, m, recs, func(_ *pipeline.Pipeline, src *replay.SliceSource) replay.Source {
		return &switchingSource{SliceSource: src, at: cut, m: m, next: renamed}
	})
	// What the test stands on: lines before the cut name the old network,
	// lines after it the new one, and none after it the old.
	before, after := map[string]string{}, 0
	for k, l := range want {
		var ev struct{ At time.Time }
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.At.UnixNano() < cut {
			before[k] = l
			continue
		}
		if strings.Contains(l, `"`+oldName+`"`) || strings.Contains(l, oldName+" (AS20294)") {
			t.Fatalf("the reference names the old network after the cut: %s", l)
		}
		if strings.Contains(l, newName) {
			after++
		}
	}
	if after == 0 || !slices.ContainsFunc(slices.Collect(maps.Values(before)), func(l string) bool { return strings.Contains(l, oldName+" (AS20294)") }) {
		t.Fatalf("the reference has %d lines naming %q after the cut and none naming %q before it", after, newName, oldName)
	}

	liveAcrossACut(t, f, recs, cut, dir, before, want, func(cfg *Config) Options {
		cfg.Map = file
		return Options{Rules: f.set}
	}, func(st *Staged) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		st.WatchMap(ctx, 50*time.Millisecond)
		writeMap(renamed)
		waitFor(t, "both stages to take the new map", waitLong, func() bool {
			return st.mapApplied[mapStageOne].Load() == 1 && st.mapApplied[mapStageTwo].Load() == 1
		})
	})
}

// referenceLines replays a copy of recs through one pipeline of set and
// m, the source wrapped by wrap (which makes the change mid-run), and
// returns its lines by delivery key.
func referenceLines(t *testing.T, f *fixture, set *rules.Set, m *netmap.Map, recs []*ingest.Record,
	wrap func(*pipeline.Pipeline, *replay.SliceSource) replay.Source) map[string]string {
	t.Helper()
	var out bytes.Buffer
	sink := alerting.NewJSONL("replay", &out)
	send := func(ev *alerting.Event) { _ = sink.Send(context.Background(), ev) }
	p, err := pipeline.New(pipeline.Config{Rules: set, Map: m, LocalASNs: f.local, Logger: quietLog(), Events: send}, send)
	if err != nil {
		t.Fatal(err)
	}
	cp := make([]*ingest.Record, len(recs))
	for i, r := range recs {
		c := *r
		cp[i] = &c
	}
	if err := replay.Run(p, []replay.Source{wrap(p, replay.NewSliceSource("fixture", cp))}, nil); err != nil {
		t.Fatal(err)
	}
	want, err := byDeliveryKey(lines(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// liveAcrossACut runs `run --stage both` on kfake through recs: those
// before cut produced, then, once the lines of before are out, change
// makes its change (a file reloaded) and the rest are produced; every line
// delivered must be one of want, and all of them. setup gives the config
// what the test needs, and the options to start with.
func liveAcrossACut(t *testing.T, f *fixture, recs []*ingest.Record, cut int64, dir string, before, want map[string]string,
	setup func(*Config) Options, change func(*Staged)) {
	t.Helper()
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	var first, rest []*ingest.Record
	for _, r := range recs {
		if r.Time < cut {
			first = append(first, r)
		} else {
			rest = append(rest, r)
		}
	}
	produceStreams(t, addr, f.topics, first)
	cfg := stagedConfig(childSpec{Broker: addr, Dir: dir, Stage: StageBoth, Topics: f.topics})
	cfg.LocalASNs = f.local
	// The records after the cut are produced a topic at a time, seconds
	// after the others: no partition may count as idle meanwhile, or the
	// flows would close buckets without BGP (a feed-health alert, as
	// for a feed that really went quiet). Every line waited for closes
	// on data, none on idleness.
	cfg.Kafka.IdleAfter = time.Hour
	_, st, stop := startStaged(t, cfg, setup(cfg))
	defer stop()
	alerts := filepath.Join(dir, "alerts.jsonl")
	waitLines(t, alerts, before)
	change(st)
	produceStreams(t, addr, f.topics, rest)
	waitLines(t, alerts, want)
	stop()
	got, err := byDeliveryKey(readLines(t, alerts))
	if err != nil {
		t.Fatal(err)
	}
	sameByKey(t, want, got)
}
