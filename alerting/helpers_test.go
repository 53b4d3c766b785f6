package alerting

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// fakeClock is the outbox clock in tests: Sleep records the duration and
// advances time instantly, so backoff schedules are asserted exactly and no
// test waits.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 4, 28, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func (c *fakeClock) config() OutboxConfig {
	return OutboxConfig{
		InitialBackoff: time.Millisecond,
		MaxBackoff:     4 * time.Millisecond,
		Now:            c.Now,
		Sleep:          c.Sleep,
		Logger:         quietLogger(),
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// recSink records what it was sent; fail, when set, decides per call
// (1-based) whether to fail.
type recSink struct {
	name  string
	mu    sync.Mutex
	calls int
	got   []Event
	fail  func(call int, ctx context.Context, ev *Event) error
}

func (s *recSink) Name() string { return s.name }

func (s *recSink) Send(ctx context.Context, ev *Event) error {
	s.mu.Lock()
	s.calls++
	call, fail := s.calls, s.fail
	s.mu.Unlock()
	if fail != nil {
		if err := fail(call, ctx, ev); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.got = append(s.got, *ev)
	s.mu.Unlock()
	return nil
}

func (s *recSink) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.got))
	for i, e := range s.got {
		out[i] = e.ID + "/" + e.Status
	}
	return out
}

var t0 = time.Date(2025, 4, 28, 10, 35, 0, 0, time.UTC)

// testEvent builds a firing event number i of a synthetic incident set.
func testEvent(i int) *Event {
	entity := fmt.Sprintf("asn:%d", 5000+i)
	return &Event{
		ID:             AlertID("traffic-drop", "traffic_bytes", entity),
		Status:         Firing,
		Rule:           "traffic-drop",
		Detector:       "traffic_drop",
		Signal:         "traffic_bytes",
		Entity:         entity,
		Labels:         map[string]string{"country": "PT"},
		Start:          t0,
		At:             t0.Add(15 * time.Minute),
		Observed:       1.5e6,
		Baseline:       5.6e7,
		BaselineMethod: "previous_weeks",
		ChangePct:      -97.3,
		Severity:       "critical",
		Summary:        "traffic <fell> & stayed down",
		Actions:        []string{},
	}
}

func resolvedOf(ev *Event, end time.Time) *Event {
	r := *ev
	r.Status = Resolved
	r.End = &end
	r.At = end
	r.Observed = 5.5e7
	r.ChangePct = -1.8
	return &r
}

func mustMarshal(t *testing.T, ev *Event) string {
	t.Helper()
	b, err := MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
