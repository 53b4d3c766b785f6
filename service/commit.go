package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// commitGroup commits offsets as a member of gen, and fails with every
// partition the brokers refused.
func commitGroup(ctx context.Context, c *kafka.Client, gen *kafka.Generation, topics map[string][]kafka.OffsetCommit) error {
	res, err := c.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: gen.GroupID, GenerationID: int(gen.ID),
		MemberID: gen.MemberID, Topics: topics})
	if err != nil {
		return err
	}
	var errs []error
	for t, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				errs = append(errs, fmt.Errorf("topic %s partition %d: %w", t, p.Partition, p.Error))
			}
		}
	}
	return errors.Join(errs...)
}
