package alerting

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrClosed is returned by Enqueue after Close.
var ErrClosed = errors.New("alerting: outbox closed")

// OutboxConfig tunes one sink's outbox. The zero value is usable.
type OutboxConfig struct {
	// InitialBackoff is the wait after the first failed attempt; each
	// further failure multiplies it by Multiplier up to MaxBackoff.
	// Defaults 1s, 5m, 2.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
	// MaxAttempts parks an event in dead/ after that many failed attempts,
	// so that one event a receiver always rejects cannot block the queue
	// behind it forever. 0 retries forever, which is what a sink that is
	// merely down needs.
	MaxAttempts int
	// RateLimit applies to the background delivery loop (not to Drain).
	RateLimit RateLimit
	// MaxDelivered and DeliveredTTL bound the remembered delivery keys:
	// keys older than the TTL, and beyond the newest MaxDelivered, are
	// forgotten, after which the same notification would be delivered
	// again. Defaults 10000 and 30 days.
	MaxDelivered int
	DeliveredTTL time.Duration
	// NoSync skips fsync. Only for replay and tests, where the outbox
	// directory is scratch space and speed matters more than durability.
	NoSync bool
	// Now and Sleep are the clock; tests inject both. Sleep must return
	// ctx.Err() when ctx ends first.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives retry and recovery messages; default slog.Default().
	Logger *slog.Logger
}

