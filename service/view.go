package service

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/internal/kafkaio"
)

// deploymentView is every instance's alerts and outage events, so any
// instance answers the alert and event API and draws the outage page for
// the whole deployment, not only for the stage-two partitions it holds.
// Each instance writes what its tasks raise to a compacted topic (key
// kind/ID/start, value the notification as the sinks get it) and reads the
// topic from the start, keeping the latest notification of each alert and
// event.
//
// An alert's ID is the same every time its rule fires for its entity, so
// the key carries the episode's start: compaction keeps the latest
// notification of each episode, and a tombstone written for an episode
// that ended more than viewKeep ago can never hide a later one. Without
// tombstones the topic, and what a new instance reads at start, would
// hold every episode ever raised.
type deploymentView struct {
	s       *Staged
	mu      sync.RWMutex
	alerts  map[string]alerting.Event
	events  map[string]alerting.Event
	pending []kafka.Record
	wake    chan struct{}
	// keys are the record keys read for each alert and event kept (by
	// kind/ID): those a sweep tombstones. Usually one; an event whose
	// start was revised, or a key written before episodes had their own,
	// adds more.
	keys map[string][]string
	// newest is the latest notification time kept; adds counts the
	// notifications since the last sweep of the ended ones.
	newest time.Time
	adds   int
}

// viewKeep is how long, in data time, the view keeps an alert or event
// after it resolved: the outage page lists ended outages for a day
// (statuspage.Store.Recent), and an event's API answers as long.
const viewKeep = 24 * time.Hour

// viewSegment is the view topic's segment.ms: see createTopics.
const viewSegment = time.Hour

// viewSweepEvery is how many notifications go between sweeps of the ended
// ones: a sweep walks the whole view, so not on every add.
const viewSweepEvery = 1024

func newDeploymentView(s *Staged) *deploymentView {
	return &deploymentView{s: s, alerts: map[string]alerting.Event{}, events: map[string]alerting.Event{},
		keys: map[string][]string{}, wake: make(chan struct{}, 1)}
}

// viewKey is the record key of a notification: its alert or event
// (viewID) and the start of its episode.
func viewKey(ev *alerting.Event) string {
	return viewID(ev) + "/" + strconv.FormatInt(ev.Start.UnixNano(), 10)
}

// viewID names a notification's alert or event, kind/ID: what the keys
// of its episodes are kept by.
func viewID(ev *alerting.Event) string { return ev.Kind + "/" + ev.ID }

// publish queues a notification raised here for the topic.
func (v *deploymentView) publish(ev *alerting.Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	v.mu.Lock()
	v.pending = append(v.pending, kafka.Record{Key: kafka.NewBytes([]byte(viewKey(ev))), Value: kafka.NewBytes(b)})
	v.mu.Unlock()
	v.poke()
}

// poke wakes the writer.
func (v *deploymentView) poke() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// write sends the queued notifications to the topic until ctx ends,
// retrying (with backoff) what a broker error left.
func (v *deploymentView) write(ctx context.Context) {
	r := kafkaio.NewRetry()
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.wake:
		}
		for {
			v.mu.Lock()
			batch := v.pending
			v.pending = nil
			v.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			if _, err := v.s.produce(ctx, v.s.cfg.Kafka.ViewTopic, 0, batch); err != nil {
				v.mu.Lock()
				v.pending = append(batch, v.pending...)
				v.mu.Unlock()
				if kafkaio.Sleep(ctx, r.Fail(time.Now(), v.s.log, "alert view: not written; retrying", err)) != nil {
					return
				}
				continue
			}
			r.OK(v.s.log, "alert view: written again")
		}
	}
}

// follow reads the topic from its start until ctx ends.
func (v *deploymentView) follow(ctx context.Context) {
	k := tp{v.s.cfg.Kafka.ViewTopic, 0}
	kafkaio.FetchBatches(ctx, v.s.cfg.Kafka.Brokers, v.s.opts.Dialer, v.s.log, k.topic, k.part, kafka.FirstOffset, func(batch []kafka.Message) bool {
		for i := range batch {
			v.read(&batch[i])
		}
		return true
	})
}

// read takes in one record of the topic.
func (v *deploymentView) read(m *kafka.Message) {
	if m.Value == nil {
		return // a tombstone: an ended episode, which every sweep drops from memory too
	}
	var ev alerting.Event
	if err := json.Unmarshal(m.Value, &ev); err != nil || ev.ID == "" {
		v.s.log.Warn("alert view: record skipped", "offset", m.Offset, "err", err)
		return
	}
	v.add(ev, string(m.Key))
	if v.s.page != nil {
		v.s.page.Add(ev)
	}
}

// add keeps ev, read under key, unless a later notification of it is
// already kept (a restored task sends again what it sent before its
// snapshot).
func (v *deploymentView) add(ev alerting.Event, key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	into := v.alerts
	if ev.IsEvent() {
		into = v.events
	}
	id := viewID(&ev)
	if !slices.Contains(v.keys[id], key) {
		v.keys[id] = append(v.keys[id], key)
	}
	if old, ok := into[ev.ID]; ok && (old.At.After(ev.At) || ev.IsEvent() && old.Revision > ev.Revision) {
		return
	}
	into[ev.ID] = ev
	if ev.At.After(v.newest) {
		v.newest = ev.At
	}
	if v.adds++; v.adds >= viewSweepEvery {
		v.adds = 0
		v.sweep()
	}
}

// sweep drops the alerts and events that resolved more than viewKeep
// before the newest notification, so the view holds what is firing and
// the last day, not everything ever raised, and queues a tombstone for
// each key they were read under, so compaction drops them from the topic
// too. Every instance sweeps alike; the tombstones of one episode from
// several instances are the same record.
func (v *deploymentView) sweep() {
	var dead []kafka.Record
	for _, m := range []map[string]alerting.Event{v.alerts, v.events} {
		for id, ev := range m {
			if ev.Status == alerting.Resolved && v.newest.Sub(ev.At) > viewKeep {
				delete(m, id)
				kid := viewID(&ev)
				for _, k := range v.keys[kid] {
					dead = append(dead, kafka.Record{Key: kafka.NewBytes([]byte(k))})
				}
				delete(v.keys, kid)
			}
		}
	}
	if len(dead) > 0 {
		v.pending = append(v.pending, dead...)
		v.poke()
	}
}

// firing lists the kept notifications that are firing, by ID.
func firing(m map[string]alerting.Event) []alerting.Event {
	out := []alerting.Event{}
	for _, ev := range m {
		if ev.Status == alerting.Firing {
			out = append(out, ev)
		}
	}
	slices.SortFunc(out, func(a, b alerting.Event) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// ActiveAlerts are the alerts firing anywhere in the deployment.
func (v *deploymentView) ActiveAlerts() []alerting.Event {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return firing(v.alerts)
}

// ActiveEvents are the outage events open anywhere in the deployment.
func (v *deploymentView) ActiveEvents() []alerting.Event {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return firing(v.events)
}

// Event is the latest notification of an outage event, open or resolved.
func (v *deploymentView) Event(id string) (alerting.Event, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	ev, ok := v.events[id]
	return ev, ok
}
