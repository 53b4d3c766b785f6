package alerting

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A webhook that answers 503 four times and then 200 gets the alert exactly
// once, after backoffs of 1, 2, 4 and 4 ms (capped), through the background
// loop.
func TestOutboxSinkDownThenUp(t *testing.T) {
	var calls atomic.Int32
	var mu sync.Mutex
	var accepted []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if calls.Add(1) <= 4 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		accepted = append(accepted, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	wh, err := NewWebhook(WebhookConfig{Name: "hook", URL: srv.URL, Secret: "k"})
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	o, err := OpenOutbox(t.TempDir(), wh, clk.config())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.Start()
	ev := testEvent(1)
	if err := o.Enqueue(ev); err != nil {
		t.Fatal(err)
	}
	if err := o.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	eq(t, "requests", calls.Load(), 5)
	if len(accepted) != 1 || accepted[0] != mustMarshal(t, ev) {
		t.Fatalf("accepted = %q", accepted)
	}
	want := []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond}
	if got := clk.Sleeps(); !slices.Equal(got, want) {
		t.Errorf("backoffs = %v, want %v", got, want)
	}
	// The same notification again (a detector re-emitting it) is a no-op.
	again := *ev
	again.Observed, again.At = 2e6, ev.At.Add(5*time.Minute)
	if err := o.Enqueue(&again); err != nil {
		t.Fatal(err)
	}
	if err := o.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	eq(t, "requests after duplicate", calls.Load(), 5)
	st := o.Stats()
	eq(t, "stats", st, SinkStats{Sink: "hook", Enqueued: 1, Deduped: 1, Sent: 1, Failures: 4, Retries: 4})
}

// Close while the sink hangs mid-queue, reopen the same directory with the
// sink healthy, and let the upstream re-emit everything (at-least-once
// input): every alert is delivered exactly once over both runs, in order.
func TestOutboxRestartMidQueue(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	hung := make(chan struct{})
	first := &recSink{name: "s", fail: func(call int, ctx context.Context, ev *Event) error {
		if call == 5 {
			close(hung)
			<-ctx.Done() // receiver hangs until we shut down
			return ctx.Err()
		}
		return nil
	}}
	var evs []*Event
	for i := range 10 {
		evs = append(evs, testEvent(i))
	}
	evs = append(evs, resolvedOf(evs[0], t0.Add(2*time.Hour)))

	o, err := OpenOutbox(dir, first, clk.config())
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := o.Enqueue(ev); err != nil {
			t.Fatal(err)
		}
	}
	o.Start()
	<-hung
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	eq(t, "delivered before restart", len(first.got), 4)
	if err := o.Enqueue(evs[0]); !errors.Is(err, ErrClosed) {
		t.Errorf("Enqueue after Close: %v", err)
	}

	second := &recSink{name: "s"}
	o2, err := OpenOutbox(dir, second, clk.config())
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	eq(t, "depth after reopen", o2.Depth(), 7)
	for _, ev := range evs {
		if err := o2.Enqueue(ev); err != nil {
			t.Fatal(err)
		}
	}
	eq(t, "deduped on re-emission", o2.Stats().Deduped, uint64(len(evs)))
	if err := o2.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	all := append(first.IDs(), second.IDs()...)
	var want []string
	for _, ev := range evs {
		want = append(want, ev.ID+"/"+ev.Status)
	}
	if !slices.Equal(all, want) {
		t.Errorf("delivered over both runs:\n got %v\nwant %v", all, want)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, pendingDir))
	eq(t, "pending files left", len(ents), 0)
}

// A crash after delivered.log recorded a delivery but before the pending
// file was removed must not resend it.
func TestOutboxCrashBeforeRemove(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	s := &recSink{name: "s"}
	o, err := OpenOutbox(dir, s, clk.config())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := o.Enqueue(testEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	pdir := filepath.Join(dir, pendingDir)
	saved := map[string][]byte{}
	ents, _ := os.ReadDir(pdir)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(pdir, e.Name()))
		saved[e.Name()] = b
	}
	if err := o.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.Close()
	for name, b := range saved { // the removals "did not happen"
		os.WriteFile(filepath.Join(pdir, name), b, 0o644)
	}
	// A temp file from an Enqueue that never returned.
	os.WriteFile(filepath.Join(pdir, tmpPrefix+"00000000000000000009.json"), []byte("{"), 0o644)

	o2, err := OpenOutbox(dir, s, clk.config())
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	eq(t, "depth", o2.Depth(), 0)
	if err := o2.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	eq(t, "deliveries", len(s.got), 3)
	ents, _ = os.ReadDir(pdir)
	eq(t, "files left", len(ents), 0)
}