func (c OutboxConfig) withDefaults() OutboxConfig {
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 5 * time.Minute
	}
	if c.MaxBackoff < c.InitialBackoff {
		c.MaxBackoff = c.InitialBackoff
	}
	if c.Multiplier < 1 {
		c.Multiplier = 2
	}
	if c.MaxDelivered <= 0 {
		c.MaxDelivered = 10000
	}
	if c.DeliveredTTL <= 0 {
		c.DeliveredTTL = 30 * 24 * time.Hour
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Sleep == nil {
		c.Sleep = sleepCtx
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backoff returns the wait after the given number of consecutive failed
// attempts (1 for the first failure).
func (c OutboxConfig) Backoff(failures int) time.Duration {
	c = c.withDefaults()
	if failures < 1 {
		return 0
	}
	d := float64(c.InitialBackoff) * math.Pow(c.Multiplier, float64(failures-1))
	if d >= float64(c.MaxBackoff) {
		return c.MaxBackoff
	}
	return time.Duration(d)
}

// SinkStats are one sink's delivery counters, for metrics. Counters are
// totals since the outbox was opened; QueueDepth is the current backlog.
type SinkStats struct {
	Sink string
	// Enqueued counts events accepted into the queue; Deduped counts
	// Enqueue calls that were no-ops because the notification was
	// already pending or delivered.
	Enqueued uint64
	Deduped  uint64
	// Sent counts successful deliveries, Failures failed attempts and
	// Retries attempts after the first for the same event.
	Sent     uint64
	Failures uint64
	Retries  uint64
	// Dropped counts events parked in dead/ (MaxAttempts reached, or a
	// queue file that no longer decodes).
	Dropped    uint64
	QueueDepth int
}

// Outbox is one sink's persisted delivery queue. Every event is on disk
// before Enqueue returns and leaves the queue only after the sink accepted
// it, so a sink that is down gets its alerts when it is back, and a restart
// (Open on the same directory) resumes where the last run stopped.
// Delivery is in Enqueue order and one at a time: the next event waits
// until the head is delivered, which keeps a resolve behind its firing.
//
// Layout of dir:
//
//	pending/<seq>.json  one file per queued event ({key, seq, event}),
//	                    written to a temp file, fsynced, renamed, dir fsynced
//	delivered.log       "<key>\t<unix nanos>\n" per delivered event, fsynced
//	                    before the pending file is removed; compacted by
//	                    rewrite-and-rename when it grows
//	dead/               events given up on, for an operator to inspect
//
// A crash after the sink accepted an event but before delivered.log was
// written sends it again on restart (at-least-once); receivers dedupe by
// event ID and delivery key. A crash between the log append and the removal
// of the pending file is repaired at Open without resending.
type Outbox struct {
	sink    Sink
	dir     string
	cfg     OutboxConfig
	log     *slog.Logger
	limiter *tokenBucket

	mu           sync.Mutex
	pending      []*pendingEntry
	pendingKeys  map[string]struct{}
	delivered    map[string]time.Time
	deliveredLog *os.File
	appended     int
	nextSeq      uint64
	stats        SinkStats
	changed      chan struct{} // closed and replaced on every queue change
	closed       bool
	running      bool
	cancel       context.CancelFunc
	done         chan struct{}

	// deliverMu serialises delivery attempts between the background loop
	// and Drain, so the head is never sent twice concurrently.
	deliverMu sync.Mutex
	notify    chan struct{}
}

type pendingEntry struct {
	seq      uint64
	key      string
	path     string
	ev       *Event
	failures int
}

// record is the on-disk form of a queued event. Event keeps the bytes of
// MarshalEvent so the sink receives exactly what was encoded at Enqueue.
type record struct {
	Key   string          `json:"key"`
	Seq   uint64          `json:"seq"`
	Event json.RawMessage `json:"event"`
}

const (
	pendingDir    = "pending"
	deadDir       = "dead"
	deliveredFile = "delivered.log"
	tmpPrefix     = ".tmp-"
)

// OpenOutbox opens (creating if needed) the outbox of sink in dir and loads
// what a previous run left. It does not start delivering: call Start for
// the background loop, or Drain.
func OpenOutbox(dir string, sink Sink, cfg OutboxConfig) (*Outbox, error) {
	cfg = cfg.withDefaults()
	o := &Outbox{
		sink:        sink,
		dir:         dir,
		cfg:         cfg,
		log:         cfg.Logger.With("sink", sink.Name()),
		pendingKeys: make(map[string]struct{}),
		delivered:   make(map[string]time.Time),
		nextSeq:     1,
		changed:     make(chan struct{}),
		notify:      make(chan struct{}, 1),
	}
	o.stats.Sink = sink.Name()
	o.limiter = newTokenBucket(cfg.RateLimit, cfg.Now, cfg.Sleep)
	for _, d := range []string{dir, filepath.Join(dir, pendingDir), filepath.Join(dir, deadDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("alerting: outbox %s: %w", sink.Name(), err)
		}
	}
	if err := o.loadDelivered(); err != nil {
		return nil, err
	}
	if err := o.compactDelivered(); err != nil {
		return nil, err
	}
	if err := o.loadPending(); err != nil {
		o.deliveredLog.Close()
		return nil, err
	}
	return o, nil
}

func (o *Outbox) loadDelivered() error {
	b, err := os.ReadFile(filepath.Join(o.dir, deliveredFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("alerting: outbox %s: %w", o.sink.Name(), err)
	}
	bad := parseDelivered(b, o.delivered)
	if bad > 0 {
		// A torn last line from a crash mid-append: the event it
		// recorded is still pending and will be sent again.
		o.log.Warn("outbox: skipped malformed delivered.log lines", "lines", bad)
	}
	return nil
}

// parseDelivered adds the keys in a delivered.log image to m and returns the
// number of lines it could not read.
func parseDelivered(b []byte, m map[string]time.Time) (bad int) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return bad + 1 // torn final line
		}
		line := b[:i]
		b = b[i+1:]
		k, ts, ok := strings.Cut(string(line), "\t")
		n, err := strconv.ParseInt(ts, 10, 64)
		if !ok || err != nil || !validKey(k) {
			bad++
			continue
		}
		t := time.Unix(0, n)
		if old, ok := m[k]; !ok || t.After(old) {
			m[k] = t
		}
	}
	return bad
}

func validKey(k string) bool {
	if len(k) != 32 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// compactDelivered forgets expired keys and rewrites delivered.log with the
// rest, then reopens it for appending. Called with mu held (or before the
// outbox is shared).
func (o *Outbox) compactDelivered() error {
	cutoff := o.cfg.Now().Add(-o.cfg.DeliveredTTL)
	type kt struct {
		k string
		t time.Time
	}
	all := make([]kt, 0, len(o.delivered))
	for k, t := range o.delivered {
		if t.Before(cutoff) {
			delete(o.delivered, k)
			continue
		}
		all = append(all, kt{k, t})
	}
	slices.SortFunc(all, func(a, b kt) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return strings.Compare(a.k, b.k)
	})
	if n := len(all) - o.cfg.MaxDelivered; n > 0 {
		for _, e := range all[:n] {
			delete(o.delivered, e.k)
		}
		all = all[n:]
	}
	var buf bytes.Buffer
	for _, e := range all {
		buf.WriteString(e.k)
		buf.WriteByte('\t')
		buf.WriteString(strconv.FormatInt(e.t.UnixNano(), 10))
		buf.WriteByte('\n')
	}
	path := filepath.Join(o.dir, deliveredFile)
	if err := o.writeAtomic(path, buf.Bytes()); err != nil {
		return err
	}
	if o.deliveredLog != nil {
		o.deliveredLog.Close()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("alerting: outbox %s: %w", o.sink.Name(), err)
	}
	o.deliveredLog = f
	o.appended = 0
	return nil
}

