package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart/recorder"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/rules"
	"github.com/outagewatch/outagewatch/silence"
)

// Options carry what a config file cannot: the parts a caller (the command,
// a test, an embedding program) builds itself.
type Options struct {
	// Rules and Map override the files named in the config.
	Rules *rules.Set
	Map   *netmap.Map
	// Sinks are added to the ones the config builds.
	Sinks  []alerting.Sink
	Logger *slog.Logger
	// Outbox tunes every sink's outbox (backoff, rate limit).
	Outbox alerting.OutboxConfig
	// Listener serves the HTTP endpoints instead of listening on
	// Config.HTTP.Listen; nil listens there.
	Listener net.Listener
	// Dialer overrides kafka-go's dialer (timeouts, TLS, SASL).
	Dialer *kafka.Dialer
}

type tp struct {
	topic string
	part  int32
}

// partition is the main loop's view of one topic partition.
type partition struct {
	topic          Topic
	part           int32
	next           int64 // next offset to process; -1 before any
	maxTime        int64 // highest event time seen (ns); 0 before any
	hwm            int64 // high watermark last seen; -1 unknown
	lastRecv       time.Time
	assigned       bool
	recordsCounter func() // increments the per-topic record counter
	// committed is the group's committed position, whoever committed it;
	// progressAt is when it last moved (or the partition was last held
	// here), for telling a live holder from none (unheld.go).
	committed  groupOffset
	progressAt time.Time
}

// Service is the single-aggregator service: one pipeline per instance
// over the partitions it is assigned.
//
// Deprecated: `outagewatch run` runs Staged, the per-partition runtime,
// which has everything this has but the mapping file reload and the
// recorded charts of the outage page; Service stays until those move and
// its tests are carried over.
type Service struct {
	cfg  *Config
	opts Options
	log  *slog.Logger
	p    *pipeline.Pipeline
	// charts keeps observed values for the outage page (http.chart_history).
	charts *recorder.Recorder
	disp   *alerting.Dispatcher
	met    *metrics
	srv    *http.Server
	ln     atomic.Pointer[net.Listener] // set once Run listens; read by Addr from any goroutine

	msgs     chan []kafka.Message
	assignCh chan assignReq
	hwmCh    chan polled
	snapReq  chan chan map[tp]int64
	cpReq    chan chan error

	// main-loop state
	parts          map[tp]*partition
	pollSnap       map[tp]int64 // event time of each held partition when the last poll began
	lastAdvance    int64
	lastCheckpoint time.Time
	lastBuckets    int64
	dlq            *deadLetters

	// shared with the endpoints
	brokerOK   atomic.Bool
	assigned   atomic.Bool
	restored   atomic.Bool
	loopBeat   atomic.Int64
	watermark  atomic.Int64
	lastCPWall atomic.Int64
	// unheldReason names the partitions that hold the watermark with no
	// live consumer; nil when there are none.
	unheldReason atomic.Pointer[string]

	genMu sync.Mutex
	gen   *kafka.Generation

	commitCh chan []PartitionState
	client   *kafka.Client // metadata, offsets and commits; set by Run

	kill     chan struct{}
	killOnce sync.Once

	// silences of the config and the API; the pipeline reads them
	silences *silence.Store
}

type assignReq struct {
	gen   *kafka.Generation
	reply chan map[tp]int64
}