// Torn delivered.log tails and unreadable queue files are survivable: the
// torn entry's event is resent, the bad file parked in dead/.
func TestOutboxDamagedFiles(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	s := &recSink{name: "s"}
	o, err := OpenOutbox(dir, s, clk.config())
	if err != nil {
		t.Fatal(err)
	}
	o.Enqueue(testEvent(1))
	o.Drain(context.Background())
	o.Enqueue(testEvent(2))
	o.Close()
	f, _ := os.OpenFile(filepath.Join(dir, deliveredFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("0123456789abcdef0123456789abcdef\t17") // no newline: torn
	f.Close()
	os.WriteFile(filepath.Join(dir, pendingDir, seqName(50)), []byte(`{"key":"x","event":{"id":`), 0o644)
	os.WriteFile(filepath.Join(dir, pendingDir, "notes.txt"), []byte("operator notes"), 0o644)

	o2, err := OpenOutbox(dir, s, clk.config())
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	eq(t, "depth", o2.Depth(), 1)
	eq(t, "dropped", o2.Stats().Dropped, 1)
	if _, err := os.Stat(filepath.Join(dir, deadDir, seqName(50))); err != nil {
		t.Errorf("bad file not parked: %v", err)
	}
	// The next sequence number is past the damaged file's.
	o2.Enqueue(testEvent(3))
	if _, err := os.Stat(filepath.Join(dir, pendingDir, seqName(51))); err != nil {
		t.Errorf("next seq: %v", err)
	}
	o2.Drain(context.Background())
	if got, want := s.IDs(), []string{testEvent(1).ID + "/firing", testEvent(2).ID + "/firing", testEvent(3).ID + "/firing"}; !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	// Event 1 is still remembered across the compaction at open.
	o2.Enqueue(testEvent(1))
	eq(t, "deduped", o2.Stats().Deduped, 1)
}

func TestDeliveryKey(t *testing.T) {
	a := testEvent(1)
	b := *a
	b.At, b.Observed, b.ChangePct, b.Summary = a.At.Add(time.Hour), 9, -50, "other"
	eq(t, "same incident, new values", DeliveryKey(&b), DeliveryKey(a))
	c := *a
	c.Start = a.Start.Add(24 * time.Hour)
	if DeliveryKey(&c) == DeliveryKey(a) {
		t.Error("new incident shares the key")
	}
	r := resolvedOf(a, t0.Add(time.Hour))
	if DeliveryKey(r) == DeliveryKey(a) {
		t.Error("resolve shares the firing's key")
	}
	r2 := resolvedOf(a, t0.Add(2*time.Hour))
	if DeliveryKey(r2) == DeliveryKey(r) {
		t.Error("resolves with different ends share a key")
	}
	// Same instant in another zone is the same notification.
	d := *a
	d.Start = a.Start.In(time.FixedZone("X", 3600))
	eq(t, "zone", DeliveryKey(&d), DeliveryKey(a))
	eq(t, "key length", len(DeliveryKey(a)), 32)
}

// An event a receiver always rejects is parked after MaxAttempts and the
// queue moves on.
func TestOutboxMaxAttempts(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	bad := testEvent(1).ID
	s := &recSink{name: "s", fail: func(_ int, _ context.Context, ev *Event) error {
		if ev.ID == bad {
			return errors.New("400 bad request")
		}
		return nil
	}}
	cfg := clk.config()
	cfg.MaxAttempts = 3
	o, err := OpenOutbox(dir, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.Enqueue(testEvent(1))
	o.Enqueue(testEvent(2))
	err = o.Drain(context.Background())
	if err == nil || !strings.Contains(err.Error(), "400 bad request") {
		t.Fatalf("Drain err = %v", err)
	}
	eq(t, "delivered", strings.Join(s.IDs(), ","), testEvent(2).ID+"/firing")
	st := o.Stats()
	eq(t, "failures", st.Failures, 3)
	eq(t, "dropped", st.Dropped, 1)
	eq(t, "sleeps", len(clk.Sleeps()), 2)
	ents, _ := os.ReadDir(filepath.Join(dir, deadDir))
	eq(t, "dead files", len(ents), 1)
}

// Remembered delivery keys are bounded by count and age, and the bound
// survives a restart.
func TestOutboxPruneDelivered(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	cfg := clk.config()
	cfg.MaxDelivered = 3
	cfg.DeliveredTTL = 48 * time.Hour
	s := &recSink{name: "s"}
	o, err := OpenOutbox(dir, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		clk.Advance(time.Second)
		o.Enqueue(testEvent(i))
		o.Drain(context.Background())
	}
	o.Close()
	b, _ := os.ReadFile(filepath.Join(dir, deliveredFile))
	// Compaction ran after the third append, leaving 3 + 2 lines.
	eq(t, "log lines", strings.Count(string(b), "\n"), 5)

	o, err = OpenOutbox(dir, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, deliveredFile))
	eq(t, "log lines after open", strings.Count(string(b), "\n"), 3)
	for i := range 5 {
		o.Enqueue(testEvent(i))
	}
	// Events 0 and 1 were forgotten (oldest), 2..4 still deduped.
	eq(t, "deduped", o.Stats().Deduped, 3)
	eq(t, "depth", o.Depth(), 2)
	o.Drain(context.Background())
	o.Close()

	clk.Advance(49 * time.Hour)
	o, err = OpenOutbox(dir, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.Enqueue(testEvent(4))
	eq(t, "depth after ttl", o.Depth(), 1)
}

// The rate limit spaces deliveries on the injected clock: burst 2 at 2/s
// sends two at once, then one every 500 ms.
func TestOutboxRateLimit(t *testing.T) {
	clk := newFakeClock()
	cfg := clk.config()
	cfg.RateLimit = RateLimit{PerSecond: 2, Burst: 2}
	s := &recSink{name: "s"}
	o, err := OpenOutbox(t.TempDir(), s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for i := range 5 {
		o.Enqueue(testEvent(i))
	}
	o.Start()
	if err := o.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}
	if got := clk.Sleeps(); !slices.Equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
	eq(t, "sent", o.Stats().Sent, 5)
}

// A rate-limit reply's Retry-After beats the shorter backoff.
func TestOutboxRetryAfter(t *testing.T) {
	clk := newFakeClock()
	cfg := clk.config()
	cfg.MaxBackoff = time.Minute
	s := &recSink{name: "s", fail: func(call int, _ context.Context, _ *Event) error {
		if call == 1 {
			return RetryAfter(errors.New("slow down"), 30*time.Second)
		}
		return nil
	}}
	o, err := OpenOutbox(t.TempDir(), s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.Enqueue(testEvent(1))
	if err := o.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := clk.Sleeps(); !slices.Equal(got, []time.Duration{30 * time.Second}) {
		t.Errorf("waits = %v", got)
	}
}

// Drain gives up when its context ends, leaving the event queued.
func TestOutboxDrainCancelled(t *testing.T) {
	clk := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	s := &recSink{name: "s", fail: func(call int, _ context.Context, _ *Event) error {
		if call == 3 {
			cancel()
		}
		return errors.New("down")
	}}
	o, err := OpenOutbox(t.TempDir(), s, clk.config())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.Enqueue(testEvent(1))
	err = o.Drain(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	eq(t, "attempts", s.calls, 3)
	eq(t, "depth", o.Depth(), 1)
}

func TestBackoff(t *testing.T) {
	c := OutboxConfig{InitialBackoff: time.Second, MaxBackoff: 10 * time.Second, Multiplier: 3}
	var got []time.Duration
	for i := range 5 {
		got = append(got, c.Backoff(i))
	}
	want := []time.Duration{0, time.Second, 3 * time.Second, 9 * time.Second, 10 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("backoff = %v, want %v", got, want)
	}
	eq(t, "huge attempt", c.Backoff(10000), 10*time.Second)
}

func FuzzDecodeRecord(f *testing.F) {
	ev := testEvent(1)
	raw, _ := MarshalEvent(ev)
	f.Add([]byte(`{"key":"k","seq":1,"event":` + string(raw) + `}`))
	f.Add([]byte(`{"key":"k","seq":1}`))
	f.Add([]byte(`{"event":{"id":""}}`))
	f.Add([]byte(`{"event":{"id":"a","start":"x"}}`))
	f.Add([]byte("\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, key, err := decodeRecord(b)
		if err != nil {
			return
		}
		if ev.ID == "" || key != DeliveryKey(ev) {
			t.Fatalf("decoded %+v with key %q", ev, key)
		}
	})
}

func FuzzParseDelivered(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef\t1714300000000000000\n"))
	f.Add([]byte("0123456789abcdef0123456789abcdef\t17"))
	f.Add([]byte("zz\tx\n\n\t\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := map[string]time.Time{}
		bad := parseDelivered(b, m)
		lines := strings.Count(string(b), "\n")
		if !strings.HasSuffix(string(b), "\n") && len(b) > 0 {
			lines++
		}
		if len(m)+bad > lines {
			t.Fatalf("%d keys + %d bad > %d lines", len(m), bad, lines)
		}
		for k := range m {
			if !validKey(k) {
				t.Fatalf("invalid key %q accepted", k)
			}
		}
	})
}
