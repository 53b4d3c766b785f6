package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
)

// The control topic (kafka.control_topic, one partition) carries what an
// instance asks of the whole deployment and the answers: a checkpoint
// asked through any instance's API is a request record there; every
// instance's stages checkpoint on reading it and answer with a record
// naming the stage-two partitions whose snapshots are now written, and the
// instance asked waits until every partition of the internal topic is
// named. One topic every instance reads, like the silence and view topics,
// rather than instances calling each other: they need not know each
// other's addresses, and whoever holds a partition when the request comes
// is the one that answers for it.
type control struct {
	s *Staged
	// instance names this process in its answers.
	instance string
	// ready is closed once follow knows the offset it reads from: a
	// request written before that would not be seen here.
	ready chan struct{}
	mu    sync.Mutex
	// waiting are the requests made here, by ID, gathering answers.
	waiting map[string]*pendingCheckpoint
}

// controlRecord is one record of the control topic, its value as JSON.
type controlRecord struct {
	// Kind is controlCheckpoint (a request) or controlAck (an answer).
	Kind string `json:"kind"`
	// ID is the request's, in its answers too.
	ID string `json:"id"`
	// Instance is who wrote the record.
	Instance string `json:"instance"`
	// Wait bounds how long an instance tries to answer a request: the
	// instance asked stops waiting then.
	Wait time.Duration `json:"wait,omitempty"`
	// StageTwo are the stage-two partitions held by the instance that
	// answers whose snapshots are written up to what they have read.
	StageTwo []int `json:"stage_two,omitempty"`
	// RunsStageOne says the instance runs stage one, and StageOne that
	// it wrote its routing table's checkpoint (a no-op without BGP
	// topics).
	RunsStageOne bool `json:"runs_stage_one,omitempty"`
	StageOne     bool `json:"stage_one,omitempty"`
	// Error is what failed, if anything.
	Error string `json:"error,omitempty"`
}

const (
	controlCheckpoint = "checkpoint"
	controlAck        = "ack"
)

// controlRetention is how long the control topic keeps its records: a
// request matters for the seconds it is waited on, and an hour keeps it
// and its answers for whoever looks into one; the topic then stays small.
const controlRetention = time.Hour

// DefaultCheckpointWait is how long POST /api/v1/checkpoint waits for
// every partition's answer when the request says nothing (?wait=): three
// default checkpoint intervals (DefaultCheckpointInterval). A round of
// snapshots takes seconds; a partition not answered for by then is held
// by an instance in trouble or by none, and waiting longer tells no more.
const DefaultCheckpointWait = 3 * DefaultCheckpointInterval

// maxCheckpointWait caps ?wait=: an HTTP request held longer than that is
// one a proxy or client has likely dropped already.
const maxCheckpointWait = 10 * time.Minute

// pendingCheckpoint gathers the answers to one request made here.
type pendingCheckpoint struct {
	acks []controlRecord
	// got is signalled on every answer.
	got chan struct{}
}

func newControl(s *Staged) *control {
	host, _ := os.Hostname()
	var id [4]byte
	_, _ = rand.Read(id[:])
	return &control{s: s, instance: host + "-" + hex.EncodeToString(id[:]), ready: make(chan struct{}),
		waiting: map[string]*pendingCheckpoint{}}
}

// follow reads the control topic from its end as of the start until ctx
// ends: earlier requests were answered, or given up on, before this
// process ran.
func (c *control) follow(ctx context.Context) {
	topic := c.s.cfg.Kafka.ControlTopic
	var from int64
	for r := kafkaio.NewRetry(); ; {
		h, err := c.s.highWatermarks(ctx, []string{topic})
		if err == nil {
			from = h[tp{topic, 0}]
			break
		}
		if kafkaio.Sleep(ctx, r.Fail(time.Now(), c.s.log, "control topic: end not known yet; retrying", err, "topic", topic)) != nil {
			return
		}
	}
	close(c.ready)
	kafkaio.FetchBatches(ctx, c.s.cfg.Kafka.Brokers, c.s.opts.Dialer, c.s.log, topic, 0, from, func(batch []kafka.Message) bool {
		for i := range batch {
			var rec controlRecord
			if err := json.Unmarshal(batch[i].Value, &rec); err != nil || rec.ID == "" {
				c.s.log.Warn("control topic: record skipped", "offset", batch[i].Offset, "err", err)
				continue
			}
			switch rec.Kind {
			case controlCheckpoint:
				go c.answer(ctx, rec)
			case controlAck:
				c.mu.Lock()
				if p := c.waiting[rec.ID]; p != nil {
					p.acks = append(p.acks, rec)
					select {
					case p.got <- struct{}{}:
					default:
					}
				}
				c.mu.Unlock()
			}
		}
		return true
	})
}