// New builds a service from a validated config; nothing touches Kafka until
// Run.
func New(cfg *Config, opts Options) (*Service, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	set := opts.Rules
	var err error
	if set == nil && cfg.Rules != "" {
		if set, err = rules.LoadAll(cfg.resolve(cfg.Rules)); err != nil {
			return nil, err
		}
	}
	m := opts.Map
	if m == nil {
		m = netmap.New()
		if cfg.Map != "" {
			if m, err = netmap.LoadFile(m, cfg.resolve(cfg.Map)); err != nil {
				return nil, err
			}
		}
	}
	if opts.Dialer == nil {
		if opts.Dialer, err = cfg.KafkaDialer(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	s := &Service{
		cfg: cfg, opts: opts, log: log,
		msgs:     make(chan []kafka.Message, 64),
		assignCh: make(chan assignReq),
		hwmCh:    make(chan polled, 1),
		snapReq:  make(chan chan map[tp]int64),
		cpReq:    make(chan chan error),
		commitCh: make(chan []PartitionState, 1),
		parts:    map[tp]*partition{},
		kill:     make(chan struct{}),
	}
	if err := checkActionRules(cfg, set); err != nil {
		return nil, err
	}
	sinks, err := buildSinks(cfg, filepath.Join(cfg.DataDir, "outbox"))
	if err != nil {
		return nil, err
	}
	sinks = append(sinks, opts.Sinks...)
	oc := opts.Outbox
	if oc.Logger == nil {
		oc.Logger = log
	}
	if s.silences, err = silence.Open(filepath.Join(cfg.DataDir, "silences.json"), cfg.Silences); err != nil {
		return nil, err
	}
	if s.disp, err = alerting.NewDispatcher(alerting.DispatcherConfig{Dir: filepath.Join(cfg.DataDir, "outbox"), Outbox: oc,
		RateLimits: cfg.rateLimits()}, sinks...); err != nil {
		return nil, err
	}
	pc := pipeline.Config{
		Aggregate: aggregate.Config{Width: int64(cfg.BucketWidth), Lateness: int64(cfg.Lateness), History: cfg.History},
		Rules:     set, Map: m, LocalASNs: cfg.LocalASNs, Logger: log,
		Events: s.dispatch, Severity: cfg.Correlation.Severity, ZoneOwners: cfg.Correlation.ZoneOwners, GroupWait: cfg.Correlation.groupWait(),
		Mute: []correlate.Muter{s.silences}, Rejected: s.rejectHeld, OneStage: true,
	}
	if cfg.HTTP.ChartHistory > 0 {
		width := cfg.BucketWidth
		if width <= 0 {
			width = time.Duration(aggregate.DefaultWidth)
		}
		s.charts = recorder.New()
		s.charts.Keep = max(1, int(cfg.HTTP.ChartHistory/width))
		pc.Tap = s.charts.Bucket
	}
	if s.p, err = pipeline.New(pc, s.dispatch); err != nil {
		s.disp.Close()
		return nil, err
	}
	// Build every configured decoder now, so that a bad topic fails at start.
	for _, t := range cfg.Kafka.Topics {
		if _, err := s.p.Decoder(t.Stream, t.Format); err != nil {
			s.disp.Close()
			return nil, err
		}
	}
	s.met = newMetrics(s)
	if cfg.Kafka.DeadLetterTopic != "" {
		s.dlq = newDeadLetters(cfg, opts.Dialer)
	}
	if err := s.restore(); err != nil {
		s.disp.Close()
		return nil, err
	}
	return s, nil
}

func (s *Service) dispatch(ev *alerting.Event) {
	if err := s.disp.Dispatch(ev); err != nil {
		s.met.dispatchErrors.Inc()
		s.log.Error("alert not queued", "id", ev.ID, "status", ev.Status, "err", err)
	}
}

// restore loads the checkpoint, if any, into the pipeline and the offsets.
func (s *Service) restore() error {
	cp, err := ReadCheckpoint(s.cfg.DataDir)
	if err != nil {
		return err
	}
	if cp == nil {
		s.log.Info("no checkpoint; starting from the group's committed offsets", "data_dir", s.cfg.DataDir)
		s.restored.Store(true)
		return nil
	}
	if err := s.p.UnmarshalBinary(cp.Pipeline); err != nil {
		return err
	}
	for _, ps := range cp.Partitions {
		t, ok := s.cfg.topic(ps.Topic)
		if !ok {
			continue // topic removed from the config
		}
		p := s.partition(t, ps.Partition)
		p.next, p.maxTime = ps.Next, ps.MaxTime
	}
	s.lastAdvance = s.p.Stats().Watermark
	s.watermark.Store(s.lastAdvance)
	s.lastBuckets = s.p.Stats().BucketsClosed
	s.log.Info("restored checkpoint", "partitions", len(cp.Partitions),
		"watermark", time.Unix(0, s.lastAdvance).UTC(), "written", time.Unix(0, cp.WrittenAt).UTC())
	s.restored.Store(true)
	return nil
}

func (s *Service) partition(t Topic, part int32) *partition {
	k := tp{t.Name, part}
	p := s.parts[k]
	if p == nil {
		p = &partition{topic: t, part: part, next: -1, hwm: -1, committed: groupOffset{offset: -1}, progressAt: time.Now()}
		c := s.met.records.WithLabelValues(t.Name)
		p.recordsCounter = c.Inc
		s.parts[k] = p
	}
	return p
}

// Pipeline returns the pipeline, for stats.
func (s *Service) Pipeline() *pipeline.Pipeline { return s.p }

// Dispatcher returns the alert dispatcher, for stats.
func (s *Service) Dispatcher() *alerting.Dispatcher { return s.disp }

// Addr is the address the HTTP endpoints listen on (after Run started).
func (s *Service) Addr() string {
	ln := s.ln.Load()
	if ln == nil {
		return ""
	}
	return (*ln).Addr().String()
}

// Ready reports whether the service is consuming: state restored, a
// consumer group assignment held, and the brokers answering.
func (s *Service) Ready() (bool, string) {
	switch {
	case !s.restored.Load():
		return false, "restoring checkpoint"
	case !s.brokerOK.Load():
		return false, "kafka brokers unreachable"
	case !s.assigned.Load():
		return false, "no consumer group assignment"
	}
	if why := s.unheldReason.Load(); why != nil {
		return false, *why
	}
	return true, "ok"
}

// Kill stops Run at once, without the final checkpoint, offset commit or
// alert flush: the state on disk is what a SIGKILL would leave. Crash
// recovery tests use it.
func (s *Service) Kill() { s.killOnce.Do(func() { close(s.kill) }) }

// Run consumes until ctx ends, then writes a final checkpoint, commits its
// offsets, flushes pending alerts (bounded) and returns. Broker outages do
// not end Run: it retries with backoff and reports not-ready meanwhile.
func (s *Service) Run(ctx context.Context) error {
	if err := s.listen(); err != nil {
		return err
	}
	defer s.srv.Close()
	s.disp.Start()
	killed := false
	defer func() {
		if !killed {
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := s.disp.Flush(fctx); err != nil {
				s.log.Warn("alerts still pending at shutdown; they are on disk and go out on the next start", "err", err)
			}
			cancel()
		}
		s.disp.Close()
	}()

	kctx, stopKafka := context.WithCancel(context.Background())
	tr := kafkaTransport(s.opts.Dialer)
	defer tr.CloseIdleConnections()
	s.client = &kafka.Client{Addr: kafka.TCP(s.cfg.Kafka.Brokers...), Timeout: 5 * time.Second, Transport: tr}
	var wg sync.WaitGroup
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID: s.cfg.Kafka.GroupID, Brokers: s.cfg.Kafka.Brokers, Dialer: s.opts.Dialer,
		Topics: s.cfg.topicNames(), StartOffset: kafka.FirstOffset,
		SessionTimeout: s.cfg.Kafka.SessionTimeout, HeartbeatInterval: s.cfg.Kafka.SessionTimeout / 5,
		RebalanceTimeout: 2 * s.cfg.Kafka.SessionTimeout, JoinGroupBackoff: time.Second,
		ErrorLogger: kafkaLogger(s.log),
	})
	if err != nil {
		stopKafka()
		return fmt.Errorf("kafka consumer group: %w", err)
	}
	wg.Add(3)
	go func() { defer wg.Done(); s.groupLoop(kctx, cg) }()
	go func() { defer wg.Done(); s.pollLoop(kctx) }()
	go func() { defer wg.Done(); s.commitLoop(kctx) }()
	stop := func() {
		stopKafka()
		cg.Close()
		// Readers blocked on a full channel exit through their context;
		// drain so none waits forever.
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		for {
			select {
			case <-done:
				return
			case <-s.msgs:
			case r := <-s.assignCh:
				close(r.reply)
			case <-time.After(10 * time.Second):
				s.log.Warn("kafka clients slow to stop")
				return
			}
		}
	}

	err = s.loop(ctx)
	if errors.Is(err, errKilled) {
		killed = true
		stop()
		return nil
	}
	// Graceful: checkpoint what was processed, then commit it.
	cerr := s.checkpoint(true)
	if cerr == nil {
		s.commitNow()
	}
	stop()
	if s.dlq != nil {
		s.dlq.close()
	}
	return errors.Join(err, cerr)
}

