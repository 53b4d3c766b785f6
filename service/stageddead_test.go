package service

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/obs"
)

// Bad records on every input topic of the staged path (flows, DNS, and
// BGP, which is decoded only when its bucket closes) are all dead-lettered
// with their reason, and counted per topic and reason in /metrics; every
// record read is counted, and /metrics has the Go and process series too.
func TestStagedDeadLetters(t *testing.T) {
	f := loadFixture(t)
	if testing.Short() {
		t.Skip("runs six hours of the fixture through both stages")
	}
	const perTopic = 27
	from, to := raceFrom, raceFrom+int64(6*time.Hour)
	// BGP reasons are those of TestStagedDeadLettersBGP; the others are
	// what their decoder says.
	bgpBad := []struct{ value, reason string }{
		{`{`, "json"},
		{`{"type":"ris_error","data":"\"rate limited\""}`, "ris_error"},
		{`{"type":"ris_message"}`, "missing_field"},
		{`{"type":"ris_message","data":{"peer":"not an address","peer_asn":"3333"}}`, "peer"},
	}
	otherBad := [][]byte{{0xff, 0xff, 0xff}, []byte("not a record"), {0x08}}
	want := map[string]int{}  // topic/reason → dead letters
	total := map[string]int{} // topic → records
	var recs []*ingest.Record
	for _, tp := range f.topics {
		var in []*ingest.Record
		for _, r := range f.recs {
			if r.Stream == tp.Name && r.Time >= from && r.Time < to {
				in = append(in, r)
			}
		}
		// Bad records in the first two thirds: the last buckets stay open
		// (lateness) and BGP's are decoded only when theirs close.
		step := len(in) * 2 / 3 / perTopic
		if step == 0 {
			t.Fatalf("%s: %d records", tp.Name, len(in))
		}
		dec, err := ingest.NewDecoder(tp.Stream, tp.Format, &ingest.Env{Shared: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, r := range in {
			recs = append(recs, r)
			total[tp.Name]++
			if i%step != step/2 || n == perTopic {
				continue
			}
			var v []byte
			var reason string
			if tp.Stream == "bgp" {
				b := bgpBad[n%len(bgpBad)]
				v, reason = []byte(b.value), b.reason
			} else {
				v = otherBad[n%len(otherBad)]
				derr := dec.Decode(v, obs.SinkFunc(func(*obs.Observation) {}))
				if derr == nil {
					t.Fatalf("%s: %q decodes", tp.Name, v)
				}
				reason = ingest.Reason(derr)
			}
			n++
			want[tp.Name+"/"+reason]++
			total[tp.Name]++
			recs = append(recs, &ingest.Record{Stream: r.Stream, Value: v, Time: r.Time})
		}
		if n != perTopic {
			t.Fatalf("%s: %d bad records, want %d", tp.Name, n, perTopic)
		}
	}
	nBad := perTopic * len(f.topics)

	c := startBroker(t, 0, "", f.topicNames("dead")...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceStreams(t, addr, f.topics, recs)
	dir := t.TempDir()
	cfg := stagedConfig(childSpec{Broker: addr, Dir: dir, Stage: StageBoth, Topics: f.topics})
	cfg.Kafka.DeadLetterTopic = "dead"
	cfg.LocalASNs = f.local
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStaged(cfg, Options{Rules: f.set, Map: f.m, Logger: quietLog(), Listener: ln}, StageBoth)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	dl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("dead"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	got := map[string]int{}
	pctx, pcancel := context.WithTimeout(ctx, waitLong)
	defer pcancel()
	for n := 0; n < nBad; {
		fs := dl.PollFetches(pctx)
		if pctx.Err() != nil {
			t.Fatalf("dead letters: got %d of %d: %v", n, nBad, got)
		}
		fs.EachRecord(func(kr *kgo.Record) {
			n++
			hs := map[string]string{}
			for _, h := range kr.Headers {
				hs[h.Key] = string(h.Value)
			}
			got[hs[kafkaio.HeaderTopic]+"/"+hs[kafkaio.HeaderReason]]++
			if hs[kafkaio.HeaderOffset] == "" || hs[kafkaio.HeaderPartition] == "" || hs[kafkaio.HeaderError] == "" {
				t.Errorf("dead letter headers %v", hs)
			}
		})
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("dead letters %s = %d, want %d", k, got[k], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("dead letters by topic and reason %v, want %v", got, want)
	}
	base := "http://" + ln.Addr().String()
	var body string
	waitFor(t, "every record counted, no partition lagging", waitLong, func() bool {
		_, body = get(t, base+"/metrics")
		for topic, n := range total {
			if !strings.Contains(body, `outagewatch_records_total{topic="`+topic+`"} `+strconv.Itoa(n)+"\n") {
				return false
			}
			for p := range testPartitions {
				if !strings.Contains(body, `outagewatch_consumer_lag{partition="`+strconv.Itoa(p)+`",topic="`+topic+`"} 0`+"\n") {
					return false
				}
			}
		}
		return true
	})
	for k, n := range want {
		topic, reason, _ := strings.Cut(k, "/")
		for _, line := range []string{
			`outagewatch_decode_errors_total{reason="` + reason + `",topic="` + topic + `"} ` + strconv.Itoa(n) + "\n",
			`outagewatch_dead_letters_total{reason="` + reason + `",topic="` + topic + `"} ` + strconv.Itoa(n) + "\n",
		} {
			if !strings.Contains(body, line) {
				t.Errorf("metrics lack %q", line)
			}
		}
	}
	for _, series := range []string{"go_goroutines ", "process_resident_memory_bytes ",
		"outagewatch_watermark_timestamp_seconds ", "outagewatch_watermark_age_seconds ", "outagewatch_buckets_closed_total ",
		"outagewatch_alerts_sent_total{sink=\"alerts\"} ", "outagewatch_offset_commits_total ", "outagewatch_checkpoints_total "} {
		if !strings.Contains(body, "\n"+series) {
			t.Errorf("metrics lack %s", series)
		}
	}
}
