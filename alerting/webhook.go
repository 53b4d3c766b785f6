package alerting

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Webhook headers. The signature lets a receiver check that the body came
// from this outagewatch (shared secret) and was not altered; it covers the
// timestamp, so a receiver that refuses old timestamps (five minutes is
// usual) cannot be fed a recorded request again. The event ID and delivery
// key let it drop the duplicates that at-least-once delivery can produce
// after a crash.
const (
	HeaderSignature   = "X-Outagewatch-Signature"
	HeaderTimestamp   = "X-Outagewatch-Timestamp"
	HeaderEventID     = "X-Outagewatch-Event-Id"
	HeaderDeliveryKey = "X-Outagewatch-Delivery-Key"
)

// WebhookConfig configures a generic webhook sink.
type WebhookConfig struct {
	// Name is the sink name used in rules (receivers) and metrics.
	Name string
	// URL receives a POST with the event JSON as body.
	URL string
	// Secret keys the HMAC-SHA256 signature header; empty sends no
	// signature.
	Secret string
	// Timeout bounds one attempt (connect, send, response). Default 10s.
	Timeout time.Duration
	// Headers are added to every request (for example an Authorization
	// token the receiver wants).
	Headers map[string]string
	// Client overrides the HTTP client (its Timeout is left alone; the
	// per-attempt Timeout above applies through the request context).
	Client *http.Client
	// Now is the clock of the signature timestamp; default time.Now.
	Now func() time.Time
	// MinSeverity, when set, pages only at that severity or above
	// ("warning" skips info events).
	MinSeverity string
}

// Webhook posts events as JSON to an HTTP endpoint.
type Webhook struct {
	cfg    WebhookConfig
	client *http.Client
}

// NewWebhook validates cfg and returns the sink.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	if cfg.Name == "" {
		return nil, errors.New("alerting: webhook: empty name")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		// url.Parse quotes the whole URL in its error: keep the secret out.
		return nil, fmt.Errorf("alerting: webhook %s: bad url %s", cfg.Name, RedactURL(cfg.URL))
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("alerting: webhook %s: url %q is not http(s)", cfg.Name, RedactURL(cfg.URL))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	c := cfg.Client
	if c == nil {
		c = &http.Client{}
	}
	return &Webhook{cfg: cfg, client: c}, nil
}

// Name implements Sink.
func (w *Webhook) Name() string { return w.cfg.Name }

// Sign returns the value of the signature header: "sha256=" and the hex
// HMAC-SHA256, keyed with secret, of the timestamp header's value, a dot,
// and the body. Receivers compute the same, compare with hmac.Equal, and
// refuse timestamps too far from their clock.
func Sign(secret string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(strconv.AppendInt(nil, timestamp, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// ErrBadSignature is returned by Verify.
var ErrBadSignature = errors.New("webhook signature does not verify")

// Verify is what a receiver written in Go does with a delivery: it checks
// the signature header against the timestamp header and the body, and
// refuses a timestamp more than tolerance away from now (a recorded
// request replayed later).
func Verify(secret string, body []byte, signature, timestamp string, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: bad timestamp %q", ErrBadSignature, timestamp)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: timestamp %s is %s away", ErrBadSignature, timestamp, d.Round(time.Second))
	}
	if !hmac.Equal([]byte(signature), []byte(Sign(secret, ts, body))) {
		return ErrBadSignature
	}
	return nil
}

// RedactURL keeps a URL's scheme and host only: webhook URLs often carry
// their secret in the path or query, and logs are read by many.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(url withheld)"
	}
	return u.Scheme + "://" + u.Host
}

// redactErr rewrites the *url.Error of an HTTP client, which quotes the
// full URL, to name scheme and host only.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, RedactURL(ue.URL), ue.Err)
	}
	return err
}

// Send implements Sink. Any non-2xx status or transport error is returned
// so the outbox retries; a Retry-After on 429/503 is passed on as a hint.
func (w *Webhook) Send(ctx context.Context, ev *Event) error {
	body, err := MarshalEvent(ev)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("alerting: webhook %s: %w", w.cfg.Name, redactErr(err))
	}
	for k, v := range w.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "outagewatch")
	req.Header.Set(HeaderEventID, ev.ID)
	req.Header.Set(HeaderDeliveryKey, DeliveryKey(ev))
	if w.cfg.Secret != "" {
		ts := w.cfg.Now().Unix()
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(HeaderSignature, Sign(w.cfg.Secret, ts, body))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("alerting: webhook %s: post event %s: %w", w.cfg.Name, ev.ID, redactErr(err))
	}
	defer resp.Body.Close()
	// Read a little of the body: it keeps the connection reusable and
	// gives the operator the receiver's complaint in the error.
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	err = fmt.Errorf("alerting: webhook %s: event %s: status %d: %s",
		w.cfg.Name, ev.ID, resp.StatusCode, strings.TrimSpace(string(snippet)))
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if s, perr := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); perr == nil && s > 0 {
			return RetryAfter(err, time.Duration(s)*time.Second)
		}
	}
	return err
}

// Wants implements Selector: a webhook pages, so it gets outage events and
// the alerts that belong to none (feed faults), not each member alert.
func (w *Webhook) Wants(ev *Event) bool { return ev.PagedAtLeast(w.cfg.MinSeverity) }