var errKilled = errors.New("killed")

// loop is the single goroutine that owns the pipeline.
func (s *Service) loop(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	s.lastCheckpoint = time.Now()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.kill:
			return errKilled
		case batch := <-s.msgs:
			now := time.Now()
			for i := range batch {
				s.handle(&batch[i], now)
			}
			// Move the watermark every few thousand records as well as on
			// the ticker, so a busy stream closes buckets promptly.
			if n += len(batch); n >= 4096 {
				n = 0
				s.advance(now)
			}
		case r := <-s.assignCh:
			r.reply <- s.assign(r.gen)
		case pr := <-s.hwmCh:
			s.applyPoll(pr, time.Now())
		case reply := <-s.snapReq:
			reply <- s.readSnapshot()
		case reply := <-s.cpReq:
			reply <- s.checkpoint(true)
		case now := <-tick.C:
			s.loopBeat.Store(now.UnixNano())
			s.advance(now)
			s.updateLag(now)
			st := s.p.Stats()
			due := now.Sub(s.lastCheckpoint) >= s.cfg.CheckpointInterval ||
				st.BucketsClosed != s.lastBuckets && now.Sub(s.lastCheckpoint) >= time.Second
			if due {
				if err := s.checkpoint(false); err != nil {
					s.log.Error("checkpoint failed; offsets not committed, retrying", "err", err)
				} else {
					s.lastBuckets = st.BucketsClosed
				}
			}
		}
		if s.dlq != nil && s.dlq.pending() >= 512 {
			s.dlq.flush(ctx, s.met, s.log)
		}
	}
}

