package kafkaio

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Retries wait exponentially longer, each wait in the upper half of its
// step and never past the cap, start again from the bottom after a
// success, and warn on the first failure and then once per warnEvery with
// the count of failures since.
func TestRetryBacksOffAndWarnsSparingly(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	r := &Retry{min: 100 * time.Millisecond, max: 2 * time.Second, warnEvery: time.Minute}
	now := time.Unix(1e9, 0)
	steps := []time.Duration{100, 200, 400, 800, 1600, 2000, 2000, 2000}
	for i, step := range steps {
		step *= time.Millisecond
		if !r.Ready(now) {
			t.Fatalf("attempt %d: not ready after its wait", i)
		}
		d := r.Fail(now, log, "down", context.DeadlineExceeded)
		if d < step/2 || d > step {
			t.Fatalf("wait %d = %v, want within [%v, %v]", i, d, step/2, step)
		}
		if d > 0 && r.Ready(now.Add(d-time.Nanosecond)) {
			t.Fatalf("attempt %d: ready before its wait is over", i)
		}
		now = now.Add(d)
	}
	if n := strings.Count(logs.String(), "msg=down"); n != 1 {
		t.Fatalf("%d warnings for %d failures within a minute, want 1:\n%s", n, len(steps), logs.String())
	}
	now = now.Add(time.Minute)
	r.Fail(now, log, "down", context.DeadlineExceeded)
	if !strings.Contains(logs.String(), "failures=1 ") || !strings.Contains(logs.String(), "failures=8 ") {
		t.Fatalf("the second warning does not count the failures since the first:\n%s", logs.String())
	}
	r.OK(log, "up")
	if !strings.Contains(logs.String(), "msg=up after_failures=9") {
		t.Fatalf("no recovery line:\n%s", logs.String())
	}
	if d := r.Fail(now, log, "down", context.DeadlineExceeded); d < 50*time.Millisecond || d > 100*time.Millisecond {
		t.Fatalf("wait after a success = %v, want within [50ms, 100ms]", d)
	}
}

// syncBuffer is a log sink for a process that logs from many goroutines.
