package pipeline

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/detectors"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
	"github.com/outagewatch/outagewatch/rules"
)

// The stages' tests build each stage on its own, with a signal, a format
// and a detector of their own, so that what each stage does is read off
// exact inputs rather than off a fixture's alerts.

const width = int64(300e9) // five-minute buckets

var (
	testFeed   = obs.Feed("stagetest")
	testSignal = obs.Register(obs.SignalDef{Name: "stagetest_bytes", Unit: "bytes", Kind: obs.KindVolume,
		Feed: testFeed, Agg: obs.Sum, ZeroWhenAbsent: true})
)

func init() {
	// "entity,value,seconds": one observation of testSignal; anything else
	// is an error of reason "syntax".
	dec := func(env *ingest.Env) (ingest.Decoder, error) { return csvDecoder{}, nil }
	ingest.RegisterFormat("stagetest", "csv", dec)
	// The same, held until its bucket closes.
	ingest.RegisterOrdered("stagetestheld")
	ingest.RegisterFormat("stagetestheld", "csv", dec)
}

type csvDecoder struct{}

func (csvDecoder) Decode(v []byte, sink obs.Sink) error {
	f := strings.Split(string(v), ",")
	if len(f) != 3 {
		return ingest.Errorf("syntax", "want entity,value,seconds, got %q", v)
	}
	val, err1 := strconv.ParseFloat(f[1], 64)
	sec, err2 := strconv.ParseInt(f[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return ingest.Errorf("syntax", "%v", err)
	}
	sink.Observe(&obs.Observation{Time: sec * 1e9, Signal: testSignal, Entity: f[0], Value: val})
	return nil
}

func rec(stream, v string, sec int64) *ingest.Record {
	return &ingest.Record{Stream: stream, Format: "csv", Time: sec * 1e9, Value: []byte(v)}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// echo is a detector that finds every point it is given, firing, with the
// point's value, and counts them (its state).
type echo struct{ Seen int }

func (d *echo) Bucket(c *aggregate.Closed, pts []aggregate.Point, emit func(detectors.Finding)) {
	for _, p := range pts {
		d.Seen++
		emit(detectors.Finding{Status: detectors.Firing, Detector: "echo", Signal: p.Series.Signal.String(),
			Entity: p.Series.Entity, Start: c.Start, At: c.End, Observed: p.Value, Summary: p.Series.Entity + " seen"})
	}
}
func (d *echo) MarshalBinary() ([]byte, error) { return []byte(strconv.Itoa(d.Seen)), nil }
func (d *echo) UnmarshalBinary(b []byte) (err error) {
	d.Seen, err = strconv.Atoi(string(b))
	return err
}

// echoParams builds echo detectors.
type echoParams struct{}

func (echoParams) Validate() error                 { return nil }
func (echoParams) Build(string) detectors.Detector { return &echo{} }

func testRule(name, entities string) *rules.Rule {
	return &rules.Rule{Name: name, Detector: "echo", Params: echoParams{}, Signals: []obs.Signal{testSignal},
		Entities: []string{entities}, Severity: "warning"}
}

// aggregateStage: observations decoded into stage one reach stage two's
// buckets only when the watermark passes them, are counted where they
// arrive, and a refused partial is counted by reason.
func TestAggregateStage(t *testing.T) {
	a := newAggregateStage(Config{Aggregate: aggregate.Config{Width: width}, Logger: quiet()})
	a.pre.Observe(&obs.Observation{Time: 10e9, Signal: testSignal, Entity: "asn:1", Value: 5})
	a.pre.Observe(&obs.Observation{Time: 20e9, Signal: testSignal, Entity: "asn:1", Value: 2})
	a.pre.Observe(&obs.Observation{Time: width + 1, Signal: testSignal, Entity: "asn:2", Value: 9})
	var closed []*aggregate.Closed
	judge := func(c *aggregate.Closed) { cp := *c; cp.Points = slices.Clone(c.Points); closed = append(closed, &cp) }
	a.handoff(width)
	a.close(width, judge)
	if len(closed) != 1 || closed[0].Start != 0 || closed[0].End != width {
		t.Fatalf("closed %+v, want the one bucket [0, %d)", closed, width)
	}
	var got []string
	for _, p := range closed[0].Points {
		if !p.Missing {
			got = append(got, fmt.Sprintf("%s=%g", p.Series.Entity, p.Value))
		}
	}
	if !slices.Equal(got, []string{"asn:1=7"}) {
		t.Fatalf("first bucket %v, want [asn:1=7]", got)
	}
	// A partial for the closed bucket is late: refused and counted.
	err := a.mergeFeeds(0, map[obs.Feed]int64{testFeed: 1})
	if !errors.Is(err, aggregate.ErrLatePartial) {
		t.Fatalf("merge into a closed bucket: %v, want ErrLatePartial", err)
	}
	c := a.Counters()
	want := map[string]int64{"observations": 3, "late": 0, "buckets_closed": 1, "series": 2, "watermark": width,
		"errors/partial/late": 1}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("counter %s = %d, want %d (all: %v)", k, c[k], v, c)
		}
	}
	if err := a.flush(2*width, func(*aggregate.Flushed) {}); err != nil {
		t.Fatal(err)
	}
	// Its checkpoint section: the buckets, the watermark and the partial
	// errors, and nothing of decode's errors.
	var cp checkpoint
	if err := a.save(&cp); err != nil {
		t.Fatal(err)
	}
	cp.Errors["flows/syntax"] = 4
	b := newAggregateStage(Config{Aggregate: aggregate.Config{Width: width}, Logger: quiet()})
	if err := b.restore(&cp); err != nil {
		t.Fatal(err)
	}
	if c := b.Counters(); c["watermark"] != width || c["errors/partial/late"] != 1 || c["errors/flows/syntax"] != 0 || c["series"] != 2 {
		t.Fatalf("restored counters %v", c)
	}
}