// handle runs one Kafka record through the pipeline.
func (s *Service) handle(m *kafka.Message, now time.Time) {
	t, ok := s.cfg.topic(m.Topic)
	if !ok {
		return
	}
	p := s.partition(t, int32(m.Partition))
	if m.Offset < p.next {
		return // read again after a generation change; already in the state
	}
	rec := ingest.Record{Stream: t.Stream, Format: t.Format, Topic: m.Topic, Partition: int32(m.Partition),
		Offset: m.Offset, Time: m.Time.UnixNano(), Key: m.Key, Value: m.Value}
	if len(m.Headers) > 0 && ingest.Ordered(t.Stream) {
		// Held until its bucket closes; a dead letter made then keeps the
		// headers.
		for _, h := range m.Headers {
			rec.Headers = append(rec.Headers, ingest.Header{Key: h.Key, Value: h.Value})
		}
	}
	if err := s.p.Process(&rec); err != nil {
		s.reject(m, err)
	}
	p.recordsCounter()
	p.next = m.Offset + 1
	p.maxTime = max(p.maxTime, rec.Time)
	p.hwm = max(p.hwm, m.HighWaterMark)
	p.lastRecv = now
}

// reject counts a record that did not decode and dead-letters it.
func (s *Service) reject(m *kafka.Message, err error) {
	reason := ingest.Reason(err)
	s.met.decodeErrors.WithLabelValues(m.Topic, reason).Inc()
	if s.dlq != nil {
		s.dlq.add(m, reason, err)
	}
}

// rejectHeld is reject for a record of an ordered stream (BGP): the
// pipeline holds those until their bucket closes and only then finds that
// one does not decode. The record is part of the checkpointed state until
// then, and its dead letter goes out before the next checkpoint, so it is
// neither lost nor silently skipped.
func (s *Service) rejectHeld(rec *ingest.Record, err error) {
	m := kafka.Message{Topic: rec.Topic, Partition: int(rec.Partition), Offset: rec.Offset,
		Key: rec.Key, Value: rec.Value, Time: time.Unix(0, rec.Time)}
	for _, h := range rec.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	s.reject(&m, err)
}

