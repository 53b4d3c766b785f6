package alerting

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDispatcherRouting(t *testing.T) {
	clk := newFakeClock()
	a, b := &recSink{name: "a"}, &recSink{name: "b"}
	dir := t.TempDir()
	d, err := NewDispatcher(DispatcherConfig{Dir: dir, Outbox: clk.config()}, a, b)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	e1, e2, e3 := testEvent(1), testEvent(2), testEvent(3)
	e2.Receivers = []string{"b", "b"}
	e3.Receivers = []string{"nope", "a"}
	if err := d.Dispatch(e1); err != nil {
		t.Fatal(err)
	}
	if err := d.Dispatch(e2); err != nil {
		t.Fatal(err)
	}
	err = d.Dispatch(e3)
	if err == nil || !strings.Contains(err.Error(), `unknown receiver "nope"`) {
		t.Fatalf("err = %v", err)
	}
	if err := d.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	eq(t, "a got", strings.Join(a.IDs(), ","), e1.ID+"/firing,"+e3.ID+"/firing")
	eq(t, "b got", strings.Join(b.IDs(), ","), e1.ID+"/firing,"+e2.ID+"/firing")
	st := d.Stats()
	eq(t, "stats a", st[0], SinkStats{Sink: "a", Enqueued: 2, Sent: 2})
	eq(t, "stats b", st[1], SinkStats{Sink: "b", Enqueued: 2, Sent: 2})
	eq(t, "sinks", strings.Join(d.Sinks(), ","), "a,b")
	if d.Outbox("a") == nil || d.Outbox("zz") != nil {
		t.Error("Outbox lookup")
	}
	for _, n := range []string{"a", "b"} {
		if _, err := os.Stat(filepath.Join(dir, n, pendingDir)); err != nil {
			t.Error(err)
		}
	}
}

// One sink being down delays only its own queue.
func TestDispatcherIsolatesSinks(t *testing.T) {
	clk := newFakeClock()
	up := &recSink{name: "up"}
	down := &recSink{name: "down", fail: func(int, context.Context, *Event) error { return errors.New("down") }}
	d, err := NewDispatcher(DispatcherConfig{Dir: t.TempDir(), Outbox: clk.config()}, down, up)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Dispatch(testEvent(1))
	d.Start()
	if err := d.Outbox("up").Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	eq(t, "up got", len(up.IDs()), 1)
	// The down sink's loop runs on its own: wait for its first attempt.
	for deadline := time.Now().Add(10 * time.Second); d.Outbox("down").Stats().Failures == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the down sink was never tried")
		}
		time.Sleep(time.Millisecond)
	}
	d.Close()
	eq(t, "down depth", d.Outbox("down").Depth(), 1)
	if d.Stats()[0].Failures == 0 {
		t.Error("no failures counted for the down sink")
	}
}

func TestDispatcherConfigErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewDispatcher(DispatcherConfig{}, &recSink{name: "a"}); err == nil {
		t.Error("no dir accepted")
	}
	if _, err := NewDispatcher(DispatcherConfig{Dir: dir}, &recSink{name: "a"}, &recSink{name: "a"}); err == nil {
		t.Error("duplicate names accepted")
	}
	for _, n := range []string{"", "..", "a/b", "slack channel"} {
		if _, err := NewDispatcher(DispatcherConfig{Dir: dir}, &recSink{name: n}); err == nil {
			t.Errorf("name %q accepted", n)
		}
	}
}

// Replay's path: events through the outbox to a JSON-lines sink, drained,
// give exactly the event JSON, one per line, in order.
func TestJSONLThroughOutbox(t *testing.T) {
	var buf bytes.Buffer
	clk := newFakeClock()
	cfg := clk.config()
	cfg.NoSync = true
	d, err := NewDispatcher(DispatcherConfig{Dir: t.TempDir(), Outbox: cfg}, NewJSONL("stdout", &buf))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f := testEvent(1)
	f.Details = map[string]any{"prefixes": []string{"192.0.2.0/24"}, "sites": 3}
	r := resolvedOf(f, t0.Add(45*60e9))
	d.Dispatch(f)
	d.Dispatch(r)
	if err := d.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := mustMarshal(t, f) + "\n" + mustMarshal(t, r) + "\n"
	eq(t, "output", buf.String(), want)
	if !strings.Contains(buf.String(), `"end":null`) || !strings.Contains(buf.String(), `"end":"2025-04-28T11:20:00Z"`) {
		t.Errorf("end fields: %s", buf.String())
	}
}

func TestJSONLFileSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "alerts.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	j := NewJSONL("file", f)
	if j.syncer == nil {
		t.Fatal("regular file not synced")
	}
	ev := testEvent(1)
	if err := j.Send(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, _ := os.ReadFile(path)
	eq(t, "file", string(b), mustMarshal(t, ev)+"\n")
	if err := j.Send(context.Background(), ev); err == nil {
		t.Error("write to closed file succeeded")
	}
	if NewJSONL("buf", &bytes.Buffer{}).syncer != nil {
		t.Error("buffer treated as file")
	}
}

// feedSink takes the events whose rule it names, whatever their receivers.
type feedSink struct {
	*recSink
	rule string
}

func (f *feedSink) Wants(ev *Event) bool { return ev.Rule == f.rule }
func (f *feedSink) Feed()                {}

// A Feed gets what it wants even when the event names other receivers,
// once, and nothing it does not want.
func TestDispatcherFeed(t *testing.T) {
	clk := newFakeClock()
	a := &recSink{name: "a"}
	f := &feedSink{recSink: &recSink{name: "f"}, rule: "r2"}
	d, err := NewDispatcher(DispatcherConfig{Dir: t.TempDir(), Outbox: clk.config()}, a, f)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	e1, e2, e3 := testEvent(1), testEvent(2), testEvent(3)
	e1.Rule, e2.Rule, e3.Rule = "r1", "r2", "r2"
	e2.Receivers = []string{"a"}
	e3.Receivers = []string{"f", "a"}
	for _, e := range []*Event{e1, e2, e3} {
		if err := d.Dispatch(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	eq(t, "a got", strings.Join(a.IDs(), ","), e1.ID+"/firing,"+e2.ID+"/firing,"+e3.ID+"/firing")
	eq(t, "f got", strings.Join(f.IDs(), ","), e2.ID+"/firing,"+e3.ID+"/firing")
	eq(t, "stats f", d.Stats()[1], SinkStats{Sink: "f", Enqueued: 2, Sent: 2})
}
