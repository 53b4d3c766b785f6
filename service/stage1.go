package service

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
	"github.com/outagewatch/outagewatch/partial"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/stage"
)

// flushedMeta prefixes the metadata committed with a stage-one offset: the
// end of the last bucket the partition flushed. A restart reads from the
// offset (the first record of the oldest bucket still open) and skips the
// records of flushed buckets, so its re-flush of a bucket is identical.
const flushedMeta = "flushed="

// maxBatchesPerStep bounds the fetch batches stage one takes in before it
// steps: 64 batches of up to 512 records is half the default
// max_queued_records, so a step still comes before the readers pause.
const maxBatchesPerStep = 64

// msgQueue is a partition's fetched records in order, kept as the batches
// the reader sent: a batch joins the queue without its records being
// copied, where one flat slice copied every record (a kafka.Message is
// some 150 bytes) each time it grew, and that copying cost stage one more
// than decoding the records did.
type msgQueue struct {
	batches [][]kafka.Message
	n       int
}

func (q *msgQueue) push(b []kafka.Message) {
	if len(b) > 0 {
		q.batches = append(q.batches, b)
		q.n += len(b)
	}
}

func (q *msgQueue) len() int { return q.n }

// front is the oldest record, nil when the queue is empty.
func (q *msgQueue) front() *kafka.Message {
	if q.n == 0 {
		return nil
	}
	return &q.batches[0][0]
}

// pop drops the oldest record; a batch emptied is let go, so the records
// processed are not kept alive by its array.
func (q *msgQueue) pop() {
	q.n--
	if q.batches[0] = q.batches[0][1:]; len(q.batches[0]) == 0 {
		q.batches[0] = nil
		if q.batches = q.batches[1:]; len(q.batches) == 0 {
			q.batches = nil
		}
	}
}

// bgpGen tags records of the routing table's partitions, which every
// instance reads whole, outside the group.
const bgpGen = -1

// s1Part is stage one's task of one input partition.
type s1Part struct {
	k        tp
	topic    Topic
	p        *pipeline.Pipeline // nil for a BGP partition: they share one
	next     int64              // next offset to process
	maxTime  int64              // highest event time processed
	hwm      int64              // high watermark; -1 unknown
	lastRecv time.Time
	records  prometheus.Counter
	counted  int64 // next offset the records counter counts
	recvTime int64 // highest event time received, queued or processed
	// queued counts the records sent by the partition's reader and not
	// yet processed (in flight or in queue), for the reader to pause at
	// MaxQueued; nil for BGP, whose records are processed at once.
	queued *atomic.Int64
	// queue holds records fetched but not yet processed: a bucket's
	// records wait until the routing table has been brought to its start,
	// so they are attributed with the table of that moment wherever they
	// are read.
	queue msgQueue
	// flushed is the end of the last bucket sent; open the offset of the
	// first record of each bucket still open.
	flushed int64
	open    map[int64]int64
	// pending are records of a flush not yet written (a broker error);
	// nothing more is flushed or committed until they are.
	pending map[int][]rawRecord
}

// rawRecord is a record to produce; kafka.Record values are readers, used
// up by a failed attempt.
type rawRecord struct{ key, value []byte }

type stageOne struct {
	s      *Staged
	router *stage.Router
	width  int64
	late   int64
	group  string
	gen    *kafka.Generation
	parts  map[tp]*s1Part // input partitions of the current generation
	bgp    map[tp]*s1Part
	bgpP   *pipeline.Pipeline
	// bgpFlushed is the end of the last bucket of the routing table sent.
	bgpFlushed int64
	bgpPending map[int][]rawRecord
	bgpSaved   time.Time
	// wr paces writes to the internal topic while they fail: step runs on
	// every batch received and every tick, far more often than a lost
	// broker should be asked.
	wr *kafkaio.Retry
}

// bgpCheckpoint is the routing table's state in the data dir: the BGP
// pipeline (table, held updates, open buckets) with the offsets it has
// read, so a restart goes on from there instead of from the start.
type bgpCheckpoint struct {
	Pipeline []byte
	Next     map[string]int64
	MaxTime  map[string]int64
	Flushed  int64
}

