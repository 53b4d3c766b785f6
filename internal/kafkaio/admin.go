package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
)

// NewClient is a client of brokers for metadata, offsets, commits and
// produce requests, through tr (see Transport).
func NewClient(brokers []string, tr *kafka.Transport) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}
}

// Compacted is the topic config of a compacted topic (a changelog, the
// silences, the alert view): the latest record of each key is kept.
var Compacted = []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}

// CreateTopics creates the topics that do not exist yet, retrying with
// backoff while the brokers cannot be reached, until ctx ends. A topic
// that exists already is not an error; one the brokers refuse is.
func CreateTopics(ctx context.Context, c *kafka.Client, log *slog.Logger, topics []kafka.TopicConfig) error {
	req := &kafka.CreateTopicsRequest{Topics: topics}
	r := NewRetry()
	for {
		res, err := c.CreateTopics(ctx, req)
		if err == nil {
			for t, e := range res.Errors {
				if e != nil && !errors.Is(e, kafka.TopicAlreadyExists) {
					return fmt.Errorf("create topic %s: %w", t, e)
				}
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if Sleep(ctx, r.Fail(time.Now(), log, "kafka: topics not created yet; retrying", err)) != nil {
			return ctx.Err()
		}
	}
}

// Partitions lists the partitions of topics from the brokers' metadata,
// sorted by topic and partition.
func Partitions(ctx context.Context, c *kafka.Client, topics []string) ([]TP, error) {
	md, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("kafka metadata: %w", err)
	}
	var out []TP
	for _, t := range md.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			out = append(out, TP{t.Name, int32(p.ID)})
		}
	}
	slices.SortFunc(out, func(a, b TP) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

// Produce writes records to one partition of a topic, acknowledged by
// every in-sync replica, and returns the offset of the first. kafka-go
// has no idempotent or transactional producer: a retry after a lost reply
// writes twice, which every reader of outagewatch's own topics tolerates.
func Produce(ctx context.Context, c *kafka.Client, topic string, part int, recs []kafka.Record) (int64, error) {
	res, err := c.Produce(ctx, &kafka.ProduceRequest{Topic: topic, Partition: part, RequiredAcks: kafka.RequireAll,
		Records: kafka.NewRecordReader(recs...)})
	if err != nil {
		return 0, fmt.Errorf("produce to %s/%d: %w", topic, part, err)
	}
	if res.Error != nil {
		return 0, fmt.Errorf("produce to %s/%d: %w", topic, part, res.Error)
	}
	return res.BaseOffset, nil
}

// Committed reads a group's committed offsets, with their metadata, of
// parts (partitions by topic).
func Committed(ctx context.Context, c *kafka.Client, group string, parts map[string][]int) (map[TP]kafka.OffsetFetchPartition, error) {
	res, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return nil, err
	}
	if res.Error != nil {
		return nil, res.Error
	}
	out := map[TP]kafka.OffsetFetchPartition{}
	for t, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("committed offset of %s/%d: %w", t, p.Partition, p.Error)
			}
			out[TP{t, int32(p.Partition)}] = p
		}
	}
	return out, nil
}

// ReadRange reads one partition from offset from up to end (exclusive),
// handing each record to fn in order, outside any consumer group: a
// changelog read back to restore state. It fails when ctx ends first or
// fn does.
func ReadRange(ctx context.Context, brokers []string, d *kafka.Dialer, log *slog.Logger, topic string, part int, from, end int64,
	fn func(kafka.Message) error) error {
	if from >= end {
		return nil
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: part,
		Dialer: d, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, ErrorLogger: Logger(log)})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		return err
	}
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return fmt.Errorf("read %s/%d: %w", topic, part, err)
		}
		if err := fn(m); err != nil {
			return err
		}
		if m.Offset >= end-1 {
			return nil
		}
	}
}

// GroupMembers counts the members of a consumer group now (the transport
// sends the request to the group's coordinator): 0 for a group nobody
// has joined.
func GroupMembers(ctx context.Context, c *kafka.Client, group string) (int, error) {
	res, err := c.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return 0, fmt.Errorf("describe group %s: %w", group, err)
	}
	for _, g := range res.Groups {
		if g.GroupID != group {
			continue
		}
		if g.Error != nil {
			return 0, fmt.Errorf("describe group %s: %w", group, g.Error)
		}
		return len(g.Members), nil
	}
	return 0, nil
}