// decodeStage: records decode into stage one, counted by stream/format;
// a bad one is counted by reason and returned; records of an ordered
// stream wait until the bucket they fall in closes.
func TestDecodeStage(t *testing.T) {
	var rejected []string
	a := newAggregateStage(Config{Aggregate: aggregate.Config{Width: width}, Logger: quiet()})
	d := newDecodeStage(Config{Map: netmap.New(), Logger: quiet(),
		Rejected: func(r *ingest.Record, err error) { rejected = append(rejected, string(r.Value)) }}, a)
	for _, r := range []*ingest.Record{rec("stagetest", "asn:1,5,10", 10), rec("stagetest", "asn:1,3,20", 20),
		rec("stagetestheld", "asn:7,1,30", 30), rec("stagetestheld", "garbage", 40)} {
		if err := d.process(r); err != nil {
			t.Fatalf("record %s: %v", r.Value, err)
		}
	}
	err := d.process(rec("stagetest", "oops", 50))
	if err == nil || ingest.Reason(err) != "syntax" {
		t.Fatalf("bad record: %v, want a syntax error", err)
	}
	if _, err := d.entry("nosuch", "csv"); err == nil {
		t.Fatal("a decoder for an unknown stream")
	}
	if d.held.Len() != 2 || a.pre.Stats().Observations != 2 {
		t.Fatalf("%d held, %d observed; want 2 held and 2 observed", d.held.Len(), a.pre.Stats().Observations)
	}
	// The next bucket's record closes nothing; closing the first applies
	// the held records before its gauges are read.
	a.handoff(width)
	if d.held.Len() != 0 || a.pre.Stats().Observations != 3 {
		t.Fatalf("after the bucket closed: %d held, %d observed; want 0 and 3", d.held.Len(), a.pre.Stats().Observations)
	}
	if !slices.Equal(rejected, []string{"garbage"}) {
		t.Fatalf("rejected %q, want the held garbage", rejected)
	}
	c := d.Counters()
	want := map[string]int64{"records/stagetest/csv": 3, "records/stagetestheld/csv": 2,
		"errors/stagetest/syntax": 1, "errors/stagetestheld/syntax": 1}
	if len(c) != len(want) {
		t.Errorf("counters %v, want %v", c, want)
	}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("counter %s = %d, want %d", k, c[k], v)
		}
	}
	// Its section: the formats built, the held records and the counters.
	if err := d.process(rec("stagetestheld", "asn:7,2,400", 400)); err != nil {
		t.Fatal(err)
	}
	var cp checkpoint
	if err := d.save(&cp); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cp.Formats, []string{"stagetest/csv", "stagetestheld/csv"}) || len(cp.Held) != 1 || cp.Records["stagetest/csv"] != 3 {
		t.Fatalf("section: formats %v, %d held, records %v", cp.Formats, len(cp.Held), cp.Records)
	}
	cp.Errors["partial/late"] = 2
	a2 := newAggregateStage(Config{Aggregate: aggregate.Config{Width: width}, Logger: quiet()})
	d2 := newDecodeStage(Config{Map: netmap.New(), Logger: quiet()}, a2)
	if err := d2.restore(&cp); err != nil {
		t.Fatal(err)
	}
	if len(d2.decoders) != 2 || d2.held.Len() != 1 || d2.Counters()["records/stagetestheld/csv"] != 3 || d2.Counters()["errors/partial/late"] != 0 {
		t.Fatalf("restored %d decoders, %d held, counters %v", len(d2.decoders), d2.held.Len(), d2.Counters())
	}
}