// globalWatermark is the event time up to which every partition has
// delivered: the minimum over partitions of their highest event time.
// A partition that is caught up (no backlog) and has been silent for
// IdleAfter stops holding it back; if every partition is idle the
// watermark is the highest time seen anywhere, so a quiet stream still
// closes the buckets it has filled. A partition with a backlog or never
// heard from holds it, so a lagging partition cannot close buckets early.
// Partitions held by other instances, or by none, count at the event time
// committed with their offset (see unheld.go).
func (s *Service) globalWatermark(now time.Time) (int64, bool) {
	lo, hi := int64(math.MaxInt64), int64(0)
	// capLo and capHi are lo and hi as of the last poll: a partition held
	// elsewhere that was caught up then may have got records since, so
	// with one of those the watermark goes no further than what was read
	// before that poll.
	capLo, capHi := int64(math.MaxInt64), int64(0)
	anyAssigned, quietRemote := false, false
	for k, p := range s.parts {
		if !p.assigned {
			t, holds := p.remoteTime()
			if !holds {
				quietRemote = true
				continue
			}
			if t == 0 {
				return 0, false
			}
			lo = min(lo, t)
			continue
		}
		anyAssigned = true
		caughtUp := p.hwm >= 0 && (p.next >= p.hwm || p.next < 0 && p.hwm == 0)
		idle := caughtUp && now.Sub(p.lastRecv) >= s.cfg.Kafka.IdleAfter
		hi = max(hi, p.maxTime)
		capHi = max(capHi, s.pollSnap[k])
		if idle {
			continue
		}
		if p.maxTime == 0 {
			return 0, false
		}
		lo = min(lo, p.maxTime)
		capLo = min(capLo, s.pollSnap[k])
	}
	if !anyAssigned || hi == 0 {
		return 0, false
	}
	if lo == math.MaxInt64 {
		lo, capLo = hi, capHi
	}
	if quietRemote {
		lo = min(lo, capLo)
	}
	return lo, lo > 0
}

func (s *Service) advance(now time.Time) {
	s.trackUnheld(now)
	wm, ok := s.globalWatermark(now)
	if !ok {
		return
	}
	wm -= s.p.Aggregator().Config().Lateness
	if wm <= s.lastAdvance {
		return
	}
	s.p.Advance(wm)
	s.lastAdvance = wm
	s.watermark.Store(wm)
}

// assign records a new generation's partitions and returns where each
// reader starts: the offset this instance has processed up to (from the
// checkpoint or from memory) wins over the group's committed offset, which
// may be behind it.
func (s *Service) assign(gen *kafka.Generation) map[tp]int64 {
	now := time.Now()
	for _, p := range s.parts {
		if p.assigned {
			p.progressAt = now // given up now; its new holder has until stallAfter to commit
		}
		p.assigned = false
	}
	out := map[tp]int64{}
	for topic, as := range gen.Assignments {
		t, ok := s.cfg.topic(topic)
		if !ok {
			continue
		}
		for _, a := range as {
			p := s.partition(t, int32(a.ID))
			p.assigned = true
			p.lastRecv = now
			start := a.Offset
			if p.next >= 0 {
				start = p.next
			}
			out[tp{topic, int32(a.ID)}] = start
		}
	}
	return out
}

func (s *Service) updateLag(now time.Time) {
	for _, p := range s.parts {
		if !p.assigned || p.hwm < 0 {
			continue
		}
		lag := p.hwm - max(p.next, 0)
		s.met.lag.WithLabelValues(p.topic.Name, itoa(int(p.part))).Set(float64(max(lag, 0)))
	}
	if wm := s.watermark.Load(); wm > 0 {
		s.met.watermarkAge.Set(now.Sub(time.Unix(0, wm)).Seconds())
	}
}

