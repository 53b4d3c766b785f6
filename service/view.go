package service

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
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
// kind/ID, value the notification as the sinks get it) and reads the
// topic from the start, keeping the latest notification of each alert and
// event.
type deploymentView struct {
	s       *Staged
	mu      sync.RWMutex
	alerts  map[string]alerting.Event
	events  map[string]alerting.Event
	pending []alerting.Event
	wake    chan struct{}
	// newest is the latest notification time kept; adds counts the
	// notifications since the last sweep of the ended ones.
	newest time.Time
	adds   int
}

// viewKeep is how long, in data time, the view keeps an alert or event
// after it resolved: the outage page lists ended outages for a day
// (statuspage.Store.Recent), and an event's API answers as long.
const viewKeep = 24 * time.Hour

// viewSweepEvery is how many notifications go between sweeps of the ended
// ones: a sweep walks the whole view, so not on every add.
const viewSweepEvery = 1024

func newDeploymentView(s *Staged) *deploymentView {
	return &deploymentView{s: s, alerts: map[string]alerting.Event{}, events: map[string]alerting.Event{},
		wake: make(chan struct{}, 1)}
}

// publish queues a notification raised here for the topic.
func (v *deploymentView) publish(ev *alerting.Event) {
	v.mu.Lock()
	v.pending = append(v.pending, *ev)
	v.mu.Unlock()
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
			recs := make([]kafka.Record, 0, len(batch))
			for i := range batch {
				b, err := json.Marshal(&batch[i])
				if err != nil {
					continue
				}
				recs = append(recs, kafka.Record{Key: kafka.NewBytes([]byte(batch[i].Kind + "/" + batch[i].ID)), Value: kafka.NewBytes(b)})
			}
			if _, err := v.s.produce(ctx, v.s.cfg.Kafka.ViewTopic, 0, recs); err != nil {
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
			var ev alerting.Event
			if err := json.Unmarshal(batch[i].Value, &ev); err != nil || ev.ID == "" {
				v.s.log.Warn("alert view: record skipped", "offset", batch[i].Offset, "err", err)
				continue
			}
			v.add(ev)
			if v.s.page != nil {
				v.s.page.Add(ev)
			}
		}
		return true
	})
}

// add keeps ev unless a later notification of it is already kept (a
// restored task sends again what it sent before its snapshot).
func (v *deploymentView) add(ev alerting.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	into := v.alerts
	if ev.IsEvent() {
		into = v.events
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
// the last day, not everything ever raised.
func (v *deploymentView) sweep() {
	for _, m := range []map[string]alerting.Event{v.alerts, v.events} {
		for id, ev := range m {
			if ev.Status == alerting.Resolved && v.newest.Sub(ev.At) > viewKeep {
				delete(m, id)
			}
		}
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