// writeAtomic replaces path with data: temp file, fsync, rename, fsync dir.
func (o *Outbox) writeAtomic(path string, data []byte) error {
	if err := writeFileAtomic(path, data, !o.cfg.NoSync); err != nil {
		return fmt.Errorf("alerting: outbox %s: %w", o.sink.Name(), err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte, doSync bool) error {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, tmpPrefix+filepath.Base(path))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && doSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if doSync {
		return syncDir(dir)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (o *Outbox) loadPending() error {
	pdir := filepath.Join(o.dir, pendingDir)
	ents, err := os.ReadDir(pdir)
	if err != nil {
		return fmt.Errorf("alerting: outbox %s: %w", o.sink.Name(), err)
	}
	// Sequence numbers continue past the parked files too, so that a
	// later park never overwrites one.
	if dead, err := os.ReadDir(filepath.Join(o.dir, deadDir)); err == nil {
		for _, de := range dead {
			if seq, ok := parseSeqName(de.Name()); ok && seq >= o.nextSeq {
				o.nextSeq = seq + 1
			}
		}
	}
	var repaired int
	for _, de := range ents {
		name := de.Name()
		path := filepath.Join(pdir, name)
		if strings.HasPrefix(name, tmpPrefix) {
			os.Remove(path) // never renamed: Enqueue did not return
			continue
		}
		seq, ok := parseSeqName(name)
		if !ok {
			o.log.Warn("outbox: ignoring unexpected file", "file", path)
			continue
		}
		if seq >= o.nextSeq {
			// Also past unreadable files: dead/ keeps their names.
			o.nextSeq = seq + 1
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("alerting: outbox %s: %w", o.sink.Name(), err)
		}
		ev, key, err := decodeRecord(b)
		if err != nil {
			o.log.Error("outbox: unreadable queue file moved to dead/", "file", path, "err", err)
			o.stats.Dropped++
			if err := os.Rename(path, filepath.Join(o.dir, deadDir, name)); err != nil {
				return fmt.Errorf("alerting: outbox %s: %w", o.sink.Name(), err)
			}
			continue
		}
		_, done := o.delivered[key]
		_, dup := o.pendingKeys[key]
		if done || dup {
			// Delivered (or queued twice) before a crash cut the
			// cleanup short.
			os.Remove(path)
			repaired++
			continue
		}
		o.pendingKeys[key] = struct{}{}
		o.pending = append(o.pending, &pendingEntry{seq: seq, key: key, path: path, ev: ev})
	}
	// ReadDir sorts by name and names are fixed-width, but sort by seq to
	// not depend on it.
	slices.SortFunc(o.pending, func(a, b *pendingEntry) int { return compareU64(a.seq, b.seq) })
	if repaired > 0 {
		o.log.Info("outbox: removed already-delivered queue files", "files", repaired)
	}
	if len(o.pending) > 0 {
		o.log.Info("outbox: resuming", "pending", len(o.pending))
	}
	return nil
}

func compareU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func seqName(seq uint64) string { return fmt.Sprintf("%020d.json", seq) }

func parseSeqName(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, ".json")
	if !ok || len(s) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// decodeRecord reads a queue file. The key is recomputed from the event
// rather than trusted, so a file edited by hand cannot evade dedupe.
func decodeRecord(b []byte) (*Event, string, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, "", fmt.Errorf("decode queue record: %w", err)
	}
	if len(r.Event) == 0 {
		return nil, "", errors.New("decode queue record: no event")
	}
	ev := new(Event)
	if err := json.Unmarshal(r.Event, ev); err != nil {
		return nil, "", fmt.Errorf("decode queued event: %w", err)
	}
	if ev.ID == "" {
		return nil, "", errors.New("decode queued event: empty id")
	}
	return ev, DeliveryKey(ev), nil
}

// Sink returns the sink this outbox delivers to.
func (o *Outbox) Sink() Sink { return o.sink }

// Enqueue queues ev for delivery. When it returns nil the event is on disk
// (unless NoSync). Enqueueing a notification that is already pending or was
// delivered (same DeliveryKey) is a no-op.
func (o *Outbox) Enqueue(ev *Event) error {
	if ev == nil || ev.ID == "" {
		return errors.New("alerting: enqueue: event without id")
	}
	raw, err := MarshalEvent(ev)
	if err != nil {
		return err
	}
	// The sink gets the decoded copy, not ev: what it sees is then the
	// same before and after a restart, and later changes by the caller
	// to ev cannot reach it.
	dec := new(Event)
	if err := json.Unmarshal(raw, dec); err != nil {
		return fmt.Errorf("alerting: enqueue %s: %w", ev.ID, err)
	}
	key := DeliveryKey(dec)

	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	_, pend := o.pendingKeys[key]
	_, done := o.delivered[key]
	if pend || done {
		o.stats.Deduped++
		return nil
	}
	seq := o.nextSeq
	b, err := json.Marshal(record{Key: key, Seq: seq, Event: raw})
	if err != nil {
		return fmt.Errorf("alerting: enqueue %s: %w", ev.ID, err)
	}
	path := filepath.Join(o.dir, pendingDir, seqName(seq))
	if err := o.writeAtomic(path, b); err != nil {
		return fmt.Errorf("enqueue %s: %w", ev.ID, err)
	}
	o.nextSeq++
	o.pendingKeys[key] = struct{}{}
	o.pending = append(o.pending, &pendingEntry{seq: seq, key: key, path: path, ev: dec})
	o.stats.Enqueued++
	o.changedLocked()
	select {
	case o.notify <- struct{}{}:
	default:
	}
	return nil
}

func (o *Outbox) changedLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

type attempt int

const (
	idle attempt = iota
	sent
	failed
	dropped
)

// deliverOne sends the head of the queue once.
func (o *Outbox) deliverOne(ctx context.Context, limited bool) (attempt, int, error) {
	o.deliverMu.Lock()
	defer o.deliverMu.Unlock()
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return failed, 0, ErrClosed
	}
	if len(o.pending) == 0 {
		o.mu.Unlock()
		return idle, 0, nil
	}
	e := o.pending[0]
	o.mu.Unlock()

	if limited && o.limiter != nil {
		if err := o.limiter.wait(ctx); err != nil {
			return failed, e.failures, err
		}
	}
	if e.failures > 0 {
		o.mu.Lock()
		o.stats.Retries++
		o.mu.Unlock()
	}
	sendErr := o.sink.Send(ctx, e.ev)

	o.mu.Lock()
	defer o.mu.Unlock()
	if sendErr != nil {
		e.failures++
		o.stats.Failures++
		if o.cfg.MaxAttempts > 0 && e.failures >= o.cfg.MaxAttempts && ctx.Err() == nil {
			o.log.Error("outbox: giving up on event, moved to dead/", "id", e.ev.ID,
				"status", e.ev.Status, "attempts", e.failures, "err", sendErr)
			if err := os.Rename(e.path, filepath.Join(o.dir, deadDir, filepath.Base(e.path))); err != nil {
				return failed, e.failures, fmt.Errorf("alerting: outbox %s: park event: %w", o.sink.Name(), err)
			}
			o.popLocked()
			o.stats.Dropped++
			return dropped, e.failures, sendErr
		}
		return failed, e.failures, sendErr
	}
	if err := o.ackLocked(e); err != nil {
		// Delivered but not recorded: it stays queued and will be
		// sent again, which at-least-once allows.
		e.failures++
		o.stats.Failures++
		return failed, e.failures, err
	}
	o.stats.Sent++
	return sent, 0, nil
}

func (o *Outbox) ackLocked(e *pendingEntry) error {
	now := o.cfg.Now()
	line := e.key + "\t" + strconv.FormatInt(now.UnixNano(), 10) + "\n"
	if _, err := o.deliveredLog.WriteString(line); err != nil {
		return fmt.Errorf("alerting: outbox %s: record delivery: %w", o.sink.Name(), err)
	}
	if !o.cfg.NoSync {
		if err := o.deliveredLog.Sync(); err != nil {
			return fmt.Errorf("alerting: outbox %s: record delivery: %w", o.sink.Name(), err)
		}
	}
	o.delivered[e.key] = now
	o.appended++
	// No dir fsync: if the removal is lost, Open sees the key in
	// delivered.log and removes the file again.
	if err := os.Remove(e.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		o.log.Warn("outbox: remove delivered queue file", "file", e.path, "err", err)
	}
	o.popLocked()
	if o.appended >= o.cfg.MaxDelivered {
		if err := o.compactDelivered(); err != nil {
			o.log.Warn("outbox: compact delivered.log", "err", err)
		}
	}
	return nil
}

func (o *Outbox) popLocked() {
	e := o.pending[0]
	o.pending[0] = nil
	o.pending = o.pending[1:]
	delete(o.pendingKeys, e.key)
	o.changedLocked()
}

func (o *Outbox) wait(ctx context.Context, failures int, err error) error {
	d := o.cfg.Backoff(failures)
	if h := min(retryAfterHint(err), o.cfg.MaxBackoff); h > d {
		d = h
	}
	return o.cfg.Sleep(ctx, d)
}

// Start runs the background delivery loop until Close. Failed sends are
// retried with exponential backoff; the rate limit applies.
func (o *Outbox) Start() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.running || o.closed {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.running, o.cancel, o.done = true, cancel, make(chan struct{})
	go o.run(ctx, o.done)
}

func (o *Outbox) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		st, failures, err := o.deliverOne(ctx, true)
		switch st {
		case idle:
			select {
			case <-o.notify:
			case <-ctx.Done():
				return
			}
		case failed, dropped:
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			o.log.Warn("outbox: delivery failed", "attempt", failures, "err", err)
			if st == dropped {
				continue
			}
			if o.wait(ctx, failures, err) != nil {
				return
			}
		}
	}
}

