package alerting

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
)

// JSONL writes each event as one JSON line: the format replay prints and
// that downstream tools (jq, log shippers) read.
type JSONL struct {
	name string
	mu   sync.Mutex
	w    io.Writer
	// syncer is set when w is a regular file: the outbox marks an event
	// delivered only after it is on disk, or a crash could lose it.
	syncer interface{ Sync() error }
	buf    []byte
}

// NewJSONL returns a sink writing to w. When w is an *os.File on a regular
// file, each line is fsynced before Send returns; pipes and terminals are
// not (fsync fails on them and buys nothing).
func NewJSONL(name string, w io.Writer) *JSONL {
	j := &JSONL{name: name, w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			j.syncer = f
		}
	}
	return j
}

// Name implements Sink.
func (j *JSONL) Name() string { return j.name }

// Send implements Sink: the line is written with a single Write call so that
// concurrent writers to the same file do not interleave within a line.
func (j *JSONL) Send(ctx context.Context, ev *Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := MarshalEvent(ev)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf = append(append(j.buf[:0], b...), '\n')
	if _, err := j.w.Write(j.buf); err != nil {
		return fmt.Errorf("alerting: %s: write event %s: %w", j.name, ev.ID, err)
	}
	if j.syncer != nil {
		if err := j.syncer.Sync(); err != nil {
			return fmt.Errorf("alerting: %s: sync: %w", j.name, err)
		}
	}
	return nil
}