// answer checkpoints the stages run here for a request and writes what
// they did to the control topic, within the request's wait.
func (c *control) answer(ctx context.Context, req controlRecord) {
	wait := req.Wait
	if wait <= 0 || wait > maxCheckpointWait {
		wait = DefaultCheckpointWait
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	done := c.s.checkpointHere(ctx)
	ack := controlRecord{Kind: controlAck, ID: req.ID, Instance: c.instance, StageTwo: done.two, RunsStageOne: c.s.one, StageOne: done.one}
	if done.err != nil {
		ack.Error = done.err.Error()
	}
	if err := c.write(ctx, ack); err != nil {
		c.s.log.Warn("checkpoint: answer not written", "request", req.ID, "from", req.Instance, "err", err)
		return
	}
	c.s.log.Info("checkpoint: asked through the control topic", "request", req.ID, "from", req.Instance,
		"stage_two_partitions", done.two, "stage_one", done.one, "err", done.err)
}

// write puts a record on the control topic, retrying a broker error until
// ctx ends.
func (c *control) write(ctx context.Context, rec controlRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	topic := c.s.cfg.Kafka.ControlTopic
	r := kafkaio.NewRetry()
	for {
		_, err := c.s.produce(ctx, topic, 0, []kafka.Record{{Key: kafka.NewBytes([]byte(rec.Kind + "/" + rec.ID)), Value: kafka.NewBytes(b)}})
		if err == nil {
			return nil
		}
		if kafkaio.Sleep(ctx, r.Fail(time.Now(), c.s.log, "control topic: not written; retrying", err)) != nil {
			return fmt.Errorf("control topic %s: %w", topic, err)
		}
	}
}

// DeploymentCheckpoint is the answer of POST /api/v1/checkpoint.
type DeploymentCheckpoint struct {
	ID string `json:"id"`
	// Partitions are the internal topic's; Written those whose
	// snapshots an instance said are written, Missing the others.
	Partitions []int `json:"partitions"`
	Written    []int `json:"written"`
	Missing    []int `json:"missing"`
	// StageOneInstances are the members of stage one's consumer group
	// when the request was made, when stage one has a routing table to
	// checkpoint (a BGP topic), else 0; StageOneWritten counts the
	// instances that said they wrote theirs.
	StageOneInstances int `json:"stage_one_instances"`
	StageOneWritten   int `json:"stage_one_written"`
	// Instances are the answers received, by instance.
	Instances []CheckpointAnswer `json:"instances"`
	// Complete is every partition and routing table written, no error.
	Complete bool `json:"complete"`
	// oneAnswers counts the answers of instances that run stage one:
	// fewer than StageOneInstances is one that did not answer in time.
	oneAnswers int
}

// CheckpointAnswer is one instance's answer to a checkpoint request.
type CheckpointAnswer struct {
	Instance string `json:"instance"`
	StageTwo []int  `json:"stage_two_partitions"`
	StageOne bool   `json:"stage_one_written"`
	Error    string `json:"error,omitempty"`
}

// CheckpointDeployment asks every instance, through the control topic, to
// checkpoint its stages now, and waits until every partition of the
// internal topic is answered for, wait passes or ctx ends. Missing then
// names the partitions no instance answered for. An error means the
// request could not be made.
func (s *Staged) CheckpointDeployment(ctx context.Context, wait time.Duration) (DeploymentCheckpoint, error) {
	c := s.ctl
	var out DeploymentCheckpoint
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	select {
	case <-c.ready:
	case <-ctx.Done():
		return out, fmt.Errorf("checkpoint: the control topic is not read yet: %w", ctx.Err())
	}
	parts, err := s.partitions(ctx, []string{s.cfg.Kafka.InternalTopic})
	if err != nil {
		return out, fmt.Errorf("checkpoint: partitions of %s: %w", s.cfg.Kafka.InternalTopic, err)
	}
	out.StageOneInstances = s.stageOneInstances(ctx)
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return out, err
	}
	out.ID = hex.EncodeToString(id[:])
	p := &pendingCheckpoint{got: make(chan struct{}, 1)}
	c.mu.Lock()
	c.waiting[out.ID] = p
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, out.ID)
		c.mu.Unlock()
	}()
	if err := c.write(ctx, controlRecord{Kind: controlCheckpoint, ID: out.ID, Instance: c.instance, Wait: wait}); err != nil {
		return out, fmt.Errorf("checkpoint: request not written: %w", err)
	}
	want := map[int]bool{}
	for _, k := range parts {
		want[int(k.part)] = true
	}
	written := map[int]bool{}
	var acks []controlRecord