func (o *stageOne) bgpFile() string { return filepath.Join(o.s.cfg.DataDir, "stage1-bgp.checkpoint") }

// saveBGP writes the routing table's checkpoint; never while a flush of it
// is unwritten, since the checkpoint says it was sent.
func (o *stageOne) saveBGP(ctx context.Context) error {
	if len(o.bgp) == 0 {
		return nil
	}
	if len(o.bgpPending) > 0 {
		return errors.New("stage one: routing table checkpoint waits for its flush to be written")
	}
	// The checkpoint passes the held records it rejected: their dead
	// letters first.
	if err := o.s.flushDeadLetters(ctx); err != nil {
		o.s.log.Warn("stage one: routing table checkpoint not written", "err", err)
		return err
	}
	cp := bgpCheckpoint{Next: map[string]int64{}, MaxTime: map[string]int64{}, Flushed: o.bgpFlushed}
	for k, p := range o.bgp {
		if p.queue.len() > 0 {
			return nil // taken on the next tick, once processed
		}
		cp.Next[sourceName(k)], cp.MaxTime[sourceName(k)] = p.next, p.maxTime
	}
	var err error
	if cp.Pipeline, err = o.bgpP.MarshalBinary(); err == nil {
		var buf bytes.Buffer
		if err = gob.NewEncoder(&buf).Encode(&cp); err == nil {
			err = writeCache(o.bgpFile(), 0, buf.Bytes())
		}
	}
	if err != nil {
		o.s.log.Warn("stage one: routing table checkpoint not written", "err", err)
	}
	return err
}

// loadBGP restores the routing table's checkpoint, if any.
func (o *stageOne) loadBGP() error {
	_, b, err := readCache(o.bgpFile())
	if errors.Is(err, os.ErrNotExist) {
		o.s.log.Info("stage one: no routing table checkpoint; reading BGP from the start", "data_dir", o.s.cfg.DataDir)
		return nil
	}
	if err != nil {
		return err
	}
	var cp bgpCheckpoint
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&cp); err != nil {
		return fmt.Errorf("%s: %w", o.bgpFile(), err)
	}
	if err := o.bgpP.UnmarshalBinary(cp.Pipeline); err != nil {
		return fmt.Errorf("%s: %w", o.bgpFile(), err)
	}
	for k, p := range o.bgp {
		p.next, p.maxTime = cp.Next[sourceName(k)], cp.MaxTime[sourceName(k)]
	}
	o.bgpFlushed = cp.Flushed
	return nil
}

