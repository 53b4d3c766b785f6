package alerting

import (
	"context"
	"time"
)

// RateLimit caps deliveries to one sink: PerSecond sustained with bursts of
// Burst. It keeps an incident that fires on hundreds of entities at once from
// getting outagewatch throttled or banned by Slack, and from paging people
// faster than they can read. A zero PerSecond means unlimited.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// tokenBucket is a reservation-style token bucket (the model of
// golang.org/x/time/rate, which is not in the module graph): taking a token
// may drive the balance negative, and the caller sleeps until it is repaid.
// Time comes from the injected clock so tests are exact.
type tokenBucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
}

func newTokenBucket(l RateLimit, now func() time.Time, sleep func(context.Context, time.Duration) error) *tokenBucket {
	if l.PerSecond <= 0 {
		return nil
	}
	burst := float64(l.Burst)
	if burst < 1 {
		burst = 1
	}
	return &tokenBucket{rate: l.PerSecond, burst: burst, tokens: burst, last: now(), now: now, sleep: sleep}
}

// wait takes one token, sleeping as long as needed. Only the delivery loop
// of one outbox calls it, so it needs no lock.
func (b *tokenBucket) wait(ctx context.Context) error {
	now := b.now()
	if el := now.Sub(b.last); el > 0 {
		b.tokens += el.Seconds() * b.rate
		if b.tokens > b.burst {
			b.tokens = b.burst
		}
		b.last = now
	}
	b.tokens--
	if b.tokens >= 0 {
		return nil
	}
	d := time.Duration(-b.tokens / b.rate * float64(time.Second))
	if err := b.sleep(ctx, d); err != nil {
		b.tokens++ // not used: give it back
		return err
	}
	return nil
}
