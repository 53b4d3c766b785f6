package stage

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/partial"
	"github.com/outagewatch/outagewatch/pipeline"
)

// Local runs both stages in one process with no topic between them: the
// records of each source go to a stage-one pipeline of their own, whose
// flushed buckets are split by route key into the stage-two tasks of
// Partitions partitions, through the same records and de-duplication as
// on Kafka. Tests use it to show that any split gives the alerts of one
// pipeline.
type Local struct {
	sources []string
	pre     map[string]*pipeline.Pipeline
	router  *Router
	tasks   []*Task
	// SourceOf names the source of a record; by default its stream.
	SourceOf func(*ingest.Record) string
	log      *slog.Logger
}

// NewLocal builds the stages: one stage-one pipeline per source (sharing
// cfg.Map, so that the routing table one of them keeps attributes the
// traffic of the others) and partitions stage-two tasks. Alerts of every
// task go to out, outage events to cfg.Events.
func NewLocal(cfg pipeline.Config, sources []string, partitions int, out func(*alerting.Event)) (*Local, error) {
	l := &Local{sources: slices.Clone(sources), pre: map[string]*pipeline.Pipeline{}, log: cfg.Logger,
		SourceOf: func(r *ingest.Record) string { return r.Stream }}
	if l.log == nil {
		l.log = slog.Default()
	}
	pc := cfg
	pc.Events, pc.Tap = nil, nil
	for _, s := range sources {
		p, err := pipeline.New(pc, nil)
		if err != nil {
			return nil, err
		}
		l.pre[s] = p
	}
	l.router = NewRouter(cfg.Map, cfg.ZoneOwners, partitions)
	for i := range partitions {
		t, err := NewPartitionTask(cfg, out, sources, i)
		if err != nil {
			return nil, err
		}
		l.tasks = append(l.tasks, t)
	}
	return l, nil
}

// Tasks returns the stage-two tasks, by partition.
func (l *Local) Tasks() []*Task { return l.tasks }

// Process decodes one record in its source's stage one.
func (l *Local) Process(rec *ingest.Record) error {
	p, ok := l.pre[l.SourceOf(rec)]
	if !ok {
		return fmt.Errorf("stage: record of unknown source %q", l.SourceOf(rec))
	}
	return p.Process(rec)
}

// Advance flushes every source up to wm, sends the batches and markers to
// the tasks through the record encoding, and closes what every source
// has passed.
func (l *Local) Advance(wm int64) error {
	var errs []error
	send := func(part int, r *partial.Record) {
		b, err := partial.Encode(r)
		if err == nil {
			r, err = partial.Decode(b)
		}
		if err == nil {
			err = l.tasks[part].Apply(r)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range l.sources {
		var feeds []partial.FeedCount
		err := l.pre[s].Flush(wm, func(f *aggregate.Flushed) {
			for _, rb := range Split(s, f, l.router) {
				send(rb.Partition, &partial.Record{Batch: rb.Batch})
			}
			feeds = append(feeds, FeedCounts(f)...)
		})
		if err != nil {
			errs = append(errs, err)
		}
		through := wm - wm%l.pre[s].Aggregator().Config().Width
		for i := range l.tasks {
			send(i, &partial.Record{Marker: &partial.Marker{Source: s, Through: through, Feeds: feeds}})
		}
	}
	for _, t := range l.tasks {
		t.Close()
	}
	return errors.Join(errs...)
}
