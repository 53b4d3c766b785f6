// Package decider makes one instance at a time the decider for a site:
// the instance that the Kafka consumer group assigns the partition that
// the site's key hashes to. Two instances never both shut a transit at a
// site or both move load into a data center, because a partition has one
// owner per group generation, and an instance drops its partitions before
// the next generation hands them to another.
package decider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/internal/kafkaio"
)

// Config names the ownership topic and the group.
type Config struct {
	Brokers []string
	// Topic's partitions are the units of ownership; it carries no data.
	// Create it with as many partitions as you want deciders to share
	// sites.
	Topic   string
	GroupID string
	// SessionTimeout is how long a dead instance keeps its sites. Default
	// 10s.
	SessionTimeout time.Duration
	// Dialer carries the client id, TLS and SASL of every connection;
	// nil dials plaintext without authentication.
	Dialer *kafka.Dialer
}

// Decider tracks which partitions, so which sites, this instance owns.
type Decider struct {
	cfg        Config
	group      *kafka.ConsumerGroup
	partitions []int
	mu         sync.Mutex
	owned      map[int]bool
	gen        int32
	changed    chan struct{}
	done       chan struct{}
	stop       chan struct{}
}

// Start joins the group and keeps the owned set current until ctx ends or
// Close is called.
func Start(ctx context.Context, cfg Config) (*Decider, error) {
	if len(cfg.Brokers) == 0 || cfg.Topic == "" || cfg.GroupID == "" {
		return nil, errors.New("decider: want brokers, a topic and a group id")
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	dialer := cfg.Dialer
	if dialer == nil {
		dialer = kafkaio.PlainDialer()
	}
	conn, err := dialer.DialContext(ctx, "tcp", cfg.Brokers[0])
	if err != nil {
		return nil, fmt.Errorf("decider: %w", err)
	}
	parts, err := conn.ReadPartitions(cfg.Topic)
	conn.Close()
	if err != nil {
		return nil, fmt.Errorf("decider: topic %s: %w", cfg.Topic, err)
	}
	d := &Decider{cfg: cfg, owned: map[int]bool{}, changed: make(chan struct{}, 1), done: make(chan struct{}), stop: make(chan struct{})}
	for _, p := range parts {
		d.partitions = append(d.partitions, p.ID)
	}
	if len(d.partitions) == 0 {
		return nil, fmt.Errorf("decider: topic %s has no partitions", cfg.Topic)
	}
	d.group, err = kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID: cfg.GroupID, Brokers: cfg.Brokers, Topics: []string{cfg.Topic},
		SessionTimeout: cfg.SessionTimeout, HeartbeatInterval: cfg.SessionTimeout / 5,
		RebalanceTimeout: cfg.SessionTimeout, JoinGroupBackoff: joinBackoff, Dialer: dialer,
	})
	if err != nil {
		return nil, fmt.Errorf("decider: %w", err)
	}
	go d.loop(ctx)
	return d, nil
}

// Join retries back off: kafka-go waits joinBackoff before its next
// attempt (short, so that a rebalance completes quickly), and the loop
// doubles its own wait on each failure in a row up to maxJoinBackoff, so a
// broker that is down costs an attempt and a log line every ten seconds
// rather than ten a second. kafka-go's group does not retry until the
// error is taken from it, so the loop's wait paces it.
const (
	joinBackoff    = 100 * time.Millisecond
	maxJoinBackoff = 10 * time.Second
)

// retryAfter is the wait after the n-th failed join in a row (n >= 1).
func retryAfter(n int) time.Duration {
	d := joinBackoff
	for i := 1; i < n && d < maxJoinBackoff; i++ {
		d *= 2
	}
	return min(d, maxJoinBackoff)
}

func (d *Decider) loop(ctx context.Context) {
	defer close(d.done)
	failures := 0
	for {
		gen, err := d.group.Next(ctx)
		if err != nil {
			d.set(0, nil)
			if errors.Is(err, kafka.ErrGroupClosed) || ctx.Err() != nil {
				return
			}
			failures++
			wait := retryAfter(failures)
			slog.Warn("decider: join failed, retrying", "group", d.cfg.GroupID, "failures", failures, "retry_in", wait, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-d.stop:
				return
			case <-time.After(wait):
			}
			continue
		}
		failures = 0
		var mine []int
		for _, a := range gen.Assignments[d.cfg.Topic] {
			mine = append(mine, a.ID)
		}
		d.set(gen.ID, mine)
		// Hold the partitions for the life of the generation; drop them
		// before rejoining, so the next owner never overlaps this one.
		gen.Start(func(gctx context.Context) { <-gctx.Done() })
		ended := make(chan struct{})
		gen.Start(func(gctx context.Context) { <-gctx.Done(); d.set(0, nil); close(ended) })
		<-ended
	}
}

func (d *Decider) set(gen int32, parts []int) {
	d.mu.Lock()
	d.gen = gen
	d.owned = map[int]bool{}
	for _, p := range parts {
		d.owned[p] = true
	}
	d.mu.Unlock()
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// Partition is the partition key hashes to, as kafka-go's Hash balancer
// (and Sarama's) would place a message keyed by it.
func (d *Decider) Partition(key string) int {
	return (&kafka.Hash{}).Balance(kafka.Message{Key: []byte(key)}, d.partitions...)
}

// Owns reports whether this instance decides for key now.
func (d *Decider) Owns(key string) bool {
	p := d.Partition(key)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.owned[p]
}

// Owned returns the generation and the partitions this instance holds.
func (d *Decider) Owned() (int32, []int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ps []int
	for _, p := range d.partitions {
		if d.owned[p] {
			ps = append(ps, p)
		}
	}
	return d.gen, ps
}

// Changed is signalled (coalesced) whenever the owned set changes.
func (d *Decider) Changed() <-chan struct{} { return d.changed }

// Close leaves the group, so its sites move to another instance at once.
func (d *Decider) Close() error {
	close(d.stop)
	err := d.group.Close()
	<-d.done
	return err
}