// closedOf builds a closed bucket [start, start+width) of the given values
// of testSignal, with series from agg.
func closedOf(agg *aggregate.Aggregator, start int64, feed int64, vals ...any) *aggregate.Closed {
	c := &aggregate.Closed{Start: start, End: start + width, FeedObservations: map[obs.Feed]int64{}}
	if feed > 0 {
		c.FeedObservations[testFeed] = feed
	}
	for i := 0; i < len(vals); i += 2 {
		e := vals[i].(string)
		agg.Observe(&obs.Observation{Time: 0, Signal: testSignal, Entity: e})
		c.Points = append(c.Points, aggregate.Point{Series: agg.Series(aggregate.Key{Signal: testSignal, Entity: e}), Value: vals[i+1].(float64)})
	}
	return c
}

func findingsOf(b *Batch) []string {
	var out []string
	for _, f := range b.Findings {
		rule := "-"
		if f.Rule != nil {
			rule = f.Rule.Name
		}
		out = append(out, fmt.Sprintf("%s %s %s %s %g", rule, f.Detector, f.Status, f.Entity, f.Observed))
	}
	return out
}

// judgeStage: each point goes to the detectors of the rules that watch
// its series; findings come in the rules' order.
func TestJudgeStage(t *testing.T) {
	agg := aggregate.New(aggregate.Config{Width: width})
	newJudge := func() (*judgeStage, *echo, *echo) {
		da, db := &echo{}, &echo{}
		j := &judgeStage{rules: []*boundRule{
			{rule: testRule("nets", "asn:*"), det: da}, {rule: testRule("countries", "country:*"), det: db}}}
		return j, da, db
	}
	j, da, _ := newJudge()
	taps := 0
	j.tap = func(*aggregate.Closed) { taps++ }
	var b Batch
	b.reset(closedOf(agg, 0, 3, "asn:1", 5.0, "country:UG", 3.0, "asn:2", 7.0, "zone:x", 1.0))
	if _, _, err := j.Exec(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	want := []string{"nets echo firing asn:1 5", "nets echo firing asn:2 7", "countries echo firing country:UG 3"}
	if got := findingsOf(&b); !slices.Equal(got, want) || taps != 1 {
		t.Fatalf("findings %q (tap %d), want %q (tap 1)", got, taps, want)
	}
	if c := j.Counters(); c["findings"] != 3 {
		t.Fatalf("findings counter %v, want 3", c)
	}
	// Its section: every rule's detector by rule name.
	var cp checkpoint
	if err := j.save(&cp); err != nil {
		t.Fatal(err)
	}
	if string(cp.Detectors["nets"]) != strconv.Itoa(da.Seen) || string(cp.Detectors["countries"]) != "1" {
		t.Fatalf("section %q", cp.Detectors)
	}
	r, ra, rb := newJudge()
	if err := r.restore(&cp); err != nil {
		t.Fatal(err)
	}
	if ra.Seen != da.Seen || rb.Seen != 1 || r.Counters()["findings"] != 0 {
		t.Fatalf("restored seen %d and %d, want %d and 1", ra.Seen, rb.Seen, da.Seen)
	}
}

// feed-health: a feed that goes quiet fires once, ahead of the rules'
// findings (its stage runs before judge); a pipeline without the stage
// (a stage-two task but the first) finds no feed fault in the same
// buckets, and still checkpoints the detector where it always was.
func TestFeedHealthStage(t *testing.T) {
	agg := aggregate.New(aggregate.Config{Width: width})
	fh := &feedHealthStage{silence: detectors.NewFeedSilence(1)}
	j := &judgeStage{rules: []*boundRule{{rule: testRule("nets", "asn:*"), det: &echo{}}}}
	var b Batch
	fired := -1
	for i := 1; i < 50 && fired < 0; i++ {
		b.reset(closedOf(agg, int64(i)*width, 0, "asn:1", 0.0))
		if i < 4 {
			b.Bucket.FeedObservations[testFeed] = 3
		}
		fh.Exec(context.Background(), &b)
		j.Exec(context.Background(), &b)
		if got := findingsOf(&b); len(got) == 2 {
			if want := []string{"- feed_health firing feed:stagetest 0", "nets echo firing asn:1 0"}; !slices.Equal(got, want) {
				t.Fatalf("bucket %d: findings %q, want %q", i, got, want)
			}
			fired = i
		}
	}
	if fired < 0 {
		t.Fatal("the feed went quiet for 50 buckets and feed health never fired")
	}
	if c := fh.Counters(); c["findings"] != 1 {
		t.Fatalf("findings counter %v, want 1", c)
	}
	var cp checkpoint
	if err := fh.save(&cp); err != nil || cp.Silence != fh.silence {
		t.Fatalf("section %p, %v", cp.Silence, err)
	}
	r := &feedHealthStage{silence: detectors.NewFeedSilence(1)}
	if err := r.restore(&cp); err != nil || r.silence != fh.silence || r.Counters()["findings"] != 0 {
		t.Fatalf("restored %p, %v", r.silence, err)
	}

	p, err := New(Config{Logger: quiet()}, func(*alerting.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Remove(StageFeedHealth); err != nil {
		t.Fatal(err)
	}
	if got := p.Stages(); slices.Contains(got, StageFeedHealth) || !slices.Contains(got, "judge") {
		t.Fatalf("stages %q after removing feed-health", got)
	}
	if err := p.Remove(StageFeedHealth); err == nil {
		t.Fatal("feed-health removed twice")
	}
	for i := 0; i <= fired; i++ {
		b.reset(closedOf(agg, int64(i)*width, 0, "asn:1", 0.0))
		if i < 4 {
			b.Bucket.FeedObservations[testFeed] = 3
		}
		for _, s := range p.chain {
			s.Exec(context.Background(), &b)
		}
		if slices.ContainsFunc(b.Findings, func(f Finding) bool { return f.Detector == "feed_health" }) {
			t.Fatalf("feed health removed, and bucket %d found %q", i, findingsOf(&b))
		}
	}
	if _, err := p.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
}

func finding(rule *rules.Rule, status, entity string, at int64) Finding {
	return Finding{Rule: rule, Finding: detectors.Finding{Status: status, Detector: "echo", Signal: testSignal.String(),
		Entity: entity, Start: 0, End: at, At: at, Summary: "drop on " + entity}}
}

// alertStage: a finding becomes an alert event the first time it fires
// and when it resolves, named as people read it.
func TestAlertStage(t *testing.T) {
	m := netmap.New()
	m.Names[20294] = "MTN Uganda"
	a := newAlertStage(Config{Map: m})
	r := testRule("nets", "asn:*")
	var b Batch
	b.reset(&aggregate.Closed{End: width})
	b.Findings = []Finding{finding(r, detectors.Firing, "asn:20294", width), finding(r, detectors.Firing, "asn:20294", width),
		finding(r, detectors.Resolved, "asn:9", width),
		{Finding: detectors.Finding{Status: detectors.Firing, Detector: "feed_health", Signal: "records", Entity: "feed:flows", At: width}}}
	a.Exec(context.Background(), &b)
	if len(b.Alerts) != 2 {
		t.Fatalf("%d alerts, want 2 (a repeat and an unknown resolve make none)", len(b.Alerts))
	}
	first := b.Alerts[0]
	if first.ID != alerting.AlertID("nets", testSignal.String(), "asn:20294") || first.Status != alerting.Firing || first.Kind != alerting.KindAlert ||
		first.Summary != "drop on MTN Uganda (AS20294)" || first.Labels["display"] != "MTN Uganda (AS20294)" {
		t.Fatalf("first alert %+v", first)
	}
	if b.Alerts[1].Rule != "feed-health" || b.Alerts[1].Kind != alerting.KindAlert {
		t.Fatalf("second alert %+v, want feed-health", b.Alerts[1])
	}
	if len(a.firing()) != 0 {
		t.Fatal("the alerts firing changed before the bucket left the chain")
	}
	a.settle()
	if f := a.firing(); len(f) != 2 {
		t.Fatalf("%d firing, want 2", len(f))
	}
	var cp checkpoint
	if err := a.save(&cp); err != nil {
		t.Fatal(err)
	}
	b.reset(&aggregate.Closed{End: 2 * width})
	b.Findings = []Finding{finding(r, detectors.Resolved, "asn:20294", 2*width)}
	a.Exec(context.Background(), &b)
	a.settle()
	if len(b.Alerts) != 1 || b.Alerts[0].Status != alerting.Resolved || b.Alerts[0].ID != first.ID || len(a.firing()) != 1 {
		t.Fatalf("resolve: %+v, %d firing", b.Alerts, len(a.firing()))
	}
	if c := a.Counters(); c["alerts"] != 3 {
		t.Fatalf("counters %v, want 3 alerts", c)
	}
	// Its section is the alerts firing at the checkpoint.
	r2 := newAlertStage(Config{Map: m})
	if err := r2.restore(&cp); err != nil {
		t.Fatal(err)
	}
	if f := r2.firing(); len(f) != 2 || f[0].ID == f[1].ID || !slices.ContainsFunc(f, func(e alerting.Event) bool { return e.ID == first.ID }) {
		t.Fatalf("restored firing %+v", f)
	}
}

// correlateStage: firing alerts join an outage event, named on each; one
// muted before it and a feed fault join none; the event's page is due at
// the bucket's end.
func TestCorrelateStage(t *testing.T) {
	c, err := newCorrelateStage(Config{Rules: &rules.Set{}, Map: netmap.New(), GroupWait: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(id, entity, detector, status string) *alerting.Event {
		return &alerting.Event{ID: id, Kind: alerting.KindAlert, Status: status, Rule: "nets", Detector: detector,
			Signal: testSignal.String(), Entity: entity, Start: alertTime(0), At: alertTime(width)}
	}
	a1, a2, fh := mk("a1", "asn:1", "echo", alerting.Firing), mk("a2", "asn:2", "echo", alerting.Firing), mk("fh", "feed:flows", "feed_health", alerting.Firing)
	a2.Muted = "silenced asn:2" // by a mute stage
	var b Batch
	b.reset(&aggregate.Closed{Start: 0, End: width})
	b.Alerts = []*alerting.Event{a1, a2, fh}
	c.Exec(context.Background(), &b)
	if a1.OutageEvent == "" || a1.Muted != "" || a2.OutageEvent != "" || a2.Muted != "silenced asn:2" || fh.OutageEvent != "" || fh.Muted != "" {
		t.Fatalf("a1 %q/%q, a2 %q/%q, feed %q/%q", a1.OutageEvent, a1.Muted, a2.OutageEvent, a2.Muted, fh.OutageEvent, fh.Muted)
	}
	if len(b.Events) != 1 || b.Events[0].ID != a1.OutageEvent || b.Events[0].Status != alerting.Firing {
		t.Fatalf("events %+v, want the one a1 opened", b.Events)
	}
	if ev, ok := c.event(a1.OutageEvent); !ok || ev.ID != a1.OutageEvent || len(c.active()) != 1 {
		t.Fatalf("event %v %v, %d active", ev, ok, len(c.active()))
	}
	var cp checkpoint
	if err := c.save(&cp); err != nil {
		t.Fatal(err)
	}
	// a1's resolve resolves the event; a2's joins nothing.
	b.reset(&aggregate.Closed{Start: width, End: 2 * width})
	r1, r2 := mk("a1", "asn:1", "echo", alerting.Resolved), mk("a2", "asn:2", "echo", alerting.Resolved)
	r2.Muted = "silenced asn:2"
	b.Alerts = []*alerting.Event{r1, r2}
	c.Exec(context.Background(), &b)
	if r1.OutageEvent != a1.OutageEvent || r2.OutageEvent != "" || len(b.Events) != 1 || b.Events[0].Status != alerting.Resolved {
		t.Fatalf("resolves: %q, %q, events %+v", r1.OutageEvent, r2.Muted, b.Events)
	}
	if n := c.Counters()["outage_events"]; n != 2 {
		t.Fatalf("outage events %d, want 2", n)
	}
	// Its section is the correlator's state: the event open at the
	// checkpoint is open again.
	c2, _ := newCorrelateStage(Config{Rules: &rules.Set{}, Map: netmap.New(), GroupWait: -1}, nil)
	if err := c2.restore(&cp); err != nil {
		t.Fatal(err)
	}
	if act := c2.active(); len(act) != 1 || act[0].ID != a1.OutageEvent {
		t.Fatalf("restored active %+v", act)
	}
}

// outStage: alerts to the alert sink in order, then events to the event
// sink; a missing sink is skipped.
func TestOutStage(t *testing.T) {
	var got []string
	sink := func(tag string) func(*alerting.Event) {
		return func(ev *alerting.Event) { got = append(got, tag+" "+ev.ID) }
	}
	o := &outStage{alerts: sink("alert"), events: sink("event")}
	var b Batch
	b.reset(&aggregate.Closed{End: width})
	b.Alerts = []*alerting.Event{{ID: "a"}, {ID: "b"}}
	b.Events = []*alerting.Event{{ID: "e"}}
	o.Exec(context.Background(), &b)
	if want := []string{"alert a", "alert b", "event e"}; !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
	(&outStage{}).Exec(context.Background(), &b) // stage one: no sinks
	if c := o.Counters(); c["alerts_sent"] != 2 || c["outage_events_sent"] != 1 {
		t.Fatalf("counters %v", c)
	}
}

// dropRule is an inserted stage with state: it drops the alerts of one
// rule and counts them, and checkpoints its count.
type dropRule struct {
	rule    string
	Dropped int64
}

func (d *dropRule) Name() string { return "drop-" + d.rule }
func (d *dropRule) Exec(ctx context.Context, b *Batch) (context.Context, *Batch, error) {
	b.Alerts = slices.DeleteFunc(b.Alerts, func(ev *alerting.Event) bool {
		if ev.Rule == d.rule {
			d.Dropped++
			return true
		}
		return false
	})
	return ctx, b, nil
}
func (d *dropRule) Counters() map[string]int64 { return map[string]int64{"dropped": d.Dropped} }
func (d *dropRule) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(d.Dropped)
	return b.Bytes(), err
}
func (d *dropRule) UnmarshalBinary(b []byte) error {
	return gob.NewDecoder(bytes.NewReader(b)).Decode(&d.Dropped)
}

// A stage inserted into the chain sees every closed bucket between its
// neighbours, reports its counters and keeps its own checkpoint section.
func TestInsertedStage(t *testing.T) {
	set := &rules.Set{Rules: []*rules.Rule{testRule("nets", "asn:*")}}
	var sent []string
	p, err := New(Config{Rules: set, Logger: quiet(), Aggregate: aggregate.Config{Width: width}},
		func(ev *alerting.Event) { sent = append(sent, ev.Entity) })
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Insert("nosuch", &dropRule{rule: "x"}); err == nil {
		t.Fatal("inserted before a stage that is not there")
	}
	if err := p.Insert("out", StageFunc{ID: "judge"}); err == nil {
		t.Fatal("inserted a second judge")
	}
	d := &dropRule{rule: "nets"}
	if err := p.Insert("correlate", d); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Stages(), []string{"decode", "aggregate", "feed-health", "judge", "alert", "mute-silences", "mute-feed-faults", "drop-nets", "correlate", "out"}; !slices.Equal(got, want) {
		t.Fatalf("stages %q, want %q", got, want)
	}
	for _, r := range []*ingest.Record{rec("stagetest", "asn:1,5,10", 10), rec("stagetest", "asn:2,5,20", 20)} {
		if err := p.Process(r); err != nil {
			t.Fatal(err)
		}
	}
	p.Advance(width)
	if len(sent) != 0 || d.Dropped != 2 || p.StageCounters()["drop-nets"]["dropped"] != 2 || p.Stats().Events != 2 {
		t.Fatalf("sent %q, dropped %d, counters %v", sent, d.Dropped, p.StageCounters())
	}
	cp, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	q, _ := New(Config{Rules: set, Logger: quiet(), Aggregate: aggregate.Config{Width: width}}, nil)
	d2 := &dropRule{rule: "nets"}
	if err := q.Insert("correlate", d2); err != nil {
		t.Fatal(err)
	}
	if err := q.UnmarshalBinary(cp); err != nil {
		t.Fatal(err)
	}
	if d2.Dropped != 2 {
		t.Fatalf("restored section: dropped %d, want 2", d2.Dropped)
	}
	// A stage that fails stops its bucket there: out sends nothing.
	r, _ := New(Config{Rules: set, Logger: quiet(), Aggregate: aggregate.Config{Width: width}},
		func(ev *alerting.Event) { sent = append(sent, ev.Entity) })
	r.Insert("out", StageFunc{ID: "fail", Fn: func(ctx context.Context, b *Batch) (context.Context, *Batch, error) {
		return ctx, b, errors.New("no")
	}})
	r.Process(rec("stagetest", "asn:1,5,10", 10))
	r.Advance(width)
	if len(sent) != 0 || r.Stats().Events != 1 {
		t.Fatalf("sent %q past a failed stage", sent)
	}
}

func alertTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }
