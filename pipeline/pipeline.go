// Package pipeline wires one instance of outagewatch together, as a chain
// of stages (see stage.go and docs/pipeline.md): records are decoded into
// observations (decode), bucketed in event time (aggregate), each closed
// bucket is handed to the detectors that the rules bind to its series
// (judge), findings become alert events (alert), silences and feed faults
// mute some (mute-silences, mute-feed-faults), the rest are grouped into
// outage events (correlate) and everything goes to the sinks (out). Live
// service and replay run this same code; they differ only in where records
// come from and who moves the watermark.
package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/rules"
)

// Config of a pipeline.
type Config struct {
	Aggregate aggregate.Config
	Rules     *rules.Set
	Map       *netmap.Map
	LocalASNs []uint32
	// SilentAfter is how many empty buckets make a feed silent (default 3).
	SilentAfter int
	Logger      *slog.Logger
	// Tap, when set, sees every closed bucket before the detectors do: the
	// values observed, which the history does not keep for outliers (it keeps
	// the prediction). The HTML report records them this way.
	Tap func(*aggregate.Closed)
	// Events, when set, receives the outage events (alerts grouped by
	// place and time, package correlate) after the alerts of the bucket
	// that opened, grew or resolved them. The correlation runs either way,
	// so alerts always name their event.
	Events func(*alerting.Event)
	// Severity overrides, field by field where non-zero, the rules'
	// severity: block that maps an event's impact to its severity.
	Severity correlate.Thresholds
	// ZoneOwners maps DNS zones to the network whose outage they belong to.
	ZoneOwners map[string]uint32
	// GroupWait holds an event's first page (correlate.Config.GroupWait):
	// zero takes correlate.DefaultGroupWait, negative pages at once.
	GroupWait time.Duration
	// Mute holds silences: a muted alert is recorded but joins no event.
	Mute []correlate.Muter
	// Rejected, when set, gets each held record (ordered streams, see
	// Process) that fails to decode when it is applied, so that a live
	// source can dead-letter it as it does the errors Process returns.
	Rejected func(rec *ingest.Record, err error)
}

// Stats are the pipeline's counters. Maps are keyed "stream/format" or
// "stream/reason".
type Stats struct {
	Records       map[string]int64
	DecodeErrors  map[string]int64
	Observations  int64
	Late          int64
	BucketsClosed int64
	Series        int
	Findings      int64
	Events        int64
	// OutageEvents counts event notifications (open, grow, resolve).
	OutageEvents int64
	Watermark    int64
	// Unjudgeable lists, by rule, the series the rule cannot judge at its
	// threshold (detectors.Unjudgeable).
	Unjudgeable map[string][]string
}

// Pipeline is not safe for concurrent use, except Stats, StageCounters,
// Event, ActiveEvents and ActiveAlerts, which the operations endpoints
// call.
type Pipeline struct {
	cfg    Config
	decode *decodeStage
	agg    *aggregateStage
	feeds  *feedHealthStage
	judge  *judgeStage
	alert  *alertStage
	corr   *correlateStage
	out    *outStage
	// silences and faults are the mute stages.
	silences *muteSilences
	faults   *muteFeedFaults
	// chain is the stages a closed bucket goes down, from judge to out.
	chain []Stage
	batch Batch
	log   *slog.Logger
}

