package kafkaio

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
)

// Group is a consumer group to join.
type Group struct {
	ID      string
	Brokers []string
	Dialer  *kafka.Dialer
	Topics  []string
	// SessionTimeout is the group's; heartbeats go at a fifth of it and a
	// rebalance may take twice it.
	SessionTimeout time.Duration
	Log            *slog.Logger
	// Name says which client in the logs ("stage one").
	Name string
	// OnError, when set, counts each failed attempt to join or to stay in
	// the group.
	OnError func()
}

// JoinGroup joins g; the channel it returns gets each generation until
// ctx ends. A failure to join backs off (Retry) and warns sparingly.
func JoinGroup(ctx context.Context, g Group) (*kafka.ConsumerGroup, <-chan *kafka.Generation, error) {
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID: g.ID, Brokers: g.Brokers, Dialer: g.Dialer, Topics: g.Topics, StartOffset: kafka.FirstOffset,
		SessionTimeout: g.SessionTimeout, HeartbeatInterval: g.SessionTimeout / 5,
		RebalanceTimeout: 2 * g.SessionTimeout, JoinGroupBackoff: time.Second, ErrorLogger: Logger(g.Log),
	})
	if err != nil {
		return nil, nil, err
	}
	gens := make(chan *kafka.Generation)
	go func() {
		r := NewRetry()
		for {
			gen, err := cg.Next(ctx)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
					return
				}
				if g.OnError != nil {
					g.OnError()
				}
				if Sleep(ctx, r.Fail(time.Now(), g.Log, g.Name+": consumer group: retrying", err)) != nil {
					return
				}
				continue
			}
			r.OK(g.Log, g.Name+": consumer group joined again")
			select {
			case gens <- gen:
			case <-ctx.Done():
				return
			}
		}
	}()
	return cg, gens, nil
}

// GroupReader reads topic as a member of consumer group, committing as it
// goes: a feed read live whose position only needs to survive a restart
// (the Traffic Manager's load feed).
func GroupReader(brokers []string, topic, group string, d *kafka.Dialer) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, GroupID: group, Dialer: d})
}
