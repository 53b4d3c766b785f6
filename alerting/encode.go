package alerting

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// MarshalEvent encodes ev as the public alert JSON: one line, no trailing
// newline, and no HTML escaping, so that "<", ">" and "&" in summaries reach
// JSON-lines files and webhook receivers as written. The line carries its
// delivery key, so every sink's output lets a receiver drop a repeat.
func MarshalEvent(ev *Event) ([]byte, error) {
	if ev.DeliveryKey == "" {
		c := *ev
		c.DeliveryKey = DeliveryKey(ev)
		ev = &c
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return nil, fmt.Errorf("alerting: encode event %s: %w", ev.ID, err)
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encoder always ends with '\n'.
}

// DeliveryKey identifies one notification of one alert: the alert ID, its
// status and the incident's start (and end, once resolved). The outbox
// dedupes on it, so a detector that re-emits the same finding after a restart
// or a replay of already-delivered input does not notify twice, while a new
// incident of the same alert (a later Start) is a new notification. The
// evaluation time At and the measured values are deliberately left out: they
// change between re-emissions of the same finding. An outage event's key
// also covers its revision.
func DeliveryKey(ev *Event) string {
	h := sha256.New()
	var b []byte
	b = append(b, ev.ID...)
	b = append(b, 0)
	b = append(b, ev.Status...)
	b = append(b, 0)
	b = strconv.AppendInt(b, ev.Start.UnixNano(), 10)
	b = append(b, 0)
	if ev.End != nil {
		b = strconv.AppendInt(b, ev.End.UnixNano(), 10)
	}
	if ev.Outage != nil {
		// Each notification of an event (open, growth, resolve) is its
		// own delivery; an alert's key is unchanged by this.
		b = append(b, 0, 'r')
		b = strconv.AppendInt(b, int64(ev.Revision), 10)
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// retryAfterError carries a sink's hint (Slack's rate limit, an HTTP
// Retry-After header) about how long to wait before the next attempt.
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter wraps err with a hint that the next attempt should wait at least
// d; the outbox waits max(backoff, d). Sinks use it for rate-limit replies.
func RetryAfter(err error, d time.Duration) error {
	if err == nil || d <= 0 {
		return err
	}
	return &retryAfterError{err: err, after: d}
}

func retryAfterHint(err error) time.Duration {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.after
	}
	return 0
}