func (s *Staged) runStageOne(ctx context.Context) error {
	pc := s.pipelineConfig(s.m)
	pc.Rejected = s.rejectHeld
	o := &stageOne{s: s, router: stage.NewRouter(s.m, s.cfg.Correlation.ZoneOwners, s.cfg.Kafka.InternalPartitions),
		group: s.cfg.Kafka.GroupID + "-stage1", parts: map[tp]*s1Part{}, bgp: map[tp]*s1Part{}, wr: kafkaio.NewRetry()}
	var inputs, bgpTopics []string
	for _, t := range s.cfg.Kafka.Topics {
		if ingest.Ordered(t.Stream) {
			bgpTopics = append(bgpTopics, t.Name)
		} else {
			inputs = append(inputs, t.Name)
		}
	}
	// newBGP builds the routing table's pipeline with its decoders.
	newBGP := func() error {
		var err error
		if o.bgpP, err = pipeline.New(pc, nil); err != nil {
			return err
		}
		for _, t := range s.cfg.Kafka.Topics {
			if ingest.Ordered(t.Stream) {
				if _, err := o.bgpP.Decoder(t.Stream, t.Format); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := newBGP(); err != nil {
		return err
	}
	cfg := o.bgpP.Aggregator().Config()
	o.width, o.late = cfg.Width, cfg.Lateness
	msgs := make(chan fetched, 64)
	kctx, stop := context.WithCancel(ctx)
	defer stop()
	if len(bgpTopics) > 0 {
		parts, err := s.partitions(ctx, bgpTopics)
		if err != nil {
			return err
		}
		// The routing table is global: every instance reads all of it from
		// the start, as a GlobalKTable.
		for _, k := range parts {
			t, _ := s.cfg.topic(k.topic)
			o.bgp[k] = &s1Part{k: k, topic: t, hwm: -1, lastRecv: time.Now(), records: s.status.met.records.WithLabelValues(k.topic)}
		}
		if err := o.loadBGP(); err != nil {
			// The next good copy of the table is the BGP topic itself,
			// read whole from its start: slower, never wrong.
			s.log.Warn("stage one: routing table checkpoint does not restore; reading BGP from the start", "err", err)
			if err := newBGP(); err != nil {
				return err
			}
			for _, p := range o.bgp {
				p.next, p.maxTime = 0, 0
			}
			o.bgpFlushed = 0
		}
		// The table just restored is the checkpoint on disk (or there is
		// none yet worth writing): the first is due one interval on. Written
		// at the first tick, the whole table was encoded for nothing.
		o.bgpSaved = time.Now()
		for k, p := range o.bgp {
			off := p.next
			if off == 0 {
				off = kafka.FirstOffset
			}
			go s.readFrom(kctx, bgpGen, k, off, msgs, nil)
		}
	}
	var gens <-chan *kafka.Generation
	if len(inputs) > 0 {
		cg, g, err := s.joinGroup(kctx, o.group, inputs, "stage one")
		if err != nil {
			return err
		}
		defer cg.Close()
		gens = g
	}
	hwms := make(chan map[tp]int64, 1)
	go func() {
		for {
			if h, err := s.highWatermarks(kctx, append(inputs, bgpTopics...)); err == nil {
				select {
				case <-hwms:
				default:
				}
				hwms <- h
			}
			if kafkaio.Sleep(kctx, s.cfg.Kafka.PollInterval) != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = o.saveBGP(fctx)
			cancel()
			return nil
		case gen := <-gens:
			o.assign(ctx, gen, msgs)
		case h := <-hwms:
			for k, v := range h {
				if p := o.part(k); p != nil {
					p.hwm = v
				}
			}
		case f := <-msgs:
			o.receive(f)
			// Take what else the readers have sent before stepping: a
			// step may write to every internal partition, a round trip
			// each, and stepping once per fetch batch made those writes,
			// not the records, what stage one spends its time on.
			for n := 1; n < maxBatchesPerStep; n++ {
				select {
				case f := <-msgs:
					o.receive(f)
					continue
				default:
				}
				break
			}
			o.step(ctx)
		case reply := <-s.cp1:
			o.step(ctx)
			reply <- o.saveBGP(ctx)
		case now := <-tick.C:
			o.step(ctx)
			if now.Sub(o.bgpSaved) >= s.cfg.CheckpointInterval {
				_ = o.saveBGP(ctx)
				o.bgpSaved = now
			}
			o.observeLag()
		}
	}
}

func (o *stageOne) part(k tp) *s1Part {
	if p, ok := o.bgp[k]; ok {
		return p
	}
	return o.parts[k]
}

// assign starts the tasks of a generation: each input partition from its
// committed offset, skipping the buckets its metadata says were flushed.
func (o *stageOne) assign(ctx context.Context, gen *kafka.Generation, msgs chan fetched) {
	s := o.s
	o.gen = gen
	o.parts = map[tp]*s1Part{}
	req := map[string][]int{}
	for topic, as := range gen.Assignments {
		for _, a := range as {
			req[topic] = append(req[topic], a.ID)
		}
	}
	committed, err := s.committed(ctx, o.group, req)
	if err != nil {
		s.log.Warn("stage one: committed offsets not read; starting the partitions from their group offsets", "err", err)
	}
	for topic, as := range gen.Assignments {
		t, ok := s.cfg.topic(topic)
		if !ok {
			continue
		}
		for _, a := range as {
			k := tp{topic, int32(a.ID)}
			p, err := pipeline.New(s.pipelineConfig(s.m), nil)
			if err == nil {
				_, err = p.Decoder(t.Stream, t.Format)
			}
			if err != nil {
				s.log.Error("stage one: task not built", "partition", sourceName(k), "err", err)
				continue
			}
			pt := &s1Part{k: k, topic: t, p: p, hwm: -1, lastRecv: time.Now(), open: map[int64]int64{}, queued: new(atomic.Int64),
				records: s.status.met.records.WithLabelValues(k.topic)}
			off := a.Offset
			if c, ok := committed[k]; ok && c.CommittedOffset >= 0 {
				off = c.CommittedOffset
				if v, ok := strings.CutPrefix(c.Metadata, flushedMeta); ok {
					pt.flushed, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			pt.next = max(off, 0)
			o.parts[k] = pt
			gid := gen.ID
			gen.Start(func(gctx context.Context) { s.readFrom(gctx, gid, k, off, msgs, pt.queued) })
		}
	}
	s.status.held1.Set(float64(len(o.parts)))
	s.status.assigned[0].Store(true)
	s.log.Info("stage one: generation", "id", gen.ID, "partitions", len(o.parts))
}

func (o *stageOne) receive(f fetched) {
	var p *s1Part
	if f.gen == bgpGen {
		p = o.bgp[f.k]
	} else if o.gen != nil && f.gen == o.gen.ID {
		p = o.parts[f.k]
	}
	if p == nil {
		return // a generation that has ended
	}
	p.queue.push(f.msgs)
	for i := range f.msgs {
		p.recvTime = max(p.recvTime, f.msgs[i].Time.UnixNano())
		if off := f.msgs[i].Offset; off >= max(p.next, p.counted) {
			p.records.Inc()
			p.counted = off + 1
		}
	}
	p.lastRecv = time.Now()
	if n := len(f.msgs); n > 0 {
		p.hwm = max(p.hwm, f.msgs[n-1].HighWaterMark)
	}
}

// step processes what may be processed, then flushes what may be flushed:
// the routing table first, up to where every input partition of this
// instance has processed, and the records that were waiting for it, again
// while the table moves on; then each partition up to its own watermark.
// The flushes of one step go out in one write per internal partition.
func (o *stageOne) step(ctx context.Context) {
	now := time.Now()
	o.s.reloadMap(mapStageOne, o.s.m)
	// The routing table: records in event-time order, held by the pipeline
	// until their bucket closes.
	for _, p := range o.bgp {
		for m := p.queue.front(); m != nil; m = p.queue.front() {
			o.process(o.bgpP, p, m)
			p.queue.pop()
		}
	}
	for {
		o.processInputs()
		if len(o.bgp) == 0 || !o.advanceBGP(now) {
			break
		}
	}
	if len(o.bgpPending) > 0 && o.write(ctx, o.bgpPending) == nil {
		o.bgpPending = nil
	}
	o.s.status.queued.Set(float64(o.queuedRecords()))
	instMax := o.instMax()
	for _, p := range o.parts {
		wm := p.maxTime - o.late
		if o.idle(p, now) {
			wm = instMax - o.late
		}
		if wm > 0 {
			o.flushPart(ctx, p, wm)
		}
	}
}

// processInputs processes the queued records of input partitions whose
// bucket the routing table has reached.
func (o *stageOne) processInputs() {
	for _, p := range o.parts {
		i := 0
		for m := p.queue.front(); m != nil; m = p.queue.front() {
			t := m.Time.UnixNano()
			if len(o.bgp) > 0 && t-t%o.width > o.bgpFlushed {
				break // its bucket waits for the routing table
			}
			o.process(p.p, p, m)
			p.queue.pop()
			i++
		}
		p.queued.Add(-int64(i))
	}
}

func (o *stageOne) instMax() int64 {
	m := int64(0)
	for _, p := range o.bgp {
		m = max(m, p.maxTime)
	}
	for _, p := range o.parts {
		m = max(m, p.maxTime)
	}
	return m
}

// queuedRecords counts the input records waiting for the routing table.
func (o *stageOne) queuedRecords() int {
	n := 0
	for _, p := range o.parts {
		n += p.queue.len()
	}
	return n
}

// recvMax is the highest event time received here, queued or processed.
func (o *stageOne) recvMax() int64 {
	m := o.instMax()
	for _, p := range o.parts {
		m = max(m, p.recvTime)
	}
	return m
}

// advanceBGP flushes the routing table as far as it may go, into
// bgpPending; false when it cannot move.
func (o *stageOne) advanceBGP(now time.Time) bool {
	// An idle routing table moves with the latest record received, not
	// processed: input records wait in their queues for the table, so
	// the time processed cannot pass it, and a quiet BGP feed would hold
	// every bucket.
	wm, ok := o.watermark(o.bgp, now, o.recvMax())
	if !ok {
		return false
	}
	// Not into a bucket an input partition here still has records of:
	// those are attributed with the table as of the bucket's start.
	for _, p := range o.parts {
		if m := p.queue.front(); m != nil {
			t := m.Time.UnixNano()
			wm = min(wm, t-t%o.width)
		} else if !o.caughtUp(p) {
			wm = min(wm, p.maxTime-p.maxTime%o.width)
		}
	}
	through := wm - wm%o.width
	if through <= o.bgpFlushed {
		return false
	}
	recs, err := o.flush(o.bgpP, partial.SourceBGP, through)
	if err != nil {
		o.s.log.Error("stage one: routing table not flushed", "err", err)
	}
	o.bgpFlushed = through
	if o.bgpPending == nil {
		o.bgpPending = map[int][]rawRecord{}
	}
	for part, rs := range recs {
		o.bgpPending[part] = append(o.bgpPending[part], rs...)
	}
	return true
}

func (o *stageOne) process(pl *pipeline.Pipeline, p *s1Part, m *kafka.Message) {
	if m.Offset < p.next {
		return
	}
	t := m.Time.UnixNano()
	p.next = m.Offset + 1
	if p.p != nil && t < p.flushed {
		return // a bucket flushed before the restart
	}
	rec := ingest.Record{Stream: p.topic.Stream, Format: p.topic.Format, Topic: m.Topic, Partition: int32(m.Partition),
		Offset: m.Offset, Time: t, Key: m.Key, Value: m.Value}
	if p.p == nil {
		// Held until its bucket closes; a dead letter made then keeps the
		// headers.
		for _, h := range m.Headers {
			rec.Headers = append(rec.Headers, ingest.Header{Key: h.Key, Value: h.Value})
		}
	}
	if p.p != nil {
		if b := t - t%o.width; b >= p.flushed {
			if _, ok := p.open[b]; !ok {
				p.open[b] = m.Offset
			}
		}
	}
	if err := pl.Process(&rec); err != nil {
		o.s.reject(m, err)
	}
	p.maxTime = max(p.maxTime, t)
}

// observeLag sets the consumer lag of every partition read here.
func (o *stageOne) observeLag() {
	for _, ps := range []map[tp]*s1Part{o.bgp, o.parts} {
		for k, p := range ps {
			if p.hwm >= 0 {
				o.s.status.met.lag.WithLabelValues(k.topic, strconv.Itoa(int(k.part))).Set(float64(max(0, p.hwm-p.next)))
			}
		}
	}
}

func (o *stageOne) caughtUp(p *s1Part) bool {
	return p.queue.len() == 0 && p.hwm >= 0 && p.next >= p.hwm
}

func (o *stageOne) idle(p *s1Part, now time.Time) bool {
	return o.caughtUp(p) && now.Sub(p.lastRecv) >= o.s.cfg.Kafka.IdleAfter
}

// watermark of a set of partitions read whole: the least event time of
// those not idle, less the lateness; instMax when all are idle.
func (o *stageOne) watermark(parts map[tp]*s1Part, now time.Time, instMax int64) (int64, bool) {
	lo := int64(math.MaxInt64)
	for _, p := range parts {
		if o.idle(p, now) {
			continue
		}
		if p.maxTime == 0 {
			return 0, false
		}
		lo = min(lo, p.maxTime)
	}
	if lo == math.MaxInt64 {
		lo = instMax
	}
	return lo - o.late, lo > 0
}

func (o *stageOne) flushPart(ctx context.Context, p *s1Part, wm int64) {
	if len(p.pending) > 0 {
		if o.write(ctx, p.pending) != nil {
			return
		}
		p.pending = nil
		o.commitPart(ctx, p)
	}
	through := wm - wm%o.width
	if through <= p.flushed {
		return
	}
	recs, err := o.flush(p.p, sourceName(p.k), through)
	if err != nil {
		o.s.log.Error("stage one: partition not flushed", "partition", sourceName(p.k), "err", err)
	}
	p.flushed = through
	for b := range p.open {
		if b+o.width <= through {
			delete(p.open, b)
		}
	}
	if o.write(ctx, recs) != nil {
		p.pending = recs
		return
	}
	o.commitPart(ctx, p)
}

// flush takes a pipeline's buckets up to through as records per internal
// partition: the batches of each route key, then a marker to every
// partition.
func (o *stageOne) flush(pl *pipeline.Pipeline, source string, through int64) (map[int][]rawRecord, error) {
	out := map[int][]rawRecord{}
	var feeds []partial.FeedCount
	var errs []error
	add := func(part int, key string, r *partial.Record) {
		b, err := partial.Encode(r)
		if err != nil {
			errs = append(errs, err)
			return
		}
		out[part] = append(out[part], rawRecord{[]byte(key), b})
	}
	err := pl.Flush(through, func(f *aggregate.Flushed) {
		for _, rb := range stage.Split(source, f, o.router) {
			add(rb.Partition, rb.Batch.Key, &partial.Record{Batch: rb.Batch})
		}
		feeds = append(feeds, stage.FeedCounts(f)...)
	})
	if err != nil {
		errs = append(errs, err)
	}
	for i := range o.router.Partitions() {
		add(i, "marker/"+source, &partial.Record{Marker: &partial.Marker{Source: source, Through: through, Feeds: feeds}})
	}
	return out, errors.Join(errs...)
}

// write produces the records of one step, every partition at once (each
// in its own order), in requests under the brokers' message size; what
// was written is taken off recs, so a retry writes only the rest, in the
// same order. The partitions go in parallel: one after the other, their
// round trips were most of what a step waited on.
func (o *stageOne) write(ctx context.Context, recs map[int][]rawRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if !o.wr.Ready(time.Now()) {
		return errWaiting
	}
	parts := slices.Sorted(maps.Keys(recs))
	rest := make([][]rawRecord, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Go(func() { rest[i], errs[i] = o.writePart(ctx, part, recs[part]) })
	}
	wg.Wait()
	for i, part := range parts {
		if len(rest[i]) == 0 {
			delete(recs, part)
		} else {
			recs[part] = rest[i]
		}
	}
	if err := errors.Join(errs...); err != nil {
		o.wr.Fail(time.Now(), o.s.log, "stage one: partials not written; retrying", err)
		return err
	}
	o.wr.OK(o.s.log, "stage one: partials written again")
	return nil
}

// writePart produces rs to one internal partition in order, and returns
// what it did not write.
func (o *stageOne) writePart(ctx context.Context, part int, rs []rawRecord) ([]rawRecord, error) {
	const maxRequest = 512 << 10
	for len(rs) > 0 {
		n, size := 0, 0
		for n < len(rs) && (n == 0 || size+len(rs[n].key)+len(rs[n].value) <= maxRequest) {
			size += len(rs[n].key) + len(rs[n].value)
			n++
		}
		krs := make([]kafka.Record, n)
		for i, r := range rs[:n] {
			krs[i] = kafka.Record{Key: kafka.NewBytes(r.key), Value: kafka.NewBytes(r.value)}
		}
		if _, err := o.s.produce(ctx, o.s.cfg.Kafka.InternalTopic, part, krs); err != nil {
			return rs, err
		}
		rs = rs[n:]
	}
	return nil, nil
}

// errWaiting is a write not tried: the wait after a failed one is not
// over.
var errWaiting = errors.New("waiting to retry the internal topic")

// commitPart commits the offset of the oldest open bucket's first record,
// with the end of the flushed buckets.
func (o *stageOne) commitPart(ctx context.Context, p *s1Part) {
	if o.gen == nil {
		return
	}
	// The offset passes the records refused so far: their dead letters
	// first. Unwritten, nothing is committed and the next flush tries
	// again.
	if err := o.s.flushDeadLetters(ctx); err != nil {
		return
	}
	off := p.next
	for _, first := range p.open {
		off = min(off, first)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := o.s.commit(cctx, o.gen, p.k.topic, map[int]kafka.OffsetCommit{int(p.k.part): {Partition: int(p.k.part), Offset: off,
		Metadata: flushedMeta + strconv.FormatInt(p.flushed, 10)}})
	if err != nil {
		o.s.log.Debug("stage one: commit failed; the next flush commits again", "partition", sourceName(p.k), "err", err)
	}
}
