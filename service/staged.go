package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart/recorder"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/partial"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/rules"
	"github.com/outagewatch/outagewatch/statuspage"
)

// Staged is `outagewatch run --stage 1|2|both`: the service split as a
// Kafka Streams topology. Stage one reads the input partitions it is
// assigned (and every BGP partition, for the routing table) and sends
// each bucket's partials to the internal topic; stage two owns partitions
// of that topic, each with its own pipeline restored from the changelog,
// so any number of instances, killed and restarted at will, raise the
// alerts of one (see docs/deployment.md).
type Staged struct {
	cfg  *Config
	opts Options
	log  *slog.Logger
	one  bool
	two  bool
	// set is the rules in force; rulesVersion counts the reloads
	// (ReloadRules), rulesApplied the last that stage two has bound (it
	// alone writes it, on its goroutine).
	set          atomic.Pointer[rules.Set]
	rulesVersion atomic.Int64
	rulesApplied atomic.Int64
	m            *netmap.Map
	client       *kafka.Client
	// transport is client's: Run closes its connections when it returns.
	transport *kafka.Transport
	disp      *alerting.Dispatcher
	mute      *sharedSilences
	status    *stagedStatus
	// dlq takes stage one's records that do not decode; nil without a
	// dead-letter topic.
	dlq *kafkaio.DeadLetters
	// cp1 and cp2 ask each stage's loop for a checkpoint now (the
	// checkpoint API, through ctl).
	cp1 chan chan error
	cp2 chan chan cpDone
	// ctl reads and writes the control topic: checkpoints of the whole
	// deployment.
	ctl *control
	// page keeps the alert events delivered here, ended ones included,
	// for the outage page.
	page *statuspage.Store
	// view is the deployment's alerts and events (where stage two runs).
	view *deploymentView
	// mapw loads the mapping file again when it changes (WatchMap); nil
	// when not watched. mapApplied is the version of it each stage has
	// swapped into its map (mapStageOne, mapStageTwo).
	mapw       atomic.Pointer[mapWatcher]
	mapApplied [2]atomic.Int64
	// charts keeps the observed values of the series judged here for the
	// outage page's charts (http.chart_history); nil when none are kept.
	charts *recorder.Recorder
}

// Stage names accepted by NewStaged.
const (
	StageOne  = "1"
	StageTwo  = "2"
	StageBoth = "both"
)

