package service

import (
	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/rules"
)

// Judging loads the rules and mapping file the config names and returns
// how a pipeline built from it judges: what `replay -c` needs to judge a
// recording as this deployment would have. Silences are left out: they
// mute a span of wall-clock time on a live service, not of a recording.
func (c *Config) Judging() (pipeline.Config, error) {
	set, err := loadRules(c)
	if err != nil {
		return pipeline.Config{}, err
	}
	m, err := loadMap(c)
	if err != nil {
		return pipeline.Config{}, err
	}
	return c.judging(set, m), nil
}

// judging is the pipeline configuration that the service's config sets,
// shared by the live service and replay -c so the two cannot drift.
func (c *Config) judging(set *rules.Set, m *netmap.Map) pipeline.Config {
	return pipeline.Config{
		Aggregate: aggregate.Config{Width: int64(c.BucketWidth), Lateness: int64(c.Lateness), History: c.History},
		Rules:     set, Map: m, LocalASNs: c.LocalASNs,
		Severity: c.Correlation.Severity, ZoneOwners: c.Correlation.ZoneOwners, GroupWait: c.Correlation.groupWait(),
	}
}