// Drain delivers everything pending now, in order, in the caller's
// goroutine, retrying with backoff, and returns when the queue is empty or
// ctx ends. It ignores the rate limit: replay uses it to write its whole
// output deterministically. Events parked in dead/ are reported in the
// returned error.
func (o *Outbox) Drain(ctx context.Context) error {
	var errs []error
	for {
		st, failures, err := o.deliverOne(ctx, false)
		switch st {
		case idle:
			return errors.Join(errs...)
		case dropped:
			errs = append(errs, err)
		case failed:
			if errors.Is(err, ErrClosed) {
				return fmt.Errorf("alerting: drain %s: %w", o.sink.Name(), errors.Join(append(errs, err)...))
			}
			if cerr := ctx.Err(); cerr != nil {
				return fmt.Errorf("alerting: drain %s: %w", o.sink.Name(), errors.Join(append(errs, cerr, err)...))
			}
			if werr := o.wait(ctx, failures, err); werr != nil {
				return fmt.Errorf("alerting: drain %s: %w", o.sink.Name(), errors.Join(append(errs, werr, err)...))
			}
		}
	}
}

// Flush waits until every event enqueued before the call has left the
// queue (delivered or parked). With the background loop running it only
// waits; without it, it delivers like Drain.
func (o *Outbox) Flush(ctx context.Context) error {
	o.mu.Lock()
	if !o.running {
		o.mu.Unlock()
		return o.Drain(ctx)
	}
	target := o.nextSeq - 1
	for {
		if len(o.pending) == 0 || o.pending[0].seq > target {
			o.mu.Unlock()
			return nil
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("alerting: flush %s: %w", o.sink.Name(), ctx.Err())
		}
		o.mu.Lock()
	}
}

// Close stops the delivery loop, interrupting an attempt in flight (which
// stays queued), and closes the files. Pending events stay on disk for the
// next OpenOutbox. A Drain running in another goroutine is not interrupted:
// Close waits for its current attempt, so cancel Drain's context first.
func (o *Outbox) Close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	cancel, done := o.cancel, o.done
	o.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	o.deliverMu.Lock() // wait for a Drain attempt in flight
	defer o.deliverMu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.deliveredLog.Close(); err != nil {
		return fmt.Errorf("alerting: outbox %s: close: %w", o.sink.Name(), err)
	}
	return nil
}

// Depth returns the number of events waiting for delivery.
func (o *Outbox) Depth() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending)
}

// Stats returns a snapshot of the counters.
func (o *Outbox) Stats() SinkStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.stats
	s.QueueDepth = len(o.pending)
	return s
}

// Pending returns copies of the queued events in delivery order, for
// /api/v1/alerts style inspection.
func (o *Outbox) Pending() []Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Event, len(o.pending))
	for i, e := range o.pending {
		out[i] = *e.ev
	}
	return out
}
