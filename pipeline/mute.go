package pipeline

import (
	"bytes"
	"context"
	"encoding/gob"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/obs"
)

// The two mute stages run between alert and correlate: a muted alert is
// recorded and sent (with Muted saying why), but joins no event, so it
// must be muted before correlate groups it. Feed-health alerts are never
// muted. An alert muted when it fired is muted when it resolves, for the
// same reason, so each stage keeps the alerts it muted.

// mutedAlerts is what each mute stage keeps: the alerts it muted that
// still fire, and how many notifications it muted, firing and resolved.
type mutedAlerts struct {
	muted map[string]string // alert ID → why
	count int64
}

// muteFiring mutes a firing alert for why and remembers it.
func (m *mutedAlerts) muteFiring(ev *alerting.Event, why string) {
	ev.Muted = why
	m.muted[ev.ID] = why
	m.count++
}

// muteResolved mutes the resolve of an alert this stage muted when it fired,
// and forgets it.
func (m *mutedAlerts) muteResolved(ev *alerting.Event) {
	if why, ok := m.muted[ev.ID]; ok {
		ev.Muted = why
		delete(m.muted, ev.ID)
		m.count++
	}
}

// muteSilences mutes the alerts a silence covers (Config.Mute). Its state
// is the alerts it muted that still fire; its counter is the alerts it
// muted, firing and resolved.
type muteSilences struct {
	mute []correlate.Muter

	mu sync.Mutex
	mutedAlerts
}

func (s *muteSilences) Name() string { return "mute-silences" }

func (s *muteSilences) Exec(ctx context.Context, b *Batch) (context.Context, *Batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range b.Alerts {
		if ev.Detector == "feed_health" || ev.Muted != "" {
			continue
		}
		if ev.Status == alerting.Resolved {
			s.muteResolved(ev)
			continue
		}
		for _, m := range s.mute {
			if why, ok := m.Mutes(ev); ok {
				s.muteFiring(ev, why)
				break
			}
		}
	}
	return ctx, b, nil
}

func (s *muteSilences) Counters() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]int64{"muted": s.count}
}

func (s *muteSilences) MarshalBinary() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return gobOf(s.muted)
}

func (s *muteSilences) UnmarshalBinary(b []byte) error {
	m := map[string]string{}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&m); err != nil {
		return err
	}
	s.mu.Lock()
	s.muted = m
	s.mu.Unlock()
	return nil
}

// muteFeedFaults mutes, while a feed-health alert fires, the alerts of
// signals from that feed: the detectors hold their state while a feed is
// silent, but a partial fault (a collector losing half its peers) can
// still move a series. Its state is the feed faults firing and the alerts
// it muted that still fire; its counters are the alerts it muted and the
// faults firing.
type muteFeedFaults struct {
	mu     sync.Mutex
	faults map[string]string // feed-health alert ID → feed
	mutedAlerts
}

func (f *muteFeedFaults) Name() string { return "mute-feed-faults" }

// feedFaultPrefix starts the reason of every alert this stage mutes.
const feedFaultPrefix = "feed fault "

func (f *muteFeedFaults) Exec(ctx context.Context, b *Batch) (context.Context, *Batch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ev := range b.Alerts {
		if ev.Detector == "feed_health" {
			_, id, _ := strings.Cut(ev.Entity, ":")
			feed, _, _ := strings.Cut(id, "@")
			if ev.Status == alerting.Firing {
				f.faults[ev.ID] = feed
			} else {
				delete(f.faults, ev.ID)
			}
			continue
		}
		if ev.Muted != "" {
			continue
		}
		if ev.Status == alerting.Resolved {
			f.muteResolved(ev)
			continue
		}
		feed := ""
		if s, ok := obs.Lookup(ev.Signal); ok {
			feed = string(s.Def().Feed)
		}
		if feed == "" {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(f.faults)) {
			if f.faults[id] == feed {
				f.muteFiring(ev, feedFaultPrefix+id)
				break
			}
		}
	}
	return ctx, b, nil
}

func (f *muteFeedFaults) Counters() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return map[string]int64{"muted": f.count, "faults_firing": int64(len(f.faults))}
}

type feedFaultState struct{ Faults, Muted map[string]string }

func (f *muteFeedFaults) MarshalBinary() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return gobOf(feedFaultState{f.faults, f.muted})
}

func (f *muteFeedFaults) UnmarshalBinary(b []byte) error {
	var st feedFaultState
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&st); err != nil {
		return err
	}
	f.mu.Lock()
	f.faults, f.muted = orEmpty(st.Faults), orEmpty(st.Muted)
	f.mu.Unlock()
	return nil
}

// takeLegacy takes the mute state a checkpoint written before the mute
// stages kept in the correlator's section: the feed faults firing, and
// the muted alerts, split by why.
func takeLegacy(corr *correlate.Correlator, s *muteSilences, f *muteFeedFaults) {
	faults, muted := corr.TakeMutes()
	s.mu.Lock()
	f.mu.Lock()
	defer s.mu.Unlock()
	defer f.mu.Unlock()
	f.faults, f.muted, s.muted = orEmpty(faults), map[string]string{}, map[string]string{}
	for id, why := range muted {
		if strings.HasPrefix(why, feedFaultPrefix) {
			f.muted[id] = why
		} else {
			s.muted[id] = why
		}
	}
}

func gobOf(v any) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(v)
	return b.Bytes(), err
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
