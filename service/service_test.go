package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/pipeline"
)

// The live service gets exactly the alerts that replay gets from the same
// records, and counts every record and observation once.
func TestServiceMatchesReplay(t *testing.T) {
	f := loadFixture(t)
	if len(f.want) == 0 {
		t.Fatal("replay of the fixture raised no alert; the comparison would prove nothing")
	}
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceFixture(t, addr, f)

	dir := t.TempDir()
	r := startService(t, mustValidate(t, testConfig(addr, dir, f.topics...)), f)
	waitDone(t, r, f)
	st := r.svc.Pipeline().Stats()
	assertAPIAlerts(t, r, st)
	r.shutdown(t)

	assertSameAlerts(t, readLines(t, filepath.Join(dir, "alerts.jsonl")), f.want)
	if got, want := totalRecords(st), int64(len(f.recs)); got != want {
		t.Errorf("records = %d, want %d", got, want)
	}
	if st.Observations != f.stats.Observations || st.BucketsClosed != f.stats.BucketsClosed || st.Late != 0 {
		t.Errorf("observations %d buckets %d late %d; replay: %d %d %d", st.Observations, st.BucketsClosed, st.Late,
			f.stats.Observations, f.stats.BucketsClosed, f.stats.Late)
	}
	// The final checkpoint holds every partition's end offset.
	cp, err := ReadCheckpoint(dir)
	if err != nil || cp == nil {
		t.Fatalf("checkpoint: %v %v", cp, err)
	}
	var next int64
	for _, p := range cp.Partitions {
		next += p.Next
	}
	if next != int64(len(f.recs)) {
		t.Errorf("checkpointed offsets sum to %d, want %d", next, len(f.recs))
	}
}

// A crash (no final checkpoint, no flush) and a restart from the data
// directory: the alerts of both runs together are the uninterrupted run's,
// none twice, and no record is counted twice.
func TestServiceKillAndRestart(t *testing.T) {
	f := loadFixture(t)
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	produceFixture(t, addr, f)

	dir := t.TempDir()
	cfg := mustValidate(t, testConfig(addr, dir, f.topics...))
	cfg.CheckpointInterval = time.Hour // only the checkpoint this test asks for
	out := filepath.Join(dir, "alerts.jsonl")

	r := startService(t, cfg, f)
	waitFor(t, "a third of the records", waitLong, func() bool {
		return totalRecords(r.svc.Pipeline().Stats()) >= int64(len(f.recs)/3)
	})
	if err := r.svc.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	cp, err := ReadCheckpoint(dir)
	if err != nil || cp == nil {
		t.Fatalf("checkpoint: %v %v", cp, err)
	}
	// Kill once alerts are going out: they were raised after the
	// checkpoint, so the restart raises them again and the outbox must
	// not deliver them twice.
	waitFor(t, "the first alert", waitLong, func() bool { return len(readLines(t, out)) > 0 })
	r.kill(t)
	first := len(readLines(t, out))
	var covered int64
	for _, p := range cp.Partitions {
		covered += p.Next
	}
	t.Logf("killed after %d alert lines; checkpoint covered %d of %d records", first, covered, len(f.recs))

	r = startService(t, cfg, f)
	waitDone(t, r, f)
	st := r.svc.Pipeline().Stats()
	r.shutdown(t)

	assertSameAlerts(t, readLines(t, out), f.want)
	if got, want := totalRecords(st), int64(len(f.recs)); got != want {
		t.Errorf("records counted = %d, want %d (a record counted twice or lost)", got, want)
	}
	// The aggregator's own counters start at zero in each process; the
	// record totals above are checkpointed and must add up exactly.
	if st.Late != 0 {
		t.Errorf("%d observations arrived after their bucket closed", st.Late)
	}
	t.Logf("restart: %d re-raised notifications deduplicated by the outbox", r.svc.Dispatcher().Stats()[0].Deduped)
}

// The broker goes away mid-stream and comes back on the same address with
// its data: the service reports not-ready meanwhile, then catches up with
// nothing lost.
func TestServiceBrokerOutage(t *testing.T) {
	f := loadFixture(t)
	kdir := t.TempDir()
	c := startBroker(t, 0, kdir, f.topicNames()...)
	addr := c.ListenAddrs()[0]
	_, portStr, _ := strings.Cut(addr[strings.LastIndex(addr, ":"):], ":")
	port := 0
	for _, ch := range portStr {
		port = port*10 + int(ch-'0')
	}
	produceFixture(t, addr, f)

	dir := t.TempDir()
	r := startService(t, mustValidate(t, testConfig(addr, dir, f.topics...)), f)
	readyz := func() int {
		resp, err := http.Get("http://" + r.svc.Addr() + "/readyz")
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, "ready", 30*time.Second, func() bool { return readyz() == http.StatusOK })
	waitFor(t, "a quarter of the records", waitLong, func() bool {
		return totalRecords(r.svc.Pipeline().Stats()) >= int64(len(f.recs)/4)
	})
	c.Close()
	waitFor(t, "not ready during the outage", 30*time.Second, func() bool { return readyz() == http.StatusServiceUnavailable })
	during := totalRecords(r.svc.Pipeline().Stats())
	if during >= int64(len(f.recs)) {
		t.Logf("every record was consumed before the broker went away")
	}
	time.Sleep(500 * time.Millisecond)

	c = startBroker(t, port, kdir)
	defer c.Close()
	waitFor(t, "ready again", waitLong, func() bool { return readyz() == http.StatusOK })
	waitDone(t, r, f)
	st := r.svc.Pipeline().Stats()
	r.shutdown(t)

	assertSameAlerts(t, readLines(t, filepath.Join(dir, "alerts.jsonl")), f.want)
	if got, want := totalRecords(st), int64(len(f.recs)); got != want {
		t.Errorf("records = %d, want %d", got, want)
	}
	if st.Observations != f.stats.Observations {
		t.Errorf("observations %d, replay %d", st.Observations, f.stats.Observations)
	}
}

