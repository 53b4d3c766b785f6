package service

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// A stage-two task's snapshot goes to the changelog topic's partition of
// the same number, in chunks under the brokers' message size: key
// "<partition>/<chunk>", value a header (snapshot id, chunk count, chunk
// index) and the bytes. The task's internal-topic offset is committed
// with the changelog offset of the first chunk; the data dir keeps the
// last snapshot written as a cache that saves reading it back.
const (
	chunkSize     = 512 << 10
	chunkHeader   = 16
	changelogMeta = "changelog="
)

func (t *stageTwo) cacheFile(part int) string {
	return filepath.Join(t.s.cfg.DataDir, "stage2", strconv.Itoa(part)+".snapshot")
}

func (t *stageTwo) checkpoint(ctx context.Context, p *s2Part) error {
	b, err := p.task.MarshalBinary()
	if err != nil {
		return err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	n := max(1, (len(b)+chunkSize-1)/chunkSize)
	topic := t.s.cfg.Kafka.ChangelogTopic
	var first int64
	for i := range n {
		chunk := b[i*chunkSize : min(len(b), (i+1)*chunkSize)]
		v := make([]byte, chunkHeader, chunkHeader+len(chunk))
		copy(v, id[:])
		binary.BigEndian.PutUint32(v[8:], uint32(n))
		binary.BigEndian.PutUint32(v[12:], uint32(i))
		v = append(v, chunk...)
		off, err := t.s.produce(ctx, topic, p.part, []kafka.Record{{Key: kafka.NewBytes([]byte(fmt.Sprintf("%d/%d", p.part, i))), Value: kafka.NewBytes(v)}})
		if err != nil {
			return err
		}
		if i == 0 {
			first = off
		}
	}
	if err := writeCache(t.cacheFile(p.part), first, b); err != nil {
		t.s.log.Warn("stage two: snapshot cache not written", "err", err)
	}
	p.saved = p.task.Offset()
	if t.gen != nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err := t.s.commit(cctx, t.gen, t.s.cfg.Kafka.InternalTopic, map[int]kafka.OffsetCommit{p.part: {Partition: p.part,
			Offset: p.task.Offset(), Metadata: changelogMeta + strconv.FormatInt(first, 10)}})
		if err != nil {
			t.s.log.Debug("stage two: commit failed; the changelog has the snapshot", "partition", p.part, "err", err)
		}
	}
	return nil
}

// restore builds the task of a partition from the latest snapshot: the
// cache when it is the one the group's commit names, else the changelog
// read from that snapshot (or from its start) to its end.
func (t *stageTwo) restore(ctx context.Context, part int) (*s2Part, error) {
	task, err := t.newTask(part)
	if err != nil {
		return nil, err
	}
	p := &s2Part{part: part, task: task}
	from := int64(kafka.FirstOffset)
	c, err := t.s.committed(ctx, t.group, map[string][]int{t.s.cfg.Kafka.InternalTopic: {part}})
	if err != nil {
		return nil, fmt.Errorf("committed offset: %w", err)
	}
	if co, ok := c[tp{t.s.cfg.Kafka.InternalTopic, int32(part)}]; ok {
		if v, ok := strings.CutPrefix(co.Metadata, changelogMeta); ok {
			from, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	var snap []byte
	if from >= 0 {
		if at, b, err := readCache(t.cacheFile(part)); err == nil && at == from {
			snap = b
		}
	}
	if snap == nil {
		if snap, err = t.readChangelog(ctx, part, from); err != nil {
			return nil, err
		}
	}
	if snap == nil {
		t.s.log.Info("stage two: no snapshot; the task starts empty", "partition", part)
		return p, nil
	}
	if err := task.UnmarshalBinary(snap); err != nil {
		return nil, err
	}
	p.saved = task.Offset()
	t.s.log.Info("stage two: task restored", "partition", part, "offset", task.Offset(), "bytes", len(snap))
	return p, nil
}

// readChangelog returns the last complete snapshot in a changelog
// partition from offset from to its end, or nil.
func (t *stageTwo) readChangelog(ctx context.Context, part int, from int64) ([]byte, error) {
	topic := t.s.cfg.Kafka.ChangelogTopic
	h, err := t.s.highWatermarks(ctx, []string{topic})
	if err != nil {
		return nil, fmt.Errorf("changelog %s: %w", topic, err)
	}
	end := h[tp{topic, int32(part)}]
	if end <= 0 || from >= end {
		return nil, nil
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: t.s.cfg.Kafka.Brokers, Topic: topic, Partition: part,
		Dialer: t.s.opts.Dialer, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, ErrorLogger: kafkaLogger(t.s.log)})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var (
		curID  []byte
		chunks [][]byte
		last   []byte
	)
	for {
		m, err := r.FetchMessage(rctx)
		if err != nil {
			return nil, fmt.Errorf("read changelog %s/%d: %w", topic, part, err)
		}
		if v := m.Value; len(v) >= chunkHeader {
			id, n, i := v[:8], int(binary.BigEndian.Uint32(v[8:])), int(binary.BigEndian.Uint32(v[12:]))
			if i == 0 || !bytes.Equal(id, curID) {
				curID, chunks = bytes.Clone(id), nil
			}
			if i == len(chunks) && n > 0 && n < 1<<16 {
				chunks = append(chunks, v[chunkHeader:])
				if len(chunks) == n {
					last = bytes.Join(chunks, nil)
					chunks = nil
				}
			}
		}
		if m.Offset >= end-1 {
			return last, nil
		}
	}
}

func writeCache(file string, at int64, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".tmp"
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], uint64(at))
	if err := os.WriteFile(tmp, append(hdr[:], b...), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

func readCache(file string) (int64, []byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, nil, err
	}
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("%s: truncated", file)
	}
	return int64(binary.BigEndian.Uint64(b)), b[8:], nil
}