// NewStaged builds the stages named by which ("1", "2" or "both").
func NewStaged(cfg *Config, opts Options, which string) (*Staged, error) {
	s := &Staged{cfg: cfg, opts: opts, log: opts.Logger, status: newStagedStatus(),
		cp1: make(chan chan error), cp2: make(chan chan cpDone)}
	s.ctl = newControl(s)
	switch which {
	case StageOne:
		s.one = true
	case StageTwo:
		s.two = true
	case StageBoth:
		s.one, s.two = true, true
	default:
		return nil, fmt.Errorf("--stage %q: want 1, 2 or both", which)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	var err error
	set := opts.Rules
	if set == nil {
		if set, err = loadRules(cfg); err != nil {
			return nil, err
		}
	}
	s.set.Store(set)
	s.m = opts.Map
	if s.m == nil {
		if s.m, err = loadMap(cfg); err != nil {
			return nil, err
		}
	}
	if s.opts.Dialer == nil {
		if s.opts.Dialer, err = cfg.KafkaDialer(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if s.two {
		if err := checkActionRules(cfg, set); err != nil {
			return nil, err
		}
		sinks, err := buildSinks(cfg, filepath.Join(cfg.DataDir, "outbox"))
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, opts.Sinks...)
		for _, sk := range opts.Sinks {
			if st, ok := sk.(*statuspage.Store); ok {
				s.page = st
			}
		}
		if s.page == nil {
			s.page = statuspage.NewStore()
			sinks = append(sinks, s.page)
		}
		if cfg.HTTP.ChartHistory > 0 {
			// Every stage-two task taps its closed buckets into one
			// recorder: the tasks judge disjoint series, so it holds each
			// series of the partitions held here once.
			width := cfg.BucketWidth
			if width <= 0 {
				width = time.Duration(aggregate.DefaultWidth)
			}
			s.charts = recorder.New()
			s.charts.Keep = max(1, int(cfg.HTTP.ChartHistory/width))
		}
		oc := opts.Outbox
		if oc.Logger == nil {
			oc.Logger = s.log
		}
		s.view = newDeploymentView(s)
		if s.mute, err = newSharedSilences(s, cfg.Silences); err != nil {
			return nil, err
		}
		if s.disp, err = alerting.NewDispatcher(alerting.DispatcherConfig{Dir: filepath.Join(cfg.DataDir, "outbox"), Outbox: oc,
			RateLimits: cfg.rateLimits()}, sinks...); err != nil {
			return nil, err
		}
	}
	if s.one {
		// Every configured topic has its records counter from the
		// start. Decode errors and dead letters are labelled by reason
		// too, an open set, so those appear with their first record.
		for _, t := range cfg.Kafka.Topics {
			s.status.met.records.WithLabelValues(t.Name)
		}
	}
	if s.one && cfg.Kafka.DeadLetterTopic != "" {
		s.dlq = kafkaio.NewDeadLetters(cfg.Kafka.Brokers, cfg.Kafka.DeadLetterTopic, s.opts.Dialer)
	}
	s.status.reg.MustRegister(&stagedCollector{s: s})
	s.transport = kafkaio.Transport(s.opts.Dialer)
	s.client = kafkaio.NewClient(cfg.Kafka.Brokers, s.transport)
	return s, nil
}

// pipelineConfig is the pipeline of either stage.
func (s *Staged) pipelineConfig(m *netmap.Map) pipeline.Config {
	pc := s.cfg.judging(s.rules(), m)
	pc.Logger = s.log
	if s.mute != nil {
		pc.Mute = []correlate.Muter{s.mute}
	}
	return pc
}

func (s *Staged) dispatch(ev *alerting.Event) {
	s.view.publish(ev)
	if err := s.disp.Dispatch(ev); err != nil {
		s.status.met.dispatchErrors.Inc()
		s.log.Error("alert not queued", "id", ev.ID, "status", ev.Status, "err", err)
	}
}

// Run runs the stages until ctx ends, then flushes pending alerts
// (bounded). A SIGKILL leaves what the changelog and the committed
// offsets say; the next start, or another instance, goes on from there.
func (s *Staged) Run(ctx context.Context) error {
	srv, err := s.listen()
	if err != nil {
		return err
	}
	defer srv.Close()
	defer s.transport.CloseIdleConnections()
	if s.dlq != nil {
		defer s.dlq.Close()
	}
	go s.probeBrokers(ctx)
	if err := s.createTopics(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	if s.disp != nil {
		s.disp.Start()
		defer func() {
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := s.disp.Flush(fctx); err != nil {
				s.log.Warn("alerts still pending at shutdown; they are on disk and go out on the next start", "err", err)
			}
			cancel()
			s.disp.Close()
		}()
	}
	go s.carrySilences(ctx)
	go s.ctl.follow(ctx)
	if s.mute != nil {
		go s.mute.follow(ctx)
	}
	if s.view != nil {
		go s.view.write(ctx)
		go s.view.follow(ctx)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	if s.one {
		wg.Add(1)
		go func() { defer wg.Done(); errs[0] = s.runStageOne(ctx) }()
	}
	if s.two {
		wg.Add(1)
		go func() { defer wg.Done(); errs[1] = s.runStageTwo(ctx) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createTopics creates the internal topic, the changelog and the
// silence, view and control topics when absent.
func (s *Staged) createTopics(ctx context.Context) error {
	k := s.cfg.Kafka
	return kafkaio.CreateTopics(ctx, s.client, s.log, []kafka.TopicConfig{
		{Topic: k.InternalTopic, NumPartitions: k.InternalPartitions, ReplicationFactor: -1},
		{Topic: k.ChangelogTopic, NumPartitions: k.InternalPartitions, ReplicationFactor: -1, ConfigEntries: kafkaio.Compacted},
		{Topic: k.SilenceTopic, NumPartitions: 1, ReplicationFactor: -1, ConfigEntries: kafkaio.Compacted},
		{Topic: k.ViewTopic, NumPartitions: 1, ReplicationFactor: -1, ConfigEntries: append(slices.Clone(kafkaio.Compacted),
			// Compaction never touches the open segment, which on a topic
			// this quiet the default (7 days) keeps open for a week: an
			// hour lets superseded notifications and swept episodes go
			// within about an hour of their tombstones.
			kafka.ConfigEntry{ConfigName: "segment.ms", ConfigValue: strconv.FormatInt(viewSegment.Milliseconds(), 10)})},
		{Topic: k.ControlTopic, NumPartitions: 1, ReplicationFactor: -1, ConfigEntries: []kafka.ConfigEntry{
			{ConfigName: "cleanup.policy", ConfigValue: "delete"},
			{ConfigName: "retention.ms", ConfigValue: strconv.FormatInt(controlRetention.Milliseconds(), 10)}}},
	})
}

// sources lists what stage two waits for: every partition of every input
// topic but BGP's, as "topic/partition", and "bgp" when BGP is read.
func (s *Staged) sources(ctx context.Context) ([]string, error) {
	var names []string
	bgp := false
	for _, t := range s.cfg.Kafka.Topics {
		if ingest.Ordered(t.Stream) {
			bgp = true
			continue
		}
		names = append(names, t.Name)
	}
	var out []string
	if len(names) > 0 {
		parts, err := s.partitions(ctx, names)
		if err != nil {
			return nil, err
		}
		for _, k := range parts {
			out = append(out, sourceName(k))
		}
	}
	if bgp {
		out = append(out, partial.SourceBGP)
	}
	slices.Sort(out)
	return out, nil
}

// partitions lists the partitions of topics from the brokers' metadata.
func (s *Staged) partitions(ctx context.Context, topics []string) ([]tp, error) {
	ps, err := kafkaio.Partitions(ctx, s.client, topics)
	if err != nil {
		return nil, err
	}
	out := make([]tp, len(ps))
	for i, p := range ps {
		out[i] = tp{p.Topic, p.Partition}
	}
	return out, nil
}

func sourceName(k tp) string { return k.topic + "/" + strconv.Itoa(int(k.part)) }

// produce writes records to one partition of a topic and returns the
// offset of the first (kafkaio.Produce: a retry may write twice, which
// stage two and the changelog restore both tolerate).
func (s *Staged) produce(ctx context.Context, topic string, part int, recs []kafka.Record) (int64, error) {
	return kafkaio.Produce(ctx, s.client, topic, part, recs)
}

// commit commits offsets of a generation with their metadata.
func (s *Staged) commit(ctx context.Context, gen *kafka.Generation, topic string, offs map[int]kafka.OffsetCommit) error {
	if len(offs) == 0 {
		return nil
	}
	var commits []kafka.OffsetCommit
	for _, p := range slices.Sorted(mapsKeys(offs)) {
		commits = append(commits, offs[p])
	}
	err := kafkaio.CommitGroup(ctx, s.client, gen, map[string][]kafka.OffsetCommit{topic: commits})
	if err != nil {
		s.status.met.commitErrors.Inc()
	} else {
		s.status.met.commits.Inc()
	}
	return err
}

// reject counts a stage-one record that did not decode and dead-letters
// it; a gap (an observation with no value) is counted, under its own
// reason, and kept off the dead-letter topic, which is for records that
// need a look.
func (s *Staged) reject(m *kafka.Message, err error) {
	reason := ingest.Reason(err)
	s.status.met.decodeErrors.WithLabelValues(m.Topic, reason).Inc()
	if s.dlq != nil && reason != ingest.ReasonNoValue {
		s.dlq.Add(m, reason, err)
	}
}

// rejectHeld is reject for a BGP record, which the routing table's
// pipeline holds until its bucket closes and decodes only then.
func (s *Staged) rejectHeld(rec *ingest.Record, err error) {
	m := kafka.Message{Topic: rec.Topic, Partition: int(rec.Partition), Offset: rec.Offset,
		Key: rec.Key, Value: rec.Value, Time: time.Unix(0, rec.Time)}
	for _, h := range rec.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	s.reject(&m, err)
}

// flushDeadLetters writes the dead letters gathered so far; an offset or
// a checkpoint that covers a refused record is written only after it.
func (s *Staged) flushDeadLetters(ctx context.Context) error {
	if s.dlq == nil {
		return nil
	}
	return s.dlq.Flush(ctx, s.status.met.deadLetterCounters(), s.log)
}

// committed reads a group's committed offsets and metadata of partitions.
func (s *Staged) committed(ctx context.Context, group string, parts map[string][]int) (map[tp]kafka.OffsetFetchPartition, error) {
	c, err := kafkaio.Committed(ctx, s.client, group, parts)
	if err != nil {
		return nil, err
	}
	out := make(map[tp]kafka.OffsetFetchPartition, len(c))
	for k, v := range c {
		out[tp{k.Topic, k.Partition}] = v
	}
	return out, nil
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// queuePoll is how often a paused reader looks whether its queue has
// room again: a tenth of stage one's tick, a small delay beside the
// bucket it waits for.
const queuePoll = 10 * time.Millisecond

// fetched is a batch of one partition's records, from one generation.
type fetched struct {
	gen  int32
	k    tp
	msgs []kafka.Message
}

// readFrom feeds one partition to out from off until ctx ends, in batches.
// With queued set, it counts the records it sends there and waits while
// the count (less what the reader of out has taken off it) is at
// MaxQueued.
func (s *Staged) readFrom(ctx context.Context, gen int32, k tp, off int64, out chan<- fetched, queued *atomic.Int64) {
	kafkaio.FetchBatches(ctx, s.cfg.Kafka.Brokers, s.opts.Dialer, s.log, k.topic, k.part, off, func(batch []kafka.Message) bool {
		for queued != nil && queued.Load() >= int64(s.cfg.Kafka.MaxQueued) {
			// Paused: the routing table has to move first. A poll, as
			// the table moves in the main loop's own time.
			if kafkaio.Sleep(ctx, queuePoll) != nil {
				return false
			}
		}
		if queued != nil {
			queued.Add(int64(len(batch)))
		}
		select {
		case out <- fetched{gen: gen, k: k, msgs: batch}:
			return true
		case <-ctx.Done():
			return false
		}
	})
}

// joinGroup joins consumer group id on topics; the channel it returns gets
// each generation until ctx ends. name says which stage in the logs.
func (s *Staged) joinGroup(ctx context.Context, id string, topics []string, name string) (*kafka.ConsumerGroup, <-chan *kafka.Generation, error) {
	return kafkaio.JoinGroup(ctx, kafkaio.Group{ID: id, Brokers: s.cfg.Kafka.Brokers, Dialer: s.opts.Dialer, Topics: topics,
		SessionTimeout: s.cfg.Kafka.SessionTimeout, Log: s.log, Name: name, OnError: s.status.met.groupErrors.Inc})
}

// highWatermarks of topics, for telling a caught-up partition.
func (s *Staged) highWatermarks(ctx context.Context, topics []string) (map[tp]int64, error) {
	h, err := kafkaio.HighWatermarks(ctx, s.client, topics)
	if err != nil {
		return nil, err
	}
	out := make(map[tp]int64, len(h))
	for k, v := range h {
		out[tp{k.Topic, k.Partition}] = v
	}
	return out, nil
}

// probeBrokers connects to the brokers every poll interval (backing off
// while they fail), so /readyz says at once that they are gone, or that
// they refuse this instance's credentials. A connection of its own, not a
// request through the shared transport: that one answers metadata from
// its cache for seconds after the brokers are gone, and reports a refused
// SASL handshake as a broker "not available".
func (s *Staged) probeBrokers(ctx context.Context) {
	r := kafkaio.NewRetry()
	for {
		err := kafkaio.DialAny(ctx, s.opts.Dialer, s.cfg.Kafka.Brokers)
		if ctx.Err() != nil {
			return
		}
		wait := s.cfg.Kafka.PollInterval
		s.status.setBroker(err)
		if err != nil {
			wait = max(wait, r.Fail(time.Now(), s.log, "kafka: not ready", err, "why", kafkaio.Trouble(err)))
		} else {
			r.OK(s.log, "kafka reachable")
		}
		if kafkaio.Sleep(ctx, wait) != nil {
			return
		}
	}
}
