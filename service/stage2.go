package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/partial"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/stage"
)

// s2Part is stage two's task of one internal partition.
type s2Part struct {
	part   int
	task   *stage.Task
	saved  int64 // the task's offset at its last snapshot
	errors int64
	// wm and movedAt follow the task's watermark, to name the sources
	// that hold it when it stops moving while others have gone on.
	wm      int64
	movedAt time.Time
	warned  bool
}

type stageTwo struct {
	s       *Staged
	m       *netmap.Map
	group   string
	gen     *kafka.Generation
	sources []string
	tasks   map[int]*s2Part
	lastCP  time.Time
	// unrestored are the partitions of this generation whose state
	// restored from no copy, with why; retried every checkpoint interval
	// (a broker error passes), named by /readyz until then.
	unrestored map[int]string
	retried    time.Time
	// cpRetry paces snapshot rounds while the changelog cannot be written.
	cpRetry *kafkaio.Retry
}

func (s *Staged) runStageTwo(ctx context.Context) error {
	// Stage two reads the map but never the routing table, which stage
	// one keeps (and writes) in this process too.
	m := *s.m
	m.Live = nil
	t := &stageTwo{s: s, m: &m, group: s.cfg.Kafka.GroupID + "-stage2", tasks: map[int]*s2Part{}, cpRetry: kafkaio.NewRetry()}
	for r := kafkaio.NewRetry(); ; {
		var err error
		if t.sources, err = s.sources(ctx); err == nil {
			break
		}
		if kafkaio.Sleep(ctx, r.Fail(time.Now(), s.log, "stage two: input partitions not known yet; retrying", err)) != nil {
			return nil
		}
	}
	kctx, stop := context.WithCancel(ctx)
	defer stop()
	cg, gens, err := s.joinGroup(kctx, t.group, []string{s.cfg.Kafka.InternalTopic}, "stage two")
	if err != nil {
		return err
	}
	defer cg.Close()
	msgs := make(chan fetched, 64)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	t.lastCP = time.Now()
	for {
		select {
		case <-ctx.Done():
			t.cpRetry = kafkaio.NewRetry() // the last round is tried whatever came before
			t.checkpointAll(context.Background())
			return nil
		case gen := <-gens:
			t.assign(ctx, gen, msgs)
		case f := <-msgs:
			s.reloadMap(mapStageTwo, t.m)
			t.reloadRules()
			t.apply(f)
		case reply := <-s.cp2:
			t.cpRetry = kafkaio.NewRetry() // asked for: tried now
			err := t.checkpointAll(ctx)
			reply <- cpDone{parts: t.written(), err: err}
			t.lastCP = time.Now()
		case now := <-tick.C:
			s.reloadMap(mapStageTwo, t.m)
			t.reloadRules()
			if len(t.unrestored) > 0 && now.Sub(t.retried) >= s.cfg.CheckpointInterval {
				t.retryRestore(ctx, msgs)
			}
			t.watchStalls(now)
			if now.Sub(t.lastCP) >= s.cfg.CheckpointInterval {
				t.checkpointAll(ctx)
				t.lastCP = now
			}
		}
	}
}

// assign keeps the tasks it still holds (their state and offset agree),
// restores the others from the changelog, and starts reading each from
// its offset.
func (t *stageTwo) assign(ctx context.Context, gen *kafka.Generation, msgs chan fetched) {
	s := t.s
	t.gen = gen
	held := map[int]*s2Part{}
	t.unrestored = map[int]string{}
	for _, as := range gen.Assignments {
		for _, a := range as {
			if p := t.tasks[a.ID]; p != nil {
				held[a.ID] = p
				t.start(p, msgs)
			} else {
				t.unrestored[a.ID] = "not restored yet"
			}
		}
	}
	t.tasks = held
	t.retryRestore(ctx, msgs)
	s.status.assigned[1].Store(true)
	s.log.Info("stage two: generation", "id", gen.ID, "partitions", len(t.tasks), "unrestored", len(t.unrestored))
}

// start reads a task's partition from its offset in this generation.
func (t *stageTwo) start(p *s2Part, msgs chan fetched) {
	off := p.task.Offset()
	if off == 0 {
		off = kafka.FirstOffset
	}
	k := tp{t.s.cfg.Kafka.InternalTopic, int32(p.part)}
	gid := t.gen.ID
	t.gen.Start(func(gctx context.Context) { t.s.readFrom(gctx, gid, k, off, msgs, nil) })
}

