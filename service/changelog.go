package service

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/internal/kafkaio"
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
	// sealedChunks, set in the chunk count, marks a snapshot that ends in
	// its CRC32C (sealSnapshot). Snapshots written before it have none
	// and are restored as they are, so an upgrade does not lose state.
	sealedChunks = 1 << 31
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
	sealed := sealSnapshot(b)
	n := max(1, (len(sealed)+chunkSize-1)/chunkSize)
	topic := t.s.cfg.Kafka.ChangelogTopic
	var first int64
	for i := range n {
		chunk := sealed[i*chunkSize : min(len(sealed), (i+1)*chunkSize)]
		v := make([]byte, chunkHeader, chunkHeader+len(chunk))
		copy(v, id[:])
		binary.BigEndian.PutUint32(v[8:], uint32(n)|sealedChunks)
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

// restore builds the task of a partition from the latest good snapshot:
// the cache when it is the one the group's commit names and its checksum
// holds; else the changelog's snapshots from that one on, newest first;
// else, when those are damaged too, the ones before it. An older snapshot
// carries its own internal-topic offset, so the task reads again from
// there and re-raises the same alerts under the same delivery keys. With
// no snapshot anywhere the task starts empty; with snapshots but none
// good it is an error, and the partition is not read.
func (t *stageTwo) restore(ctx context.Context, part int) (*s2Part, error) {
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
	var bad []string
	try := func(what string, b []byte) (*s2Part, bool) {
		task, err := t.newTask(part)
		if err != nil {
			bad = append(bad, err.Error())
			return nil, false
		}
		if err := task.UnmarshalBinary(b); err != nil {
			bad = append(bad, what+": "+err.Error())
			t.s.log.Warn("stage two: snapshot does not restore; trying the one before", "partition", part, "from", what, "err", err)
			return nil, false
		}
		t.s.log.Info("stage two: task restored", "partition", part, "from", what, "offset", task.Offset(), "bytes", len(b))
		return &s2Part{part: part, task: task, saved: task.Offset()}, true
	}
	if from >= 0 {
		at, b, err := readCache(t.cacheFile(part))
		switch {
		case err == nil && at == from:
			if p, ok := try("cache", b); ok {
				return p, nil
			}
		case err != nil && !errors.Is(err, os.ErrNotExist):
			bad = append(bad, err.Error())
			t.s.log.Warn("stage two: snapshot cache unreadable; reading the changelog", "partition", part, "err", err)
		}
	}
	// newestFirst tries the snapshots written before offset before.
	newestFirst := func(snaps []changelogSnapshot, before int64) (*s2Part, bool) {
		for i := len(snaps) - 1; i >= 0; i-- {
			sn := snaps[i]
			if sn.at >= before {
				continue
			}
			what := fmt.Sprintf("changelog %s/%d@%d", t.s.cfg.Kafka.ChangelogTopic, part, sn.at)
			b, err := sn.b, error(nil)
			if sn.sealed {
				b, err = openSnapshot(sn.b)
			}
			if err != nil {
				bad = append(bad, what+": "+err.Error())
				t.s.log.Warn("stage two: changelog snapshot damaged; trying the one before", "partition", part, "from", what, "err", err)
				continue
			}
			if p, ok := try(what, b); ok {
				return p, true
			}
		}
		return nil, false
	}
	snaps, err := t.readChangelog(ctx, part, from)
	if err != nil {
		return nil, err
	}
	if p, ok := newestFirst(snaps, math.MaxInt64); ok {
		return p, nil
	}
	if from > 0 {
		// Every snapshot from the committed one on is damaged: the ones
		// before it, read from the start.
		older, err := t.readChangelog(ctx, part, kafka.FirstOffset)
		if err != nil {
			return nil, err
		}
		if p, ok := newestFirst(older, from); ok {
			return p, nil
		}
		snaps = append(snaps, older...)
	}
	if len(snaps) == 0 && len(bad) == 0 {
		task, err := t.newTask(part)
		if err != nil {
			return nil, err
		}
		t.s.log.Info("stage two: no snapshot; the task starts empty", "partition", part)
		return &s2Part{part: part, task: task}, nil
	}
	return nil, fmt.Errorf("no good snapshot of %d found: %s", len(snaps), strings.Join(bad, "; "))
}

// keepSnapshots bounds the snapshots readChangelog keeps in memory, the
// newest: a fallback past this many damaged ones in a row is not worth a
// partition's memory several times over (a compacted changelog keeps
// about one per partition anyway).
const keepSnapshots = 4

// changelogSnapshot is one complete snapshot on the changelog, with the
// offset of its first chunk; sealed when it ends in its checksum.
type changelogSnapshot struct {
	at     int64
	sealed bool
	b      []byte
}

// readChangelog returns the complete snapshots in a changelog partition
// from offset from to its end, oldest first (sealed: see openSnapshot).
func (t *stageTwo) readChangelog(ctx context.Context, part int, from int64) ([]changelogSnapshot, error) {
	topic := t.s.cfg.Kafka.ChangelogTopic
	h, err := t.s.highWatermarks(ctx, []string{topic})
	if err != nil {
		return nil, fmt.Errorf("changelog %s: %w", topic, err)
	}
	end := h[tp{topic, int32(part)}]
	if end <= 0 || from >= end {
		return nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var (
		curID  []byte
		curAt  int64
		chunks [][]byte
		out    []changelogSnapshot
	)
	err = kafkaio.ReadRange(rctx, t.s.cfg.Kafka.Brokers, t.s.opts.Dialer, t.s.log, topic, part, from, end, func(m kafka.Message) error {
		if v := m.Value; len(v) >= chunkHeader {
			id, nRaw, i := v[:8], binary.BigEndian.Uint32(v[8:]), int(binary.BigEndian.Uint32(v[12:]))
			sealed, n := nRaw&sealedChunks != 0, int(nRaw&^sealedChunks)
			if i == 0 || !bytes.Equal(id, curID) {
				curID, curAt, chunks = bytes.Clone(id), m.Offset, nil
			}
			if i == len(chunks) && n > 0 && n < 1<<16 {
				chunks = append(chunks, v[chunkHeader:])
				if len(chunks) == n {
					out = append(out, changelogSnapshot{at: curAt, sealed: sealed, b: bytes.Join(chunks, nil)})
					if len(out) > keepSnapshots {
						out = out[1:]
					}
					chunks = nil
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	return out, nil
}
