package service

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// badSnapshot is a changelog record that frames a whole one-chunk
// snapshot whose bytes are not one: what a damaged record looks like to
// a reader.
func badSnapshot() []byte {
	v := make([]byte, chunkHeader, chunkHeader+64)
	copy(v, "damaged!")
	binary.BigEndian.PutUint32(v[8:], 1|sealedChunks)
	binary.BigEndian.PutUint32(v[12:], 0)
	return append(v, strings.Repeat("x", 64)...)
}

// produceRaw writes one record per value to a partition of topic, and
// returns the offset of the last.
func produceRaw(t *testing.T, addr, topic string, part int32, vals ...[]byte) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	last := int64(-1)
	for _, v := range vals {
		r, err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: part, Key: []byte("0/0"), Value: v}).First()
		if err != nil {
			t.Fatal(err)
		}
		last = r.Offset
	}
	return last
}

// damageChangelogTails appends a damaged snapshot to each of parts
// partitions of the changelog, so that it is the last record there. A
// snapshot the killed instance sent just before it died can reach the
// broker after ours (it was in the socket when the process went), and
// the good snapshot behind the damaged one would then restore without
// the damaged one ever being read: so the damaged record is appended
// again until, a second later, nothing has come after it.
func damageChangelogTails(t *testing.T, addr, topic string, parts int) {
	t.Helper()
	want := map[int32]int64{}
	for part := range int32(parts) {
		want[part] = -1
	}
	for try := 0; len(want) > 0; try++ {
		if try == 10 {
			t.Fatalf("the changelog's partitions %v still grow after the damaged snapshot", want)
		}
		for part := range want {
			want[part] = produceRaw(t, addr, topic, part, badSnapshot())
		}
		time.Sleep(time.Second)
		for part, off := range want {
			conn, err := kafka.DialLeader(context.Background(), "tcp", addr, topic, int(part))
			if err != nil {
				t.Fatal(err)
			}
			end, err := conn.ReadLastOffset()
			conn.Close()
			if err != nil {
				t.Fatal(err)
			}
			if end == off+1 {
				delete(want, part)
			}
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A stage-two partition whose committed snapshot is damaged on the
// changelog, with no cache and nothing good before it, is not read: the
// process is not ready and names the partition and why, and the metrics
// count it.
func TestStagedUnrestorablePartition(t *testing.T) {
	c := startBroker(t, 0, "", "flows")
	defer c.Close()
	addr := c.ListenAddrs()[0]
	dir := t.TempDir()
	cfg := testConfig(addr, dir)
	cfg.Kafka.GroupID = "outagewatch-restore"
	cfg.Kafka.InternalPartitions = 1
	cfg = mustValidate(t, cfg)
	// The changelog holds one damaged snapshot, and the group's commit
	// names it, as after a snapshot whose record was damaged.
	ctx := context.Background()
	cl := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
	if _, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: cfg.Kafka.InternalTopic, NumPartitions: 1, ReplicationFactor: -1},
		{Topic: cfg.Kafka.ChangelogTopic, NumPartitions: 1, ReplicationFactor: -1}}}); err != nil {
		t.Fatal(err)
	}
	produceRaw(t, addr, cfg.Kafka.ChangelogTopic, 0, badSnapshot())
	res, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: cfg.Kafka.GroupID + "-stage2", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{cfg.Kafka.InternalTopic: {{Partition: 0, Offset: 7, Metadata: changelogMeta + "0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				t.Fatal(p.Error)
			}
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStaged(cfg, Options{Logger: quietLog(), Listener: ln}, StageTwo)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.Run(rctx) }()
	defer func() {
		cancel()
		<-done
	}()
	base := "http://" + ln.Addr().String()
	var code int
	var body string
	waitFor(t, "readyz to name the partition", waitLong, func() bool {
		code, body = get(t, base+"/readyz")
		return strings.Contains(body, "not restored")
	})
	want := "stage-two partitions not restored, not read: 0 (no good snapshot of 1 found: changelog " +
		cfg.Kafka.ChangelogTopic + "/0@0: checksum mismatch (damaged))"
	if code != http.StatusServiceUnavailable || strings.TrimSpace(body) != want {
		t.Fatalf("readyz %d %q\nwant 503 %q", code, body, want)
	}
	_, m := get(t, base+"/metrics")
	if !strings.Contains(m, "\noutagewatch_stage2_partitions_unrestored 1\n") ||
		!strings.Contains(m, "\noutagewatch_stage2_partitions 0\n") {
		t.Fatalf("metrics lack the unrestored partition:\n%s", m)
	}
	if strings.Contains(m, "\noutagewatch_stage2_restore_failures_total 0\n") || !strings.Contains(m, "outagewatch_stage2_restore_failures_total ") {
		t.Fatalf("restore failures not counted:\n%s", m)
	}
}

