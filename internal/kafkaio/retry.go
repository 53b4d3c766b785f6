package kafkaio

import (
	"log/slog"
	"math/rand/v2"
	"time"
)

// Retry paces the attempts of something that keeps failing (a lost
// broker): exponential waits from min to max, each drawn from its upper
// half at random ("equal jitter"), so instances that lost the same broker
// do not come back in step; and a warning on the first failure, then at
// most one per warnEvery with the count since, so a long outage does not
// flood the log.
type Retry struct {
	min, max  time.Duration
	warnEvery time.Duration
	cur       time.Duration
	until     time.Time
	fails     int
	unwarned  int
	warned    time.Time
}

// Defaults of the retries: 100ms is about a broker round trip
// on a LAN, 10s the dead-letter writer's own cap (deadletter.go) within a
// factor of two, and a warning a minute keeps an hour-long outage to 60
// lines.
const (
	retryMin       = 100 * time.Millisecond
	retryMax       = 10 * time.Second
	retryWarnEvery = time.Minute
)

// NewRetry is a Retry with the defaults above.
func NewRetry() *Retry { return &Retry{min: retryMin, max: retryMax, warnEvery: retryWarnEvery} }

// Ready reports whether the wait after the last failure is over.
func (r *Retry) Ready(now time.Time) bool { return !now.Before(r.until) }

// Fail records a failed attempt at now and returns the wait before the
// next; it logs msg (with err and the failures since the last warning)
// when a warning is due.
func (r *Retry) Fail(now time.Time, log *slog.Logger, msg string, err error, args ...any) time.Duration {
	r.fails++
	r.unwarned++
	if r.cur == 0 {
		r.cur = r.min
	} else {
		r.cur = min(2*r.cur, r.max)
	}
	d := r.cur/2 + rand.N(r.cur/2+1)
	r.until = now.Add(d)
	if r.fails == 1 || now.Sub(r.warned) >= r.warnEvery {
		log.Warn(msg, append(args, "err", err, "failures", r.unwarned, "next_in", d.Round(time.Millisecond))...)
		r.warned, r.unwarned = now, 0
	}
	return d
}

// OK records a success: the next failure starts from min again, and is
// logged.
func (r *Retry) OK(log *slog.Logger, msg string) {
	if r.fails > 0 && msg != "" {
		log.Info(msg, "after_failures", r.fails)
	}
	r.cur, r.until, r.fails, r.unwarned = 0, time.Time{}, 0, 0
}
