package service

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/rules"
)

// rulesSwitchingSource replays recs and binds next into p as it hands
// out the first record at or after at: the reference replay of rules
// reloaded mid-run.
// wm is the pipeline's watermark when it bound next: how far a live
// stage two must have judged before its reload is the same.
type rulesSwitchingSource struct {
	*replay.SliceSource
	at   int64
	p    *pipeline.Pipeline
	next *rules.Set
	err  error
	wm   int64
}

func (s *rulesSwitchingSource) Next() (*ingest.Record, error) {
	r, err := s.SliceSource.Next()
	if r != nil && s.next != nil && r.Time >= s.at {
		s.wm = s.p.Stats().Watermark
		s.err = s.p.SetRules(s.next)
		s.next = nil
	}
	return r, err
}

// The rules directory loses its DNS rules while `run` works through the
// Uganda fixture, in the middle of the shutdown, and is reloaded: the DNS
// alerts firing then resolve as rule_removed at the next bucket, the
// other rules judge on where they were, and every line is exactly what a
// replay that binds the new rules at the same point gives. A rules
// directory that no longer loads is refused and the rules in force stay.
func TestStagedReloadsRules(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs days of the Uganda fixture through both stages")
	}
	f := loadFixture(t)
	recs := loadStagedFixture(t).recs
	cut := time.Date(2021, 1, 15, 0, 0, 0, 0, time.UTC).UnixNano()
	dir := t.TempDir()
	rulesDir := filepath.Join(dir, "rules")
	if _, err := rules.WriteDefault(rulesDir, false); err != nil {
		t.Fatal(err)
	}
	full, err := rules.LoadAll(rulesDir)
	if err != nil {
		t.Fatal(err)
	}
	dns, off := filepath.Join(rulesDir, "20-dns.yaml"), filepath.Join(dir, "20-dns.yaml.off")
	if err := os.Rename(dns, off); err != nil {
		t.Fatal(err)
	}
	noDNS, err := rules.LoadAll(rulesDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(off, dns); err != nil {
		t.Fatal(err)
	}

	var src *rulesSwitchingSource
	want := referenceLines(t, f, full, f.m, recs, func(p *pipeline.Pipeline, s *replay.SliceSource) replay.Source {
		src = &rulesSwitchingSource{SliceSource: s, at: cut, p: p, next: noDNS}
		return src
	})
	if src.err != nil {
		t.Fatal(src.err)
	}
	// What the test stands on: the DNS alerts firing at the cut resolve
	// as rule_removed, and no DNS rule raises anything after it.
	before, retired := map[string]string{}, []string{}
	for k, l := range want {
		var ev alerting.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.At.UnixNano() < cut:
			before[k] = l
		case ev.Reason == detectors.ReasonRuleRemoved && strings.Contains(ev.Rule, "dns"):
			retired = append(retired, ev.Entity)
		case strings.Contains(ev.Rule, "dns"):
			t.Fatalf("the reference judges DNS after the cut: %s", l)
		}
	}
	slices.Sort(retired)
	if !slices.Equal(retired, []string{"asn:20294", "asn:21491", "asn:36977", "country:UG"}) {
		t.Fatalf("the reference retires the DNS alerts of %v at the cut, want Uganda's and the three networks' whose queries fell", retired)
	}

	liveAcrossACut(t, f, recs, cut, dir, before, want, func(cfg *Config) Options {
		cfg.Rules = rulesDir
		return Options{Map: f.m}
	}, func(st *Staged) {
		// A directory that does not load is refused, and nothing changes.
		broken := filepath.Join(rulesDir, "99-broken.yaml")
		if err := os.WriteFile(broken, []byte("rules:\n  - name: x\n    detector: no_such_detector\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := st.ReloadRules(); err == nil || !strings.Contains(err.Error(), "99-broken.yaml:3") {
			t.Fatalf("a broken rules file reloaded: %v", err)
		}
		if err := os.Remove(broken); err != nil {
			t.Fatal(err)
		}
		// The lines before the cut are out, but stage two may still be
		// judging buckets before it that raise nothing: the reload must
		// come where the reference's did, once every bucket the records
		// before the cut close is judged. The reference's watermark is its
		// last record's time; a live partition's, the end of the last
		// bucket it closed.
		closed := src.wm - src.wm%int64(5*time.Minute)
		waitFor(t, "stage two to judge up to the cut", waitLong, func() bool {
			n := 0
			for _, p := range st.status.held() {
				if wm := p.Stats().Watermark; wm > 0 {
					if wm < closed {
						return false
					}
					n++
				}
			}
			return n > 0
		})
		if err := os.Rename(dns, off); err != nil {
			t.Fatal(err)
		}
		if err := st.ReloadRules(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "stage two to bind the reloaded rules", waitLong, func() bool { return st.rulesApplied.Load() == 1 })
	})
}

// SIGHUP reloads the rules, as it does for Prometheus; the metrics say
// whether the last reload held.
func TestSIGHUPReloadsRules(t *testing.T) {
	dir := t.TempDir()
	rulesDir := filepath.Join(dir, "rules")
	if _, err := rules.WriteDefault(rulesDir, false); err != nil {
		t.Fatal(err)
	}
	cfg := stagedConfig(childSpec{Broker: "127.0.0.1:9", Dir: dir, Stage: StageBoth, Topics: loadFixture(t).topics})
	cfg.Rules = rulesDir
	st, err := NewStaged(cfg, Options{Logger: quietLog()}, StageBoth)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st.WatchRules(ctx)
	before := st.rules()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rules reloaded", 10*time.Second, func() bool { return st.rulesVersion.Load() == 1 })
	if st.rules() == before || len(st.rules().Rules) != len(before.Rules) || testutil.ToFloat64(st.status.reloadOK) != 1 {
		t.Fatalf("after SIGHUP: %d rules (%d before), reload ok %v", len(st.rules().Rules), len(before.Rules), testutil.ToFloat64(st.status.reloadOK))
	}
	if err := os.WriteFile(filepath.Join(rulesDir, "10-traffic.yaml"), []byte("rules: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failed reload counted", 10*time.Second, func() bool { return testutil.ToFloat64(st.status.reloadOK) == 0 })
	if st.rulesVersion.Load() != 1 {
		t.Fatalf("a rules directory that does not load was taken: version %d", st.rulesVersion.Load())
	}
}