// checkpoint writes the state and hands its offsets to the committer. The
// dead letters of records before the offsets go out first: once the offsets
// are committed those records are never read again.
func (s *Service) checkpoint(final bool) error {
	if s.dlq != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.dlq.flush(ctx, s.met, s.log)
		cancel()
		if err != nil {
			s.met.checkpointErrors.Inc()
			return fmt.Errorf("dead letters not written, checkpoint deferred: %w", err)
		}
	}
	pb, err := s.p.MarshalBinary()
	if err != nil {
		s.met.checkpointErrors.Inc()
		return err
	}
	cp := &Checkpoint{Pipeline: pb, WrittenAt: time.Now().UnixNano()}
	var offsets []PartitionState
	for _, p := range s.parts {
		if p.next < 0 {
			continue
		}
		ps := PartitionState{Topic: p.topic.Name, Partition: p.part, Next: p.next, MaxTime: p.maxTime}
		cp.Partitions = append(cp.Partitions, ps)
		if p.assigned {
			// Only a partition held now is committed: one held elsewhere
			// has its holder's offset, which this one must not overwrite.
			offsets = append(offsets, ps)
		}
	}
	start := time.Now()
	if err := WriteCheckpoint(s.cfg.DataDir, cp); err != nil {
		s.met.checkpointErrors.Inc()
		return err
	}
	s.lastCheckpoint = time.Now()
	s.met.checkpoints.Inc()
	s.met.checkpointSeconds.Observe(time.Since(start).Seconds())
	s.lastCPWall.Store(s.lastCheckpoint.UnixNano())
	if final {
		s.log.Info("checkpoint written", "partitions", len(cp.Partitions), "bytes", len(pb))
	}
	// Latest offsets win; an older pending set is replaced.
	select {
	case <-s.commitCh:
	default:
	}
	s.commitCh <- offsets
	return nil
}

// commitLoop commits checkpointed offsets to the group, off the main loop
// so a slow broker does not stall processing. A failed commit is harmless:
// the checkpoint's offsets are authoritative on restart.
func (s *Service) commitLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case off := <-s.commitCh:
			s.commit(off)
		}
	}
}

func (s *Service) commit(off []PartitionState) {
	s.genMu.Lock()
	gen := s.gen
	s.genMu.Unlock()
	if gen == nil || len(off) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := commitOffsets(ctx, s.client, gen, off); err != nil {
		s.met.commitErrors.Inc()
		s.log.Warn("offset commit failed; the checkpoint still holds the offsets", "err", err)
		return
	}
	s.met.commits.Inc()
}

// commitNow commits the pending offsets synchronously (shutdown).
func (s *Service) commitNow() {
	select {
	case off := <-s.commitCh:
		s.commit(off)
	default:
	}
}

// Checkpoint asks the running service for a checkpoint now.
func (s *Service) Checkpoint(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case s.cpReq <- reply:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// groupLoop follows the consumer group's generations and runs one reader
// per assigned partition in each.
func (s *Service) groupLoop(ctx context.Context, cg *kafka.ConsumerGroup) {
	for {
		gen, err := cg.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				return
			}
			s.met.groupErrors.Inc()
			s.log.Warn("consumer group: retrying", "err", err)
			continue // the group backs off by itself
		}
		reply := make(chan map[tp]int64, 1)
		select {
		case s.assignCh <- assignReq{gen, reply}:
		case <-ctx.Done():
			return
		}
		starts, ok := <-reply
		if !ok {
			return
		}
		s.genMu.Lock()
		s.gen = gen
		s.genMu.Unlock()
		s.assigned.Store(len(starts) > 0)
		s.log.Info("consumer group generation", "id", gen.ID, "partitions", len(starts))
		gen.Start(func(gctx context.Context) {
			select {
			case <-gctx.Done():
			case <-ctx.Done():
			}
			s.genMu.Lock()
			if s.gen == gen {
				s.gen = nil
				s.assigned.Store(false)
			}
			s.genMu.Unlock()
		})
		for k, off := range starts {
			gen.Start(func(gctx context.Context) { s.readPartition(ctx, gctx, k, off) })
		}
	}
}

// readPartition feeds one partition to the main loop until the generation
// or the service ends. kafka-go reconnects by itself when the broker goes
// away; the reader just keeps asking.
func (s *Service) readPartition(ctx, gctx context.Context, k tp, off int64) {
	rctx, cancel := context.WithCancel(gctx)
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
			cancel()
		case <-rctx.Done():
		}
	}()
	fetchBatches(rctx, s.cfg, s.opts.Dialer, s.log, k, off, func(batch []kafka.Message) bool {
		select {
		case s.msgs <- batch:
			return true
		case <-rctx.Done():
			return false
		}
	})
}

