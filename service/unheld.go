package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// Partitions this instance does not hold still count in its watermark.
//
// A bucket may close only once every partition that feeds it has passed
// it, whoever holds that partition. Each instance commits, with every
// offset, the event time its partition had reached (the commit metadata
// "wm=<unix ns>"), and reads the group's committed offsets of every
// partition back as it polls the high watermarks. A partition held
// elsewhere then counts at its committed event time while it has a
// backlog; caught up, it holds nothing back, since whatever arrives next is
// newer. A holder that dies stops committing: its partitions keep their
// last committed time and so hold the watermark until the group gives them
// to a live member. Such a partition (a backlog and no commit for
// 2×checkpoint_interval + session_timeout) is "unheld": it is counted in
// outagewatch_partitions_unheld and named by /readyz.

// commitMetaPrefix starts the commit metadata that carries a partition's
// event time.
const commitMetaPrefix = "wm="

// groupOffset is the group's committed position in one partition.
type groupOffset struct {
	offset int64 // -1: none committed
	time   int64 // event time the committer had reached (ns); 0 unknown
}

// polled is one round of the poll loop: high watermarks and the group's
// committed offsets (nil when they could not be read).
type polled struct {
	hwm       map[tp]int64
	committed map[tp]groupOffset
	snap      map[tp]int64 // readSnapshot taken just before
}

// snapshot asks the main loop where its partitions stood before a poll.
func (s *Service) snapshot(ctx context.Context) (map[tp]int64, error) {
	reply := make(chan map[tp]int64, 1)
	select {
	case s.snapReq <- reply:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case m := <-reply:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readSnapshot is the event time of every partition held here.
func (s *Service) readSnapshot() map[tp]int64 {
	m := make(map[tp]int64, len(s.parts))
	for k, p := range s.parts {
		if p.assigned {
			m[k] = p.maxTime
		}
	}
	return m
}

// committedOffsets reads the group's committed offset and event time of
// every partition in parts.
func committedOffsets(ctx context.Context, c *kafka.Client, group string, parts map[tp]int64) (map[tp]groupOffset, error) {
	req := &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{}}
	for k := range parts {
		req.Topics[k.topic] = append(req.Topics[k.topic], int(k.part))
	}
	res, err := c.OffsetFetch(ctx, req)
	if err != nil {
		return nil, err
	}
	if res.Error != nil {
		return nil, res.Error
	}
	out := map[tp]groupOffset{}
	for t, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("topic %s partition %d: %w", t, p.Partition, p.Error)
			}
			g := groupOffset{offset: p.CommittedOffset}
			if v, ok := strings.CutPrefix(p.Metadata, commitMetaPrefix); ok {
				g.time, _ = strconv.ParseInt(v, 10, 64)
			}
			out[tp{t, int32(p.Partition)}] = g
		}
	}
	return out, nil
}

// commitOffsets commits offsets in gen with their event times as metadata.
func commitOffsets(ctx context.Context, c *kafka.Client, gen *kafka.Generation, off []PartitionState) error {
	topics := map[string][]kafka.OffsetCommit{}
	for _, p := range off {
		topics[p.Topic] = append(topics[p.Topic], kafka.OffsetCommit{Partition: int(p.Partition),
			Offset: p.Next, Metadata: commitMetaPrefix + strconv.FormatInt(p.MaxTime, 10)})
	}
	return commitGroup(ctx, c, gen, topics)
}

// commitGroup commits offsets as a member of gen, and fails with every
// partition the brokers refused.
func commitGroup(ctx context.Context, c *kafka.Client, gen *kafka.Generation, topics map[string][]kafka.OffsetCommit) error {
	res, err := c.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: gen.GroupID, GenerationID: int(gen.ID),
		MemberID: gen.MemberID, Topics: topics})
	if err != nil {
		return err
	}
	var errs []error
	for t, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				errs = append(errs, fmt.Errorf("topic %s partition %d: %w", t, p.Partition, p.Error))
			}
		}
	}
	return errors.Join(errs...)
}

// applyPoll takes a poll round into the partitions: every partition of the
// configured topics is known from then on, held here or not.
func (s *Service) applyPoll(pr polled, now time.Time) {
	s.pollSnap = pr.snap
	for k, v := range pr.hwm {
		t, ok := s.cfg.topic(k.topic)
		if !ok {
			continue
		}
		p := s.partition(t, k.part)
		p.hwm = max(p.hwm, v)
	}
	for k, g := range pr.committed {
		p := s.parts[k]
		if p == nil {
			continue
		}
		if g.offset != p.committed.offset {
			p.progressAt = now
		}
		p.committed = g
	}
}

// remoteTime is where a partition that this instance does not hold stands
// for the watermark: (time, true) when it holds the watermark at time (0:
// at nothing yet, so no bucket closes), false when it holds nothing back.
func (p *partition) remoteTime() (int64, bool) {
	off, t := p.next, p.maxTime
	if p.committed.offset >= 0 {
		off = p.committed.offset
		if p.committed.time > 0 {
			t = p.committed.time
		}
	}
	switch {
	case p.hwm >= 0 && max(off, 0) >= p.hwm:
		return 0, false // caught up (or empty): nothing waits in it
	case p.hwm < 0 && off < 0:
		return 0, false // nothing known about it yet
	}
	return t, true
}

// stallAfter is how long a partition with a backlog may go without a
// commit before no live instance is taken to hold it: a live holder
// checkpoints, and so commits, every checkpoint_interval, and a dead one
// keeps its partitions for a session timeout before the group moves them.
func (s *Service) stallAfter() time.Duration {
	return 2*s.cfg.CheckpointInterval + s.cfg.Kafka.SessionTimeout
}

// trackUnheld updates the count and the readiness reason of partitions
// that hold the watermark while no live instance consumes them.
func (s *Service) trackUnheld(now time.Time) {
	var names []string
	var at int64
	for _, p := range s.parts {
		if p.assigned {
			continue
		}
		t, holds := p.remoteTime()
		if !holds || now.Sub(p.progressAt) < s.stallAfter() {
			continue
		}
		names = append(names, p.topic.Name+"/"+strconv.Itoa(int(p.part)))
		if at == 0 || t < at {
			at = t
		}
	}
	slices.Sort(names)
	s.met.unheld.Set(float64(len(names)))
	if len(names) == 0 {
		s.unheldReason.Store(nil)
		return
	}
	why := fmt.Sprintf("%d partitions with a backlog and no live consumer (%s): watermark held", len(names), strings.Join(names, ", "))
	if at > 0 {
		why += " at " + time.Unix(0, at).UTC().Format(time.RFC3339)
	}
	s.unheldReason.Store(&why)
}