// A snapshot written before snapshots carried their checksum (no seal
// flag in its chunk count) still restores: an upgrade keeps the state.
func TestStagedRestoresUnsealedSnapshot(t *testing.T) {
	c := startBroker(t, 0, "", "flows")
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cfg := testConfig(addr, t.TempDir())
	cfg.Kafka.GroupID = "outagewatch-legacy"
	cfg.Kafka.InternalPartitions = 1
	cfg = mustValidate(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStaged(cfg, Options{Logger: quietLog(), Listener: ln}, StageTwo)
	if err != nil {
		t.Fatal(err)
	}
	task, err := (&stageTwo{s: st, m: st.m}).newTask(0)
	if err != nil {
		t.Fatal(err)
	}
	task.SetOffset(7)
	b, err := task.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	v := make([]byte, chunkHeader, chunkHeader+len(b))
	copy(v, "unsealed")
	binary.BigEndian.PutUint32(v[8:], 1)
	ctx := context.Background()
	cl := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
	if _, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: cfg.Kafka.InternalTopic, NumPartitions: 1, ReplicationFactor: -1},
		{Topic: cfg.Kafka.ChangelogTopic, NumPartitions: 1, ReplicationFactor: -1}}}); err != nil {
		t.Fatal(err)
	}
	produceRaw(t, addr, cfg.Kafka.ChangelogTopic, 0, append(v, b...))
	if _, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: cfg.Kafka.GroupID + "-stage2", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{cfg.Kafka.InternalTopic: {{Partition: 0, Offset: 7, Metadata: changelogMeta + "0"}}}}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.Run(rctx) }()
	defer func() {
		cancel()
		<-done
	}()
	base := "http://" + ln.Addr().String()
	waitFor(t, "the partition restored", waitLong, func() bool {
		_, m := get(t, base+"/metrics")
		return strings.Contains(m, "\noutagewatch_stage2_partitions 1\n") && strings.Contains(m, "\noutagewatch_stage2_partitions_unrestored 0\n")
	})
}

// A damaged state file is refused by its checksum, not decoded; a good
// one reads back exactly, and a rewrite leaves no temporary file.
func TestStateFileChecksum(t *testing.T) {
	file := filepath.Join(t.TempDir(), "stage2", "0.snapshot")
	if err := writeCache(file, 42, []byte("state")); err != nil {
		t.Fatal(err)
	}
	at, b, err := readCache(file)
	if err != nil || at != 42 || string(b) != "state" {
		t.Fatalf("read back %d %q %v", at, b, err)
	}
	if _, err := os.Stat(file + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	raw, _ := os.ReadFile(file)
	for i := range raw {
		d := append([]byte(nil), raw...)
		d[i] ^= 0x01
		if err := os.WriteFile(file, d, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readCache(file); err == nil {
			t.Fatalf("byte %d flipped: read without error", i)
		}
	}
	if _, err := openSnapshot(sealSnapshot([]byte("snap"))); err != nil {
		t.Fatal(err)
	}
	s := sealSnapshot([]byte("snap"))
	s[1] ^= 0x80
	if _, err := openSnapshot(s); err == nil {
		t.Fatal("damaged snapshot opened")
	}
}

// killMidway waits until an instance has delivered a third of the
// replay's lines and written a snapshot cache of each stage-two
// partition, then kills it.
func (r *stagedRun) killMidway(c *child) {
	r.t.Helper()
	waitFor(r.t, "a third of the alerts, every snapshot cache and the routing table's checkpoint", waitLong, func() bool {
		caches, _ := filepath.Glob(filepath.Join(c.spec.Dir, "stage2", "*.snapshot"))
		_, err := os.Stat(filepath.Join(c.spec.Dir, "stage1-bgp.checkpoint"))
		return len(caches) == 4 && err == nil && 3*len(readLines(r.t, filepath.Join(c.spec.Dir, "alerts.jsonl"))) >= len(r.f.want)
	})
	c.kill()
}

// A damaged snapshot cache (a byte flipped in each) is refused by its
// checksum and the task restored from the changelog, and a damaged
// routing table checkpoint is refused and the table read again from the
// BGP topic: every alert of the replay delivered, none extra.
func TestStagedDamagedSnapshotCache(t *testing.T) {
	r := newStagedRun(t)
	spec := r.spec(0, StageBoth)
	r.killMidway(startChild(t, spec))
	caches, _ := filepath.Glob(filepath.Join(spec.Dir, "stage2", "*.snapshot"))
	caches = append(caches, filepath.Join(spec.Dir, "stage1-bgp.checkpoint"))
	for _, f := range caches {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := startChild(t, spec)
	c.waitLogged(t, 1, "snapshot cache unreadable", "routing table checkpoint does not restore")
	r.waitAll([]*child{c})
	c.stop(t)
	r.check()
	if !strings.Contains(c.log.String(), "snapshot cache unreadable") {
		t.Errorf("no damaged cache was read:\n%s", tail(c.log.String()))
	}
	if !strings.Contains(c.log.String(), "routing table checkpoint does not restore; reading BGP from the start") {
		t.Errorf("the damaged routing table checkpoint was not refused:\n%s", tail(c.log.String()))
	}
}

// A damaged record on the changelog after the last snapshot of each
// partition (what a new instance, without the caches, reads first) is
// refused by its checksum and the snapshot before it restored: every
// alert of the replay delivered, none extra.
func TestStagedDamagedChangelogRecord(t *testing.T) {
	r := newStagedRun(t)
	r.killMidway(startChild(t, r.spec(0, StageBoth)))
	cfg := stagedConfig(r.spec(1, StageBoth))
	damageChangelogTails(t, r.addr, cfg.Kafka.ChangelogTopic, cfg.Kafka.InternalPartitions)
	c := startChild(t, r.spec(1, StageBoth))
	c.waitLogged(t, cfg.Kafka.InternalPartitions, "changelog snapshot damaged")
	r.waitAll([]*child{c})
	c.stop(t)
	r.check()
	if n := strings.Count(c.log.String(), "changelog snapshot damaged"); n != cfg.Kafka.InternalPartitions {
		t.Errorf("%d damaged changelog snapshots refused, want %d:\n%s", n, cfg.Kafka.InternalPartitions, tail(c.log.String()))
	}
}
