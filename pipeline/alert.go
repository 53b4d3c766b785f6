package pipeline

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/netmap"
)

// alertStage turns findings into alert events (alerting.Manager: firing,
// resolved, de-duplicated by alert ID) named as people read them ("MTN
// Uganda (AS20294)"), a firing one labelled with its place's country. Its state is the manager's (the alerts firing); its
// counter is the alert events made.
type alertStage struct {
	mgr *alerting.Manager
	m   *netmap.Map
	// place labels a firing alert with the country of the place it
	// belongs to (correlate.Correlator.Label), for silences on country.
	place func(*alerting.Event) string

	// retire, set by a restore or a rules reload (retireOrphans), says
	// which alerts firing no rule judges any more (judgeStage.orphaned);
	// they resolve on the next bucket.
	retire func(*alerting.Event) string

	// dirty says the manager changed since active was copied.
	dirty bool

	mu     sync.Mutex
	events int64
	active []alerting.Event
}

func newAlertStage(cfg Config) *alertStage {
	return &alertStage{mgr: alerting.NewManager(cfg.Map), m: cfg.Map}
}

func (a *alertStage) Name() string { return "alert" }

func (a *alertStage) Exec(ctx context.Context, b *Batch) (context.Context, *Batch, error) {
	n := len(b.Alerts)
	add := func(ev *alerting.Event) {
		ev.Summary, ev.Labels = a.m.Annotate(ev.Entity, ev.Summary, ev.Labels)
		ev.Kind = alerting.KindAlert
		a.label(ev)
		b.Alerts = append(b.Alerts, ev)
	}
	if a.retire != nil {
		c := b.Bucket
		for _, ev := range a.mgr.Retire(time.Unix(0, c.Start).UTC(), time.Unix(0, c.End).UTC(), a.retire) {
			add(ev)
		}
		a.retire = nil
	}
	for i := range b.Findings {
		f := &b.Findings[i]
		if ev := a.mgr.Handle(f.Rule, f.Finding); ev != nil {
			add(ev)
		}
	}
	if len(b.Alerts) > n {
		a.dirty = true
		a.mu.Lock()
		a.events += int64(len(b.Alerts) - n)
		a.mu.Unlock()
	}
	return ctx, b, nil
}

// label gives a firing alert (not a feed fault's) its place's country.
func (a *alertStage) label(ev *alerting.Event) {
	if a.place != nil && ev.Status == alerting.Firing && ev.Detector != "feed_health" {
		a.place(ev)
	}
}

// settle copies the alerts firing for ActiveAlerts, once the bucket has
// gone down the whole chain: correlate names each alert's event in place.
func (a *alertStage) settle() {
	if !a.dirty {
		return
	}
	a.dirty = false
	act := a.mgr.Active()
	a.mu.Lock()
	a.active = act
	a.mu.Unlock()
}

// firing returns the alerts firing, as of the last bucket.
func (a *alertStage) firing() []alerting.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.active)
}

func (a *alertStage) Counters() map[string]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return map[string]int64{"alerts": a.events}
}

func (a *alertStage) save(cp *checkpoint) error {
	var err error
	cp.Alerts, err = a.mgr.MarshalBinary()
	return err
}

func (a *alertStage) restore(cp *checkpoint) error {
	if err := a.mgr.UnmarshalBinary(cp.Alerts); err != nil {
		return err
	}
	a.mu.Lock()
	a.active = a.mgr.Active()
	a.mu.Unlock()
	return nil
}
