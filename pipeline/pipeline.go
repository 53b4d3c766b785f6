// Package pipeline wires one instance of outagewatch together: records are
// decoded into observations, bucketed in event time, each closed bucket is
// handed to the detectors that the rules bind to its series, and findings
// become alert events. Live service and replay run this same code; they
// differ only in where records come from and who moves the watermark.
package pipeline

import (
	"bytes"
	"encoding"
	"encoding/gob"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
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
	// NoFeedHealth turns off the feed-silence detector: a scaled-out second
	// stage judges feed health in one partition only.
	NoFeedHealth bool
	// OneStage decodes straight into the buckets that are judged, with no
	// flush and merge between: the single-instance service, whose results
	// must not depend on when it checkpoints (see docs/deployment.md).
	OneStage bool
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

type formatKey struct{ stream, format string }

type decoderEntry struct {
	key     formatKey
	dec     ingest.Decoder
	ordered bool  // records are held until their bucket closes
	records int64 // under Pipeline.mu
}

type boundRule struct {
	rule *rules.Rule
	det  detectors.Detector
	pts  []aggregate.Point
}

// Pipeline is not safe for concurrent use, except Stats and ActiveAlerts,
// which the operations endpoints call.
type Pipeline struct {
	cfg Config
	// pre is stage one: decoded observations accumulate there per bucket
	// until the watermark passes it, then leave as partials (Flush). agg is
	// stage two: partials merge there into the buckets detectors judge.
	// In one process the partials go straight from one to the other.
	pre      *aggregate.Aggregator
	agg      *aggregate.Aggregator
	env      *ingest.Env
	decoders map[formatKey]*decoderEntry
	// last is the decoder of the last record: a live partition or a
	// replayed file sends one stream in one format, so the map lookup
	// (two strings hashed) is rarely needed.
	last  *decoderEntry
	rules []*boundRule
	// match caches which rules watch each series.
	match   matchCache
	silence *detectors.FeedSilence
	held    held
	mgr     *alerting.Manager
	corr    *correlate.Correlator // under mu
	out     func(*alerting.Event)
	log     *slog.Logger

	mu        sync.Mutex
	records   map[string]int64 // restored totals; live counts are in decoders
	errs      map[string]int64
	findings  int64
	events    int64
	outages   int64
	watermark int64
	active    []alerting.Event
	// aggStats is the aggregator's counters as of the last record or bucket,
	// copied under mu so that Stats never reads the aggregator while the
	// processing goroutine writes it.
	aggStats aggregate.Stats
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
	p := &Pipeline{
		cfg: cfg, agg: aggregate.New(cfg.Aggregate), decoders: map[formatKey]*decoderEntry{},
		silence: detectors.NewFeedSilence(cfg.SilentAfter), mgr: alerting.NewManager(cfg.Map), out: out, log: cfg.Logger,
		records: map[string]int64{}, errs: map[string]int64{},
	}
	p.pre = p.agg
	if !cfg.OneStage {
		p.pre = aggregate.New(preConfig(cfg.Aggregate))
	}
	// Held records of ordered streams are applied first as a bucket closes,
	// before any hook samples the state they change.
	p.pre.BeforeClose(func(_, end int64, _ obs.Sink) {
		p.held.release(end, p.applyHeld)
	})
	p.pre.Pending(p.held.earliest)
	sev, err := correlate.FromRules(cfg.Rules.Severity, cfg.Severity)
	if err != nil {
		return nil, err
	}
	p.corr = correlate.New(correlate.Config{Map: cfg.Map, Level: p.level, Severity: sev,
		ZoneOwners: cfg.ZoneOwners, Mute: cfg.Mute, GroupWait: cfg.GroupWait})
	p.env = &ingest.Env{Map: cfg.Map, LocalASNs: cfg.LocalASNs, BeforeClose: p.pre.BeforeClose, Shared: map[string]any{}}
	for _, r := range cfg.Rules.Rules {
		p.rules = append(p.rules, &boundRule{rule: r, det: r.Params.Build(r.Name)})
	}
	return p, nil
}

// Env returns the decoder environment, for sources that build decoders
// themselves or need the shared state (the routing table).
func (p *Pipeline) Env() *ingest.Env { return p.env }

// Aggregator exposes the aggregator of stage two (the history detectors
// read), for benchmarks and checkpoints.
func (p *Pipeline) Aggregator() *aggregate.Aggregator { return p.agg }

// Decoder returns (building once) the decoder for stream/format.
func (p *Pipeline) Decoder(stream, format string) (ingest.Decoder, error) {
	e, err := p.entry(stream, format)
	if err != nil {
		return nil, err
	}
	return e.dec, nil
}

func (p *Pipeline) entry(stream, format string) (*decoderEntry, error) {
	if e := p.last; e != nil && e.key.stream == stream && e.key.format == format {
		return e, nil
	}
	k := formatKey{stream, format}
	if e, ok := p.decoders[k]; ok {
		p.last = e
		return e, nil
	}
	d, err := ingest.NewDecoder(stream, format, p.env)
	if err != nil {
		return nil, err
	}
	e := &decoderEntry{key: k, dec: d, ordered: ingest.Ordered(stream)}
	p.mu.Lock()
	p.decoders[k] = e
	p.mu.Unlock()
	p.last = e
	return e, nil
}

// Process decodes one record into the open buckets. A record that does not
// decode is counted by reason, logged the first time a reason is seen, and
// returned, so that a live source can dead-letter it; it never stops the
// pipeline.
//
// Records of ordered streams (BGP) are held and decoded when the bucket
// they fall in closes; only a missing decoder is reported at once, and
// their decode errors are counted and logged when they are applied.
func (p *Pipeline) Process(rec *ingest.Record) error {
	e, err := p.entry(rec.Stream, rec.Format)
	switch {
	case err != nil:
	case e.ordered:
		p.held.hold(rec)
	default:
		err = e.dec.Decode(rec.Value, p.pre)
	}
	return p.count(e, rec, err, true)
}

// apply decodes rec into the open buckets; received says whether to count
// it as a record in (held records were counted when they arrived).
func (p *Pipeline) apply(rec *ingest.Record, received bool) error {
	e, err := p.entry(rec.Stream, rec.Format)
	if err == nil {
		err = e.dec.Decode(rec.Value, p.pre)
	}
	return p.count(e, rec, err, received)
}

// Finish applies every held record without closing a bucket: the end of a
// replayed file, after which the state (the routing table) is complete.
func (p *Pipeline) Finish() {
	p.held.release(math.MaxInt64, p.applyHeld)
	p.mu.Lock()
	p.aggStats = p.aggregateStats()
	p.mu.Unlock()
}

// aggregateStats counts observations where they arrive (stage one),
// buckets and series where they are judged (stage two), and late data in
// both.
func (p *Pipeline) aggregateStats() aggregate.Stats {
	a, b := p.pre.Stats(), p.agg.Stats()
	if p.pre == p.agg {
		return b
	}
	// Every series judged was first a series of stage one, which keeps
	// them all; it also has those whose first bucket is still open.
	return aggregate.Stats{Observations: a.Observations, Late: a.Late + b.Late, BucketsClosed: b.BucketsClosed,
		Series: max(a.Series, b.Series)}
}

func (p *Pipeline) count(e *decoderEntry, rec *ingest.Record, err error, received bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.aggStats = p.aggregateStats()
	if e != nil && received {
		e.records++
	}
	if err != nil {
		k := rec.Stream + "/" + ingest.Reason(err)
		if p.errs[k] == 0 {
			p.log.Warn("record does not decode; skipped, and further errors of this kind are only counted",
				"stream", rec.Stream, "format", rec.Format, "topic", rec.Topic, "offset", rec.Offset, "err", err)
		}
		p.errs[k]++
		return fmt.Errorf("%s/%s record: %w", rec.Stream, rec.Format, err)
	}
	return nil
}

// Advance moves the watermark of both stages: every bucket ending at or
// before wm leaves stage one, merges into stage two, closes and is judged.
// In one process the buckets go straight from one aggregator to the other
// (aggregate.Handoff) instead of through partial records: the same merge,
// without encoding what never leaves the process.
func (p *Pipeline) Advance(wm int64) {
	if p.pre == p.agg {
		p.Close(wm)
		return
	}
	if err := p.pre.Handoff(wm, p.agg, p.rejectHandoff); err != nil {
		p.log.Error("bucket not flushed", "err", err)
	}
	p.Close(wm)
}

// rejectHandoff counts a partial that stage two refused in process, where
// it is a bug in this build rather than bad input: logged, never silent.
func (p *Pipeline) rejectHandoff(err error) {
	p.countPartialError(err)
	p.log.Error("partial not merged", "err", err)
}

func (p *Pipeline) judge(c *aggregate.Closed) {
	if p.cfg.Tap != nil {
		p.cfg.Tap(c)
	}
	if !p.cfg.NoFeedHealth {
		p.silence.Bucket(c, func(f detectors.Finding) { p.emit(nil, f) })
	}
	for _, br := range p.rules {
		br.pts = br.pts[:0]
	}
	for _, pt := range c.Points {
		idx, ok := p.match.get(pt.Series)
		if !ok {
			idx = p.matchRules(pt.Series)
			p.match.put(pt.Series, idx)
		}
		for _, i := range idx {
			p.rules[i].pts = append(p.rules[i].pts, pt)
		}
	}
	for _, br := range p.rules {
		if len(br.pts) == 0 {
			continue
		}
		br.det.Bucket(c, br.pts, func(f detectors.Finding) { p.emit(br.rule, f) })
	}
	p.mu.Lock()
	evs := p.corr.Flush(time.Unix(0, c.End).UTC())
	p.outages += int64(len(evs))
	p.mu.Unlock()
	if p.cfg.Events != nil {
		for _, ev := range evs {
			p.cfg.Events(ev)
		}
	}
}

// matchRules returns the indexes of the rules that watch s.
func (p *Pipeline) matchRules(s *aggregate.Series) []int {
	var idx []int
	for i, br := range p.rules {
		if br.rule.Matches(s.Signal, s.Entity) {
			idx = append(idx, i)
		}
	}
	return idx
}

// level reads a series' history for the correlator's traffic shares.
func (p *Pipeline) level(signal, entity string, t time.Time) (float64, bool) {
	sig, ok := obs.Lookup(signal)
	if !ok {
		return 0, false
	}
	s := p.agg.Series(aggregate.Key{Signal: sig, Entity: entity})
	if s == nil {
		return 0, false
	}
	return s.Hist.Get(t.UnixNano())
}

func (p *Pipeline) emit(r *rules.Rule, f detectors.Finding) {
	ev := p.mgr.Handle(r, f)
	if ev != nil { // names people read: "MTN Uganda (AS20294)", "Spain"
		ev.Summary, ev.Labels = p.cfg.Map.Annotate(ev.Entity, ev.Summary, ev.Labels)
	}
	p.mu.Lock() // the correlator is read by Event from the HTTP side
	if ev != nil {
		ev.Kind = alerting.KindAlert
		p.corr.Add(ev)
	}
	p.findings++
	if ev != nil {
		p.events++
		p.active = p.mgr.Active()
	}
	p.mu.Unlock()
	if ev != nil && p.out != nil {
		p.out(ev)
	}
}

// Stats returns a copy of the counters.
func (p *Pipeline) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	as := p.aggStats
	recs := maps.Clone(p.records)
	for k, e := range p.decoders {
		recs[k.stream+"/"+k.format] += e.records
	}
	st := Stats{Records: recs, DecodeErrors: maps.Clone(p.errs),
		Observations: as.Observations, Late: as.Late, BucketsClosed: as.BucketsClosed, Series: as.Series,
		Findings: p.findings, Events: p.events, OutageEvents: p.outages, Watermark: p.watermark}
	for _, b := range p.rules {
		if u, ok := b.det.(detectors.Unjudgeable); ok {
			if l := u.Unjudgeable(); len(l) > 0 {
				if st.Unjudgeable == nil {
					st.Unjudgeable = map[string][]string{}
				}
				st.Unjudgeable[b.rule.Name] = l
			}
		}
	}
	return st
}

