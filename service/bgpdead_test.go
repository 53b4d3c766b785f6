package service

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
)

// BGP records are held until their bucket closes and decoded only then; one
// that does not decode still reaches the dead-letter topic with its reason,
// source position and original headers, and counts in the decode-error
// metric, like a bad record of any other stream, on the routing table
// that stage one keeps.
func TestStagedDeadLettersBGP(t *testing.T) {
	f := loadFixture(t)
	var bgp Topic
	var good []*ingest.Record
	for _, tp := range f.topics {
		if tp.Stream == "bgp" {
			bgp = tp
		}
	}
	for _, r := range f.recs {
		if r.Stream == "bgp" && len(good) < 3000 {
			good = append(good, r)
		}
	}
	if bgp.Name == "" || len(good) < 3000 {
		t.Fatalf("the fixture renders no BGP topic (%+v, %d records)", f.topics, len(good))
	}
	if bgp.Format != "rislive" {
		t.Fatalf("BGP format %s; the bad records below are RIS Live", bgp.Format)
	}
	c := startBroker(t, 0, "", bgp.Name, "dead")
	defer c.Close()
	addr := c.ListenAddrs()[0]
	bad := []struct {
		value, reason string
	}{
		{`{`, "json"},
		{`{"type":"ris_error","data":"\"rate limited\""}`, "ris_error"},
		{`{"type":"ris_message"}`, "missing_field"},
		{`{"type":"ris_message","data":{"peer":"not an address","peer_asn":"3333"}}`, "peer"},
	}
	var recs []*ingest.Record
	for i, r := range good {
		recs = append(recs, r)
		if i%500 == 100 && i/500 < len(bad) {
			recs = append(recs, &ingest.Record{Value: []byte(bad[i/500].value), Time: r.Time})
		}
	}
	produce(t, addr, bgp.Name, recs)
	// One more bad record, with a header of its own that its dead letter
	// must keep.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: bgp.Name, Partition: 1, Value: []byte(`{`),
		Timestamp: time.Unix(0, good[2000].Time), Headers: []kgo.RecordHeader{{Key: "collector", Value: []byte("rrc00")}}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	nBad := len(bad) + 1

	dir := t.TempDir()
	cfg := testConfig(addr, dir, bgp)
	cfg.Kafka.DeadLetterTopic = "dead"
	cfg.Kafka.InternalPartitions = 2
	base, st, stop := startStaged(t, mustValidate(t, cfg), Options{Rules: f.set, Map: f.m})
	defer stop()
	decodeErrors := func() int64 {
		var n int64
		for _, reason := range []string{"json", "ris_error", "missing_field", "peer"} {
			v, _ := strconv.ParseInt(metricLine(t, base, `outagewatch_decode_errors_total{reason="`+reason+`",topic="`+bgp.Name+`"}`), 10, 64)
			n += v
		}
		return n
	}
	waitFor(t, "every record consumed and every bad one applied", waitLong, func() bool {
		n, _ := strconv.Atoi(metricLine(t, base, `outagewatch_records_total{topic="`+bgp.Name+`"}`))
		return n >= len(recs)+1 && decodeErrors() >= int64(nBad)
	})
	if err := st.Checkpoint(context.Background()); err != nil { // writes the dead letters first
		t.Fatal(err)
	}
	_, body := get(t, base+"/metrics")
	stop()

	want := map[string]int{"json": 2, "ris_error": 1, "missing_field": 1, "peer": 1}
	for reason, k := range want {
		for _, line := range []string{
			`outagewatch_decode_errors_total{reason="` + reason + `",topic="` + bgp.Name + `"} ` + itoa(k),
			`outagewatch_dead_letters_total{reason="` + reason + `",topic="` + bgp.Name + `"} ` + itoa(k),
		} {
			if !strings.Contains(body, line) {
				t.Errorf("metrics lack %q", line)
			}
		}
	}

	dl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("dead"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	got := map[string]int{}
	withHeader := 0
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for n := 0; n < nBad; {
		fs := dl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("dead letters: got %d of %d", n, nBad)
		}
		fs.EachRecord(func(kr *kgo.Record) {
			n++
			hs := map[string]string{}
			for _, h := range kr.Headers {
				hs[h.Key] = string(h.Value)
			}
			got[hs[kafkaio.HeaderReason]]++
			if hs[kafkaio.HeaderTopic] != bgp.Name || hs[kafkaio.HeaderOffset] == "" || hs[kafkaio.HeaderPartition] == "" || hs[kafkaio.HeaderError] == "" {
				t.Errorf("dead letter headers %v", hs)
			}
			if hs["collector"] == "rrc00" {
				withHeader++
				if string(kr.Value) != `{` || !kr.Timestamp.Equal(time.Unix(0, good[2000].Time)) || hs[kafkaio.HeaderPartition] != "1" {
					t.Errorf("dead letter of the record with a header: %q at %v, headers %v", kr.Value, kr.Timestamp, hs)
				}
			}
		})
	}
	for reason, k := range want {
		if got[reason] != k {
			t.Errorf("dead letters with reason %s = %d, want %d", reason, got[reason], k)
		}
	}
	if withHeader != 1 {
		t.Errorf("%d dead letters kept the original header, want 1", withHeader)
	}
}