// fetchBatches reads one partition from off until ctx ends or send refuses
// a batch. Messages travel in batches: one channel hand-over per batch
// instead of per message. A batch closes when full or when the partition
// has nothing more within a few milliseconds.
func fetchBatches(ctx context.Context, cfg *Config, dialer *kafka.Dialer, log *slog.Logger, k tp, off int64, send func([]kafka.Message) bool) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: cfg.Kafka.Brokers, Topic: k.topic, Partition: int(k.part), Dialer: dialer,
		MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, QueueCapacity: 1024,
		ReadBackoffMin: 100 * time.Millisecond, ReadBackoffMax: 2 * time.Second,
		ErrorLogger: kafkaLogger(log),
	})
	defer r.Close()
	if err := r.SetOffset(off); err != nil {
		log.Error("set offset", "topic", k.topic, "partition", k.part, "offset", off, "err", err)
		return
	}
	const batchMax, batchWait = 512, 5 * time.Millisecond
	retry := newRetry()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if sleepCtx(ctx, retry.fail(time.Now(), log, "fetch: retrying", err, "topic", k.topic, "partition", k.part)) != nil {
				return
			}
			continue
		}
		retry.ok(log, "fetch: reading again")
		batch := make([]kafka.Message, 1, batchMax)
		batch[0] = m
		bctx, cancel := context.WithTimeout(ctx, batchWait)
		for len(batch) < batchMax {
			m, err := r.FetchMessage(bctx)
			if err != nil {
				break // the batch wait is over (or the reader is stopping)
			}
			batch = append(batch, m)
		}
		cancel()
		if !send(batch) {
			return
		}
	}
}

// pollLoop reads the high watermark of every partition of the configured
// topics: consumer lag, whether a silent partition is caught up, and
// whether the brokers answer at all (readiness).
func (s *Service) pollLoop(ctx context.Context) {
	client := s.client
	fails := 0
	for {
		snap, err := s.snapshot(ctx)
		if err != nil {
			return
		}
		h, err := highWatermarks(ctx, client, s.cfg.topicNames())
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fails++
			if s.brokerOK.Swap(false) || fails == 1 {
				s.log.Warn("kafka unreachable; not ready", "err", err)
			}
		} else {
			if !s.brokerOK.Swap(true) {
				s.log.Info("kafka reachable")
			}
			fails = 0
			pr := polled{hwm: h, snap: snap}
			if pr.committed, err = committedOffsets(ctx, client, s.cfg.Kafka.GroupID, h); err != nil {
				s.log.Debug("committed offsets not read", "err", err)
			}
			select {
			case <-s.hwmCh:
			default:
			}
			s.hwmCh <- pr
		}
		wait := s.cfg.Kafka.PollInterval
		if fails > 0 {
			wait = min(wait*time.Duration(1<<min(fails-1, 4)), 30*time.Second)
		}
		if sleepCtx(ctx, wait) != nil {
			return
		}
	}
}

func highWatermarks(ctx context.Context, c *kafka.Client, topics []string) (map[tp]int64, error) {
	md, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, err
	}
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for _, t := range md.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			req.Topics[t.Name] = append(req.Topics[t.Name], kafka.LastOffsetOf(p.ID))
		}
	}
	res, err := c.ListOffsets(ctx, req)
	if err != nil {
		return nil, err
	}
	out := map[tp]int64{}
	for t, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("topic %s partition %d: %w", t, p.Partition, p.Error)
			}
			out[tp{t, int32(p.Partition)}] = p.LastOffset
		}
	}
	return out, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kafkaLogger routes kafka-go's error log to slog at debug level: the
// service reports outages itself (readiness, one warning), and kafka-go
// repeats each retry.
func kafkaLogger(log *slog.Logger) kafka.LoggerFunc {
	return func(msg string, args ...any) {
		log.Debug("kafka-go: " + fmt.Sprintf(msg, args...))
	}
}