// Event returns an outage event by ID: open, or among the last resolved.
func (p *Pipeline) Event(id string) (alerting.Event, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.corr.Event(id)
}

// ActiveEvents returns the outage events open now, as of the last bucket.
func (p *Pipeline) ActiveEvents() []alerting.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Built when asked rather than every bucket: what it returns (each
	// event as its last bucket left it) changes only in Flush.
	return p.corr.Active()
}

// ActiveAlerts returns the alerts firing now.
func (p *Pipeline) ActiveAlerts() []alerting.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.active)
}

type checkpoint struct {
	// Formats lists the decoders built, so a restore builds them (and the
	// shared state they own) before putting that state back.
	Formats []string
	// Shared is the state of stateful decoders (the routing table): every
	// value in Env.Shared that implements encoding.BinaryMarshaler.
	Shared     map[string][]byte
	Held       []heldRecord
	Aggregator []byte
	// Pre is stage one's open buckets (absent from older checkpoints,
	// whose open buckets are all in Aggregator).
	Pre       []byte
	Detectors map[string][]byte
	Silence   *detectors.FeedSilence
	Alerts    []byte
	Outages   []byte
	Records   map[string]int64
	Errors    map[string]int64
	Watermark int64
}

// MarshalBinary checkpoints everything the pipeline knows: history, open
// buckets, held records, detector and alert state, and the state of
// stateful decoders (the routing table).
func (p *Pipeline) MarshalBinary() ([]byte, error) {
	cp := checkpoint{Detectors: map[string][]byte{}, Silence: p.silence, Watermark: p.watermark, Held: p.held.recs,
		Shared: map[string][]byte{}}
	var err error
	for k := range p.decoders {
		cp.Formats = append(cp.Formats, k.stream+"/"+k.format)
	}
	slices.Sort(cp.Formats)
	for _, k := range slices.Sorted(maps.Keys(p.env.Shared)) {
		if m, ok := p.env.Shared[k].(encoding.BinaryMarshaler); ok {
			if cp.Shared[k], err = m.MarshalBinary(); err != nil {
				return nil, fmt.Errorf("pipeline: checkpoint decoder state %s: %w", k, err)
			}
		}
	}
	if cp.Aggregator, err = p.agg.MarshalBinary(); err != nil {
		return nil, err
	}
	if p.pre != p.agg {
		if cp.Pre, err = p.pre.MarshalBinary(); err != nil {
			return nil, err
		}
	}
	for _, br := range p.rules {
		if cp.Detectors[br.rule.Name], err = br.det.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("pipeline: checkpoint rule %s: %w", br.rule.Name, err)
		}
	}
	if cp.Alerts, err = p.mgr.MarshalBinary(); err != nil {
		return nil, err
	}
	if cp.Outages, err = p.corr.MarshalBinary(); err != nil {
		return nil, err
	}
	st := p.Stats()
	p.mu.Lock()
	cp.Records, cp.Errors = st.Records, p.errs
	var b bytes.Buffer
	err = gob.NewEncoder(&b).Encode(&cp)
	p.mu.Unlock()
	return b.Bytes(), err
}