wait:
	for {
		c.mu.Lock()
		acks = slices.Clone(p.acks)
		c.mu.Unlock()
		ones := 0
		for _, a := range acks {
			for _, part := range a.StageTwo {
				if want[part] {
					written[part] = true
				}
			}
			if a.RunsStageOne {
				ones++
			}
		}
		if len(written) == len(want) && ones >= out.StageOneInstances {
			break
		}
		select {
		case <-p.got:
		case <-ctx.Done():
			break wait
		}
	}
	out.Partitions = slices.Sorted(maps.Keys(want))
	out.Written = append([]int{}, slices.Sorted(maps.Keys(written))...)
	out.Missing = []int{}
	for _, part := range out.Partitions {
		if !written[part] {
			out.Missing = append(out.Missing, part)
		}
	}
	out.Instances = []CheckpointAnswer{}
	failed := false
	for _, a := range acks {
		out.Instances = append(out.Instances, CheckpointAnswer{Instance: a.Instance, StageTwo: append([]int{}, a.StageTwo...),
			StageOne: a.StageOne, Error: a.Error})
		if a.RunsStageOne {
			out.oneAnswers++
		}
		if a.StageOne {
			out.StageOneWritten++
		}
		failed = failed || a.Error != ""
	}
	out.Complete = len(out.Missing) == 0 && out.StageOneWritten >= out.StageOneInstances && !failed
	slices.SortFunc(out.Instances, func(a, b CheckpointAnswer) int { return strings.Compare(a.Instance, b.Instance) })
	return out, nil
}

// stageOneInstances counts the instances whose stage one has a routing
// table to checkpoint: the members of its consumer group when a BGP topic
// is read, else 0. A group that cannot be described counts 0, with a
// warning: the answer then waits for stage two's partitions only.
func (s *Staged) stageOneInstances(ctx context.Context) int {
	if !slices.ContainsFunc(s.cfg.Kafka.Topics, func(t Topic) bool { return ingest.Ordered(t.Stream) }) {
		return 0
	}
	group := s.cfg.Kafka.GroupID + "-stage1"
	n, err := kafkaio.GroupMembers(ctx, s.client, group)
	if err != nil {
		s.log.Warn("checkpoint: stage one's instances not counted; the answer waits for stage two's partitions only", "group", group, "err", err)
		return 0
	}
	return n
}

// localCheckpoint is what the stages run here did for a checkpoint.
type localCheckpoint struct {
	// one: stage one runs here and wrote its routing table.
	one bool
	// two are the stage-two partitions held here whose snapshots are
	// written up to what they have read.
	two []int
	err error
}

// cpDone is stage two's answer to a checkpoint asked of its loop.
type cpDone struct {
	parts []int
	err   error
}

// checkpointHere asks each stage run here for a checkpoint now: stage
// two's snapshots to the changelog with their commits, stage one's
// routing table to the data dir.
func (s *Staged) checkpointHere(ctx context.Context) localCheckpoint {
	var out localCheckpoint
	var errs []error
	if s.one {
		err, aerr := ask(ctx, s.cp1, "stage one")
		out.one = aerr == nil && err == nil
		errs = append(errs, aerr, err)
	}
	if s.two {
		d, aerr := ask(ctx, s.cp2, "stage two")
		out.two = d.parts
		errs = append(errs, aerr, d.err)
	}
	out.err = errors.Join(errs...)
	return out
}

// ask hands a reply channel to a stage's loop (ch) and waits for its
// answer; the error is ctx's, named for the stage, when the loop does not
// take the question or answer in time.
func ask[T any](ctx context.Context, ch chan chan T, stage string) (T, error) {
	var zero T
	reply := make(chan T, 1)
	select {
	case ch <- reply:
	case <-ctx.Done():
		return zero, fmt.Errorf("checkpoint: %s is not running yet: %w", stage, ctx.Err())
	}
	select {
	case v := <-reply:
		return v, nil
	case <-ctx.Done():
		return zero, fmt.Errorf("checkpoint: %s: %w", stage, ctx.Err())
	}
}

// written lists the partitions held here whose snapshot is as far as
// their task has read: after a checkpoint round, those it wrote or had
// nothing new for.
func (t *stageTwo) written() []int {
	var out []int
	for part, p := range t.tasks {
		if p.task.Offset() == p.saved {
			out = append(out, part)
		}
	}
	slices.Sort(out)
	return out
}