// retryRestore restores the partitions not restored yet and starts the
// ones that now are; those that still fail are counted and named.
func (t *stageTwo) retryRestore(ctx context.Context, msgs chan fetched) {
	s := t.s
	t.retried = time.Now()
	for _, part := range slices.Sorted(maps.Keys(t.unrestored)) {
		p, err := t.restore(ctx, part)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.status.restoreFailures.Inc()
			t.unrestored[part] = err.Error()
			s.log.Error("stage two: task not restored; its partition is not read until it is", "partition", part, "err", err)
			continue
		}
		delete(t.unrestored, part)
		t.tasks[part] = p
		t.start(p, msgs)
	}
	pipes := make([]*pipeline.Pipeline, 0, len(t.tasks))
	for _, id := range slices.Sorted(maps.Keys(t.tasks)) {
		pipes = append(pipes, t.tasks[id].task.Pipeline())
	}
	s.status.pipes.Store(&pipes)
	s.status.held2.Set(float64(len(t.tasks)))
	s.status.unrestored.Set(float64(len(t.unrestored)))
	if len(t.unrestored) == 0 {
		s.status.unrestoredWhy.Store(nil)
		return
	}
	var names []string
	for _, part := range slices.Sorted(maps.Keys(t.unrestored)) {
		names = append(names, fmt.Sprintf("%d (%s)", part, t.unrestored[part]))
	}
	why := "stage-two partitions not restored, not read: " + strings.Join(names, "; ")
	s.status.unrestoredWhy.Store(&why)
}

func (t *stageTwo) newTask(part int) (*stage.Task, error) {
	pc := t.s.pipelineConfig(t.m)
	pc.Events = t.s.dispatch
	if t.s.charts != nil {
		pc.Tap = t.s.charts.Bucket
	}
	return stage.NewPartitionTask(pc, t.s.dispatch, t.sources, part)
}

func (t *stageTwo) apply(f fetched) {
	if t.gen == nil || f.gen != t.gen.ID {
		return
	}
	p := t.tasks[int(f.k.part)]
	if p == nil {
		return
	}
	for i := range f.msgs {
		m := &f.msgs[i]
		if m.Offset < p.task.Offset() {
			continue
		}
		r, err := partial.Decode(m.Value)
		if err == nil {
			err = p.task.Apply(r)
		}
		if err != nil {
			if p.errors++; p.errors == 1 {
				t.s.log.Warn("stage two: partial record skipped; further ones only counted", "partition", p.part, "offset", m.Offset, "err", err)
			}
		}
		p.task.SetOffset(m.Offset + 1)
	}
	p.task.Close()
}

func (t *stageTwo) checkpointAll(ctx context.Context) error {
	start, wrote := time.Now(), false
	var errs []error
	if !t.cpRetry.Ready(start) {
		return errors.New("stage two: waiting to retry the changelog after a failed snapshot")
	}
	for _, p := range t.tasks {
		if p.task.Offset() == p.saved {
			continue
		}
		wrote = true
		if err := t.checkpoint(ctx, p); err != nil {
			errs = append(errs, fmt.Errorf("stage two partition %d: %w", p.part, err))
			// One failure backs the round off: the others would meet the
			// same broker.
			break
		}
	}
	if wrote {
		t.s.status.observeCheckpoint(start, len(errs) > 0)
	}
	if err := errors.Join(errs...); err != nil {
		t.cpRetry.Fail(time.Now(), t.s.log, "stage two: snapshots not written; the changelog keeps the previous ones", err)
		return err
	}
	t.cpRetry.OK(t.s.log, "stage two: snapshots written again")
	return nil
}

// watchStalls warns, once per stall, when a task's buckets have waited
// longer than a live holder would take (two checkpoint intervals and a
// session timeout) for sources that have not flushed them while others
// have: a stage-one partition that lags, or that no live instance holds.
// Nothing closes meanwhile; the warning names what it waits for.
func (t *stageTwo) watchStalls(now time.Time) {
	limit := 2*t.s.cfg.CheckpointInterval + t.s.cfg.Kafka.SessionTimeout
	var held []string
	defer func() {
		t.s.status.stalled.Set(float64(len(held)))
		if len(held) == 0 {
			t.s.status.why.Store(nil)
			return
		}
		why := "stage-two partitions wait on sources that stopped flushing: " + strings.Join(held, "; ")
		t.s.status.why.Store(&why)
	}()
	for _, part := range slices.Sorted(maps.Keys(t.tasks)) {
		p := t.tasks[part]
		wm, _ := p.task.Watermark()
		if wm != p.wm || p.movedAt.IsZero() {
			p.wm, p.movedAt, p.warned = wm, now, false
			continue
		}
		missing := p.task.Missing()
		if now.Sub(p.movedAt) < limit || len(missing) == 0 || len(missing) == len(t.sources) {
			continue
		}
		held = append(held, fmt.Sprintf("%d (%s)", p.part, strings.Join(missing, ", ")))
		if p.warned {
			continue
		}
		p.warned = true
		t.s.log.Warn("stage two: buckets held by sources that have not flushed them", "partition", p.part,
			"waiting_for", missing, "since", now.Sub(p.movedAt).Round(time.Second), "watermark", time.Unix(0, wm).UTC())
	}
}
