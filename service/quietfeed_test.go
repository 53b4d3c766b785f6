package service

import (
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/ingest"
)

// metricValue is the value of an unlabelled series on a /metrics page.
func metricValue(page, name string) (float64, bool) {
	for l := range strings.SplitSeq(page, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			x, err := strconv.ParseFloat(v, 64)
			return x, err == nil
		}
	}
	return 0, false
}

// The BGP topic goes quiet a day before the Uganda shutdown while flows
// and DNS go on through it:
// once it has been silent for the idle time the staged watermark moves on
// without it, and the alerts and events delivered are exactly those of one
// replay of the same records, the BGP feed's silence among them.
func TestStagedQuietBGPFeed(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs six hours of the fixture through both stages")
	}
	f := loadFixture(t)
	from := raceFrom
	quiet := time.Date(2021, 1, 12, 12, 0, 0, 0, time.UTC).UnixNano()
	to := time.Date(2021, 1, 14, 6, 0, 0, 0, time.UTC).UnixNano()
	var recs []*ingest.Record
	for _, r := range f.recs {
		if r.Time < from || r.Time >= to || (r.Stream == "bgp" && r.Time >= quiet) {
			continue
		}
		recs = append(recs, r)
	}
	want, _, err := replayLines(f, recs)
	if err != nil {
		t.Fatal(err)
	}
	feed, other := 0, 0
	for _, l := range want {
		switch {
		case strings.Contains(l, `"rule":"feed-health"`) && strings.Contains(l, `"entity":"feed:bgp"`):
			feed++
		case !strings.Contains(l, `"rule":"feed-health"`):
			other++
		}
	}
	if feed != 1 || other == 0 {
		t.Fatalf("the replay has %d alerts of the BGP feed's silence (want 1) and %d others (want some)", feed, other)
	}
	t.Logf("replay: %d lines, %d of the outage", len(want), other)
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceStreams(t, addr, f.topics, recs)
	dir := t.TempDir()
	cfg := stagedConfig(childSpec{Broker: addr, Dir: dir, Stage: StageBoth, Topics: f.topics})
	cfg.LocalASNs = f.local
	_, stop := runStaged(t, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer stop()
	var got map[string]string
	deadline := time.Now().Add(waitLong)
	for {
		if got, err = byDeliveryKey(readLines(t, filepath.Join(dir, "alerts.jsonl"))); err != nil {
			t.Fatal(err)
		}
		n := 0
		for k, l := range want {
			if got[k] == l {
				n++
			}
		}
		if n == len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for k, l := range want {
		if got[k] != l {
			t.Errorf("missing: %.300s", l)
		}
	}
	for k, l := range got {
		if want[k] != l {
			t.Errorf("extra: %.300s", l)
		}
	}
}

// The BGP feed stops two hours into six but does not count as idle yet
// (an idle time longer than the test): the flow and DNS records after it
// wait for the routing table, and each input partition holds at most
// max_queued_records of them (plus one fetch batch in flight) instead of
// reading its whole backlog into memory.
func TestStagedLateFeedBoundsMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs six hours of the fixture through both stages")
	}
	f := loadFixture(t)
	from, to := raceFrom, raceFrom+int64(6*time.Hour)
	quiet := from + int64(2*time.Hour)
	var recs []*ingest.Record
	before := map[string]int{} // records of each input topic before the feed stops
	for _, r := range f.recs {
		if r.Time < from || r.Time >= to || (r.Stream == "bgp" && r.Time >= quiet) {
			continue
		}
		recs = append(recs, r)
		if r.Time < quiet {
			before[r.Stream]++
		}
	}
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceStreams(t, addr, f.topics, recs)
	cfg := stagedConfig(childSpec{Broker: addr, Dir: t.TempDir(), Stage: StageBoth, Topics: f.topics})
	cfg.LocalASNs = f.local
	cfg.Kafka.IdleAfter = time.Hour
	cfg.Kafka.MaxQueued = 200
	base, stop := runStaged(t, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer stop()
	const batch = 512 // fetchBatches' batchMax
	inputs := 2 * testPartitions
	perPart := cfg.Kafka.MaxQueued + batch - 1
	var page string
	waitFor(t, "every input partition's queue at its bound", waitLong, func() bool {
		_, page = get(t, base+"/metrics")
		q, _ := metricValue(page, "outagewatch_stage1_queued_records")
		if q > float64(inputs*perPart) {
			t.Fatalf("%v records queued, more than %d partitions × %d", q, inputs, perPart)
		}
		return q >= float64(inputs*cfg.Kafka.MaxQueued)
	})
	for topic, n := range before {
		if topic == "bgp" {
			continue
		}
		// Read: at most what the table let through, and the bound.
		limit := n + testPartitions*perPart
		for l := range strings.SplitSeq(page, "\n") {
			if v, ok := strings.CutPrefix(l, `outagewatch_records_total{topic="`+topic+`"} `); ok {
				if got, _ := strconv.Atoi(v); got > limit {
					t.Errorf("%s: %d records read, more than the %d before the feed stopped and the queue bounds", topic, got, limit)
				}
			}
		}
	}
}

// The same quiet BGP feed with two real processes, each running both
// stages: the alerts and events of one replay, none lost, none extra.
func TestStagedQuietBGPFeedTwoProcesses(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs days of the fixture through two processes")
	}
	f := loadFixture(t)
	quiet := time.Date(2021, 1, 12, 12, 0, 0, 0, time.UTC).UnixNano()
	to := time.Date(2021, 1, 14, 6, 0, 0, 0, time.UTC).UnixNano()
	var recs []*ingest.Record
	for _, r := range f.recs {
		if r.Time < raceFrom || r.Time >= to || (r.Stream == "bgp" && r.Time >= quiet) {
			continue
		}
		recs = append(recs, r)
	}
	want, _, err := replayLines(f, recs)
	if err != nil {
		t.Fatal(err)
	}
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceStreams(t, addr, f.topics, recs)
	r := &stagedRun{t: t, f: &stagedFixture{recs: recs, want: want}, addr: addr, topics: f.topics}
	cs := []*child{startChild(t, r.spec(0, StageBoth)), startChild(t, r.spec(1, StageBoth))}
	r.waitAll(cs)
	for _, c := range cs {
		c.stop(t)
	}
	r.check()
}
