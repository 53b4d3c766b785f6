package service

import (
	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/rules"
	"github.com/outagewatch/outagewatch/silence"
)

// Judging loads the rules and mapping file the config names and returns
// how a pipeline built from it judges: what `replay -c` needs to judge a
// recording as this deployment would have, and what `run --check` checks. The config's silences mute
// too, as they would have live: a silence matches by the alert's event
// time, so a maintenance window covers a recording of it. Silences set
// through the API are the live deployment's and not read.
func (c *Config) Judging() (pipeline.Config, error) {
	set, err := loadRules(c)
	if err != nil {
		return pipeline.Config{}, err
	}
	m, err := loadMap(c)
	if err != nil {
		return pipeline.Config{}, err
	}
	pc := c.judging(set, m)
	if len(c.Silences) > 0 {
		st, err := silence.Open("", c.Silences)
		if err != nil {
			return pipeline.Config{}, err
		}
		pc.Mute = []correlate.Muter{st}
	}
	return pc, nil
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