// New builds a pipeline; out receives every alert event, in order.
func New(cfg Config, out func(*alerting.Event)) (*Pipeline, error) {
	if cfg.Rules == nil {
		set, err := rules.Default()
		if err != nil {
			return nil, err
		}
		cfg.Rules = set
	}
	if cfg.Map == nil {
		cfg.Map = netmap.New()
	}
	if cfg.SilentAfter <= 0 {
		cfg.SilentAfter = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Pipeline{cfg: cfg, log: cfg.Logger}
	p.agg = newAggregateStage(cfg)
	p.decode = newDecodeStage(cfg, p.agg)
	var err error
	if p.corr, err = newCorrelateStage(cfg, p.agg.level); err != nil {
		return nil, err
	}
	p.feeds, p.judge, p.alert, p.out = newFeedHealthStage(cfg), newJudgeStage(cfg), newAlertStage(cfg), &outStage{alerts: out, events: cfg.Events}
	p.alert.place = p.corr.corr.Label
	p.silences = &muteSilences{mute: cfg.Mute, mutedAlerts: mutedAlerts{muted: map[string]string{}}}
	p.faults = &muteFeedFaults{faults: map[string]string{}, mutedAlerts: mutedAlerts{muted: map[string]string{}}}
	p.chain = []Stage{p.feeds, p.judge, p.alert, p.silences, p.faults, p.corr, p.out}
	return p, nil
}

// Stages returns the names of the stages, in order: decode and aggregate,
// then the chain each closed bucket goes down.
func (p *Pipeline) Stages() []string {
	names := []string{p.decode.Name(), p.agg.Name()}
	for _, s := range p.chain {
		names = append(names, s.Name())
	}
	return names
}

// Insert puts s into the chain before the stage named before
// (feed-health, judge, alert, mute-silences, mute-feed-faults, correlate
// or out, or one inserted earlier). Call it before the
// first bucket closes and before UnmarshalBinary, which restores s's
// checkpoint section. Names are unique.
func (p *Pipeline) Insert(before string, s Stage) error {
	at := -1
	for i, t := range p.chain {
		if t.Name() == s.Name() || s.Name() == p.decode.Name() || s.Name() == p.agg.Name() {
			return fmt.Errorf("pipeline: a stage named %q is already in the chain", s.Name())
		}
		if t.Name() == before {
			at = i
		}
	}
	if at < 0 {
		return fmt.Errorf("pipeline: no stage %q to insert %q before", before, s.Name())
	}
	p.chain = slices.Insert(p.chain, at, s)
	return nil
}

// Remove takes the stage named name out of the chain: how a pipeline
// that must not do what the default chain does says so, as a scaled-out
// stage two's tasks but the first drop feed-health (a deployment judges
// its feeds once). Call it before the first bucket closes. A built-in
// stage removed still writes its checkpoint section, as it was.
func (p *Pipeline) Remove(name string) error {
	i := slices.IndexFunc(p.chain, func(s Stage) bool { return s.Name() == name })
	if i < 0 {
		return fmt.Errorf("pipeline: no stage %q in the chain to remove", name)
	}
	p.chain = slices.Delete(p.chain, i, i+1)
	return nil
}

// Env returns the decoder environment, for sources that build decoders
// themselves or need the shared state (the routing table).
func (p *Pipeline) Env() *ingest.Env { return p.decode.env }

// Aggregator exposes the aggregator of stage two (the history detectors
// read), for benchmarks and checkpoints.
func (p *Pipeline) Aggregator() *aggregate.Aggregator { return p.agg.agg }

// Decoder returns (building once) the decoder for stream/format.
func (p *Pipeline) Decoder(stream, format string) (ingest.Decoder, error) {
	e, err := p.decode.entry(stream, format)
	if err != nil {
		return nil, err
	}
	return e.dec, nil
}

// Process decodes one record into the open buckets. A record that does not
// decode is counted by reason, logged the first time a reason is seen, and
// returned, so that a live source can dead-letter it; it never stops the
// pipeline.
//
// Records of ordered streams (BGP) are held and decoded when the bucket
// they fall in closes; only a missing decoder is reported at once, and
// their decode errors are counted and logged when they are applied.
func (p *Pipeline) Process(rec *ingest.Record) error { return p.decode.process(rec) }

// Finish applies every held record without closing a bucket: the end of a
// replayed file, after which the state (the routing table) is complete.
func (p *Pipeline) Finish() { p.decode.finish() }

// Advance moves the watermark of both stages: every bucket ending at or
// before wm leaves stage one, merges into stage two, closes and is judged.
// In one process the buckets go straight from one aggregator to the other
// (aggregate.Handoff) instead of through partial records: the same merge,
// without encoding what never leaves the process.
func (p *Pipeline) Advance(wm int64) {
	p.agg.handoff(wm)
	p.Close(wm)
}

// bucket sends a closed bucket down the chain.
func (p *Pipeline) bucket(c *aggregate.Closed) {
	b := &p.batch
	b.reset(c)
	ctx := context.Background()
	for _, s := range p.chain {
		var err error
		if ctx, b, err = s.Exec(ctx, b); err != nil {
			p.log.Error("bucket stopped in the pipeline", "stage", s.Name(), "end", time.Unix(0, c.End).UTC(), "err", err)
			break
		}
		if b == nil {
			break
		}
	}
	p.alert.settle()
}

// Stats returns a copy of the counters.
func (p *Pipeline) Stats() Stats {
	recs, errs := p.decode.counts()
	p.agg.mu.Lock()
	as, wm := p.agg.stats, p.agg.watermark
	maps.Copy(errs, p.agg.errs)
	p.agg.mu.Unlock()
	st := Stats{Records: recs, DecodeErrors: errs,
		Observations: as.Observations, Late: as.Late, BucketsClosed: as.BucketsClosed, Series: as.Series,
		Findings: p.feeds.Counters()["findings"] + p.judge.Counters()["findings"], Events: p.alert.Counters()["alerts"],
		OutageEvents: p.corr.Counters()["outage_events"], Watermark: wm,
		Unjudgeable: p.judge.unjudgeable()}
	return st
}

// StageCounters returns every stage's counters, by stage name.
func (p *Pipeline) StageCounters() map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	out[p.decode.Name()] = p.decode.Counters()
	out[p.agg.Name()] = p.agg.Counters()
	for _, s := range p.chain {
		if c, ok := s.(Counter); ok {
			out[s.Name()] = c.Counters()
		}
	}
	return out
}

// Event returns an outage event by ID: open, or among the last resolved.
func (p *Pipeline) Event(id string) (alerting.Event, bool) { return p.corr.event(id) }

// ActiveEvents returns the outage events open now, as of the last bucket.
func (p *Pipeline) ActiveEvents() []alerting.Event {
	// Built when asked rather than every bucket: what it returns (each
	// event as its last bucket left it) changes only in Flush.
	return p.corr.active()
}

// ActiveAlerts returns the alerts firing now.
func (p *Pipeline) ActiveAlerts() []alerting.Event { return p.alert.firing() }