// Records that do not decode go to the dead-letter topic with their reason
// in a header, are counted per topic and reason, and the good records
// around them are still processed.
func TestServiceDeadLetters(t *testing.T) {
	f := loadFixture(t)
	c := startBroker(t, 0, "", "flows", "dead")
	defer c.Close()
	addr := c.ListenAddrs()[0]
	good := f.recs[:2000]
	bad := [][]byte{{}, {0xff, 0xff, 0xff}, []byte("not a flow"), {0x08}}
	var recs []*ingest.Record
	wantReason := map[string]int{}
	dec, err := ingest.NewDecoder("flows", "goflow2-pb", &ingest.Env{Shared: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range good {
		recs = append(recs, r)
		if i%500 == 0 {
			v := bad[(i/500)%len(bad)]
			derr := dec.Decode(v, obs.SinkFunc(func(*obs.Observation) {}))
			if derr == nil {
				t.Fatalf("%q decodes", v)
			}
			wantReason[ingest.Reason(derr)]++
			recs = append(recs, &ingest.Record{Value: v, Time: r.Time})
		}
	}
	produce(t, addr, "flows", recs)

	dir := t.TempDir()
	cfg := testConfig(addr, dir)
	cfg.Kafka.DeadLetterTopic = "dead"
	r := startService(t, mustValidate(t, cfg), f)
	waitFor(t, "all records", waitLong, func() bool {
		return totalRecords(r.svc.Pipeline().Stats()) >= int64(len(recs))
	})
	// A checkpoint writes the dead letters first.
	if err := r.svc.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + r.svc.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.shutdown(t)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("dead"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]int{}
	n := 0
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for n < len(recs)-len(good) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("dead letters: got %d of %d", n, len(recs)-len(good))
		}
		fs.EachRecord(func(kr *kgo.Record) {
			n++
			hs := map[string]string{}
			for _, h := range kr.Headers {
				hs[h.Key] = string(h.Value)
			}
			got[hs[HeaderReason]]++
			if hs[HeaderTopic] != "flows" || hs[HeaderOffset] == "" || hs[HeaderError] == "" {
				t.Errorf("dead letter headers %v", hs)
			}
		})
	}
	for reason, k := range wantReason {
		if got[reason] != k {
			t.Errorf("dead letters with reason %s = %d, want %d", reason, got[reason], k)
		}
		line := `outagewatch_decode_errors_total{reason="` + reason + `",topic="flows"} ` + itoa(k)
		if !strings.Contains(string(body), line) {
			t.Errorf("metrics lack %q", line)
		}
		line = `outagewatch_dead_letters_total{reason="` + reason + `",topic="flows"} ` + itoa(k)
		if !strings.Contains(string(body), line) {
			t.Errorf("metrics lack %q", line)
		}
	}
	if line := `outagewatch_records_total{topic="flows"} ` + itoa(len(recs)); !strings.Contains(string(body), line) {
		t.Errorf("metrics lack %q", line)
	}
}

// assertAPIAlerts checks that /api/v1/alerts lists exactly the pipeline's
// active alerts (an empty list, not null) and its watermark.
func assertAPIAlerts(t *testing.T, r *running, st pipeline.Stats) {
	t.Helper()
	resp, err := http.Get("http://" + r.svc.Addr() + "/api/v1/alerts")
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		Alerts    []alerting.Event `json:"alerts"`
		Watermark *time.Time       `json:"watermark"`
	}
	err = json.NewDecoder(resp.Body).Decode(&api)
	resp.Body.Close()
	active := r.svc.Pipeline().ActiveAlerts()
	if err != nil || api.Alerts == nil || len(api.Alerts) != len(active) || api.Watermark == nil ||
		api.Watermark.UnixNano() != st.Watermark {
		t.Fatalf("/api/v1/alerts = %+v (%v), pipeline has %d active, watermark %d", api, err, len(active), st.Watermark)
	}
	for i := range active {
		if api.Alerts[i].ID != active[i].ID || api.Alerts[i].Status != alerting.Firing {
			t.Fatalf("/api/v1/alerts[%d] = %s %s, want %s", i, api.Alerts[i].ID, api.Alerts[i].Status, active[i].ID)
		}
	}
}