// UnmarshalBinary restores a checkpoint into a new pipeline built with the
// same configuration. Rules that are new since the checkpoint start fresh.
func (p *Pipeline) UnmarshalBinary(b []byte) error {
	var cp checkpoint
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&cp); err != nil {
		return fmt.Errorf("pipeline: restore: %w", err)
	}
	for _, f := range cp.Formats {
		stream, format, _ := strings.Cut(f, "/")
		if _, err := p.entry(stream, format); err != nil {
			return fmt.Errorf("pipeline: restore: %w", err)
		}
	}
	for k, b := range cp.Shared {
		u, ok := p.env.Shared[k].(encoding.BinaryUnmarshaler)
		if !ok {
			return fmt.Errorf("pipeline: restore: no decoder owns state %q", k)
		}
		if err := u.UnmarshalBinary(b); err != nil {
			return fmt.Errorf("pipeline: restore decoder state %s: %w", k, err)
		}
	}
	if err := p.agg.UnmarshalBinary(cp.Aggregator); err != nil {
		return err
	}
	if len(cp.Pre) > 0 && p.pre != p.agg {
		if err := p.pre.UnmarshalBinary(cp.Pre); err != nil {
			return err
		}
	}
	p.held = held{}
	for _, h := range cp.Held {
		p.held.hold(h.Rec)
	}
	for _, br := range p.rules {
		if st, ok := cp.Detectors[br.rule.Name]; ok {
			if err := br.det.UnmarshalBinary(st); err != nil {
				return err
			}
		}
	}
	if err := p.mgr.UnmarshalBinary(cp.Alerts); err != nil {
		return err
	}
	if len(cp.Outages) > 0 {
		if err := p.corr.UnmarshalBinary(cp.Outages); err != nil {
			return err
		}
	}
	if cp.Silence != nil {
		p.silence = cp.Silence
	}
	p.mu.Lock()
	p.records, p.errs, p.watermark = cp.Records, cp.Errors, cp.Watermark
	p.aggStats = p.aggregateStats()
	if p.records == nil {
		p.records = map[string]int64{}
	}
	if p.errs == nil {
		p.errs = map[string]int64{}
	}
	p.active = p.mgr.Active()
	p.mu.Unlock()
	return nil
}
