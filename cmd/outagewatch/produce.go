package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"

	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/scenario"
	"github.com/outagewatch/outagewatch/service"
)

func init() { extraCommands = append(extraCommands, produceCmd) }

func produceCmd() *cobra.Command {
	var (
		brokers    []string
		cfgFile    string
		o          playOptions
		fastUntil  string
		partitions int
	)
	c := &cobra.Command{
		Use:   "produce FIXTURE|FILE --brokers B | --config F",
		Short: "Play a fixture or a recording into Kafka, each record with its event time as its timestamp",
		Long: `produce renders a fixture (a bundled one by its name, such as
uganda-2021-01-13, or a spec file) or reads a recorded or exported file
(.owrec from ` + "`outagewatch record`" + `, or any file replay reads) and
writes its records into Kafka in event-time order, each with its event time
as the record's timestamp, through the same client the service uses. A
record of stream S goes to the topic --topic-prefix + S ("flows", "bgp",
"dns", "quality"), the names the service's example config gives them;
topics that do not exist are created with --partitions partitions. Keyed
records go to their key's partition, the others round robin. With --config,
produce takes the brokers, TLS and SASL of a service config, and each record
goes to the topic the config binds to its stream (and format).

--speed 0 (the default) writes as fast as the brokers take the records;
--speed N releases them at N times the pace of their event times, from
--fast-until on when it is given (records before it go at once), so a
live service sees the incident arrive as it would have.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfg *service.Config
			if cfgFile != "" {
				var err error
				if cfg, err = service.LoadConfig(cfgFile); err != nil {
					return err
				}
				if len(brokers) == 0 {
					brokers = cfg.Kafka.Brokers
				}
				if o.prefix != "" {
					return errors.New("produce: --topic-prefix names topics without a config; with --config the config names them")
				}
			}
			if len(brokers) == 0 {
				return errors.New("produce: --brokers (or a --config that names them) is required")
			}
			if fastUntil != "" {
				t, err := time.Parse(time.RFC3339, fastUntil)
				if err != nil {
					return fmt.Errorf("produce: --fast-until %q: want an RFC 3339 time such as 2021-01-13T15:00:00Z", fastUntil)
				}
				o.fastUntil = t.UnixNano()
			}
			if err := o.check(); err != nil {
				return fmt.Errorf("produce: %w", err)
			}
			if partitions < 1 {
				return fmt.Errorf("produce: --partitions %d: want at least 1", partitions)
			}
			pl, err := openPlayback(args[0])
			if err != nil {
				return err
			}
			tr := kafkaio.Transport(nil)
			if cfg != nil {
				d, err := cfg.KafkaDialer() // the config's client id, TLS and SASL
				if err != nil {
					return err
				}
				tr = kafkaio.Transport(d)
				if o.topics, err = pl.configTopics(cfg); err != nil {
					return fmt.Errorf("produce: %s: %w", cfgFile, err)
				}
			} else {
				o.topics = pl.prefixTopics(o.prefix)
			}
			defer tr.CloseIdleConnections()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			if err := createTopics(ctx, brokers, tr, o.topicNames(), partitions); err != nil {
				return err
			}
			w := newProducer(brokers, tr)
			defer w.Close()
			st, err := play(ctx, w, pl.src, o, wallClock{})
			st.log(slog.Default(), args[0])
			if ctx.Err() != nil {
				return nil // stopped by a signal: what was written stays written
			}
			return err
		},
	}
	c.Flags().StringSliceVar(&brokers, "brokers", nil, "Kafka bootstrap brokers, host:port, comma-separated")
	c.Flags().StringVarP(&cfgFile, "config", "c", "", "take brokers, TLS, SASL and the topic of each stream from this service config")
	c.Flags().StringVar(&o.prefix, "topic-prefix", "", "prefix of every topic name (the topic of stream S is PREFIX+S)")
	c.Flags().Float64Var(&o.speed, "speed", 0, "release records at this multiple of their event-time pace; 0 writes them as fast as the brokers take them")
	c.Flags().StringVar(&fastUntil, "fast-until", "", "with --speed, write the records before this RFC 3339 time at once and pace only those after it")
	// Three partitions make the service's first stage merge partial
	// buckets from more than one partition, as it does in production.
	c.Flags().IntVar(&partitions, "partitions", 3, "partitions of each topic produce creates")
	return c
}

// playOptions say where records go and how fast.
type playOptions struct {
	prefix string
	// topics is the topic of each stream and format (built from prefix or
	// from a service config before play).
	topics map[streamFormat]string
	// speed is the multiple of real time at which records are released by
	// event time; 0 releases them at once.
	speed float64
	// fastUntil (ns) is the event time before which records go at once
	// whatever the speed; 0 paces from the first record.
	fastUntil int64
}

func (o playOptions) check() error {
	if o.speed < 0 || o.speed != o.speed {
		return fmt.Errorf("--speed %v: want 0 (as fast as possible) or a positive multiple of real time", o.speed)
	}
	if strings.ContainsAny(o.prefix, " /\\") {
		return fmt.Errorf("--topic-prefix %q: a topic name may not contain spaces or slashes", o.prefix)
	}
	return nil
}

// playback is what a fixture or file gives to play: its records in
// event-time order and, for a fixture, its spec.
type playback struct {
	src     replay.Source
	spec    *scenario.Spec // nil for a file
	streams []streamFormat // in order of first appearance
}

// streamFormat is a stream and the format its records are in, which the
// service's topic binding needs.
type streamFormat struct{ stream, format string }

// prefixTopics sends the records of stream S to topic prefix+S, the
// names deploy/outagewatch.yaml gives the topics.
func (p *playback) prefixTopics(prefix string) map[streamFormat]string {
	out := map[streamFormat]string{}
	for _, s := range p.streams {
		out[s] = prefix + s.stream
	}
	return out
}

// configTopics sends each record to the topic cfg binds to its stream and
// format, or to its stream alone when no topic has the format; a stream
// with no topic is an error, before anything is written.
func (p *playback) configTopics(cfg *service.Config) (map[streamFormat]string, error) {
	out := map[streamFormat]string{}
	for _, s := range p.streams {
		for _, t := range cfg.Kafka.Topics {
			if t.Stream == s.stream && (t.Format == s.format || out[s] == "") {
				out[s] = t.Name
			}
		}
		if out[s] == "" {
			return nil, fmt.Errorf("no topic of stream %s (format %s) in kafka.topics: add one, such as {name: %s, stream: %s, format: %s}",
				s.stream, s.format, s.stream, s.stream, s.format)
		}
	}
	return out, nil
}

// topicNames lists the topics records go to, each once, sorted.
func (o playOptions) topicNames() []string {
	var out []string
	for _, t := range o.topics {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// openPlayback renders a fixture (by bundled name or spec file) or opens a
// file that replay reads, and reads through it once to learn its streams,
// so that topics exist before the first record is written.
func openPlayback(arg string) (*playback, error) {
	arg = fixtures.Resolve(arg)
	var srcs []replay.Source
	pl := &playback{}
	if replay.IsFixture(arg) {
		spec, err := loadFixture(arg)
		if err != nil {
			return nil, err
		}
		if srcs, err = replay.RenderSpec(spec); err != nil {
			return nil, err
		}
		pl.spec = spec
	} else {
		s, err := replay.OpenFile(arg)
		if err != nil {
			return nil, err
		}
		if sum, ok := s.(replay.Summarized); ok && sum.Summary().Torn != "" {
			slog.Warn("input cut short: playing the records before the cut", "file", arg, "cut", sum.Summary().Torn)
		}
		srcs = []replay.Source{s}
	}
	recs, err := replay.Collect(srcs...)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Stream == "" {
			return nil, fmt.Errorf("%s: record at offset %d of %s has no stream: the service could not bind its topic to a decoder", arg, r.Offset, r.Topic)
		}
		if !slices.ContainsFunc(pl.streams, func(s streamFormat) bool { return s.stream == r.Stream }) {
			pl.streams = append(pl.streams, streamFormat{r.Stream, r.Format})
		}
	}
	pl.src = replay.NewSliceSource(arg, recs)
	return pl, nil
}

// newProducer is a kafka-go writer that keeps each partition in the order
// records are given: one write at a time, keyed records by key hash.
func newProducer(brokers []string, tr *kafka.Transport) *kafka.Writer {
	w := kafkaio.NewWriter(brokers, "", tr)
	// The topics were created with their partitions beforehand.
	w.AllowAutoTopicCreation = false
	w.BatchSize, w.BatchBytes = maxBatch, 16<<20
	return w
}

// maxBatch bounds the records of one write: enough that writing as fast as
// possible is not one round trip a record, small enough that a write
// never holds more than a few megabytes.
const maxBatch = 2000

// createTopics creates the topics that do not exist yet.
func createTopics(ctx context.Context, brokers []string, tr *kafka.Transport, topics []string, partitions int) error {
	cl := kafkaio.NewClient(brokers, tr)
	req := &kafka.CreateTopicsRequest{}
	for _, t := range topics {
		req.Topics = append(req.Topics, kafka.TopicConfig{Topic: t, NumPartitions: partitions, ReplicationFactor: -1})
	}
	res, err := cl.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("produce: create topics %v: %w", topics, err)
	}
	for t, e := range res.Errors {
		if e != nil && !errors.Is(e, kafka.TopicAlreadyExists) {
			return fmt.Errorf("produce: create topic %s: %w", t, e)
		}
	}
	return nil
}

// playStats counts what play wrote.
type playStats struct {
	records  map[string]int // by topic
	from, to int64          // event times of the first and last record
	elapsed  time.Duration
}

func (s playStats) log(l *slog.Logger, what string) {
	var total int
	topics := make([]string, 0, len(s.records))
	for t, n := range s.records {
		total += n
		topics = append(topics, t)
	}
	slices.Sort(topics)
	args := []any{"input", what, "records", total, "elapsed", s.elapsed.Round(time.Millisecond)}
	for _, t := range topics {
		args = append(args, "topic."+t, s.records[t])
	}
	if total > 0 {
		args = append(args, "from", time.Unix(0, s.from).UTC(), "to", time.Unix(0, s.to).UTC())
	}
	l.Info("produced", args...)
}

// messageWriter is the part of *kafka.Writer that play uses.
type messageWriter interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// clock is what play waits with: the wall clock, or a test's.
type clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (false).
	Sleep(ctx context.Context, d time.Duration) bool
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// play writes every record of src to the topic of its stream, with its
// event time as timestamp, paced as o says: a record whose event time is
// past o.fastUntil is released at wall time start + (time − first) / speed,
// first being the event time of the first paced record. Records due at
// once are written in batches of up to maxBatch; a pending batch is
// written before play waits, so that a record is in Kafka when it is due.
// A ctx that ends stops play with no error: what was written stays.
func play(ctx context.Context, w messageWriter, src replay.Source, o playOptions, clk clock) (st playStats, err error) {
	st = playStats{records: map[string]int{}}
	start := clk.Now()
	defer func() { st.elapsed = clk.Now().Sub(start) }()
	var batch []kafka.Message
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := w.WriteMessages(ctx, batch...); err != nil {
			return fmt.Errorf("produce: write %d records: %w", len(batch), err)
		}
		for _, m := range batch {
			st.records[m.Topic]++
		}
		batch = batch[:0]
		return nil
	}
	var anchorEvent int64
	var anchorWall time.Time
	for {
		r, err := src.Next()
		if err != nil {
			return st, errors.Join(err, flush())
		}
		if r == nil {
			break
		}
		if st.from == 0 {
			st.from = r.Time
		}
		st.to = r.Time
		if o.speed > 0 && r.Time >= o.fastUntil {
			if anchorWall.IsZero() {
				anchorEvent, anchorWall = r.Time, clk.Now()
			}
			due := anchorWall.Add(time.Duration(float64(r.Time-anchorEvent) / o.speed))
			if wait := due.Sub(clk.Now()); wait > 0 {
				if err := flush(); err != nil {
					return st, err
				}
				if !clk.Sleep(ctx, due.Sub(clk.Now())) {
					return st, nil
				}
			}
		}
		topic, ok := o.topics[streamFormat{r.Stream, r.Format}]
		if !ok {
			return st, errors.Join(fmt.Errorf("produce: no topic for stream %s, format %s", r.Stream, r.Format), flush())
		}
		batch = append(batch, message(r, topic))
		if len(batch) >= maxBatch {
			if err := flush(); err != nil {
				return st, err
			}
		}
	}
	return st, flush()
}

// message is the Kafka record of r: its key, value and headers, its event
// time as timestamp (Kafka keeps milliseconds), to topic.
func message(r *ingest.Record, topic string) kafka.Message {
	m := kafka.Message{Topic: topic, Key: r.Key, Value: r.Value, Time: time.Unix(0, r.Time)}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	return m
}
