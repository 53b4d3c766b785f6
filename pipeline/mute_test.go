package pipeline

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/correlate"
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/rules"
)

// silenceGB silences the zones of British networks: it reads the country
// label the alert stage gives a zone from its owner.
type silenceGB struct{}

func (silenceGB) Mutes(ev *alerting.Event) (string, bool) {
	return "silence gb-zones", ev.Labels["country"] == "GB" && strings.HasPrefix(ev.Entity, "zone:")
}

func muteMap() *netmap.Map {
	m := netmap.New()
	m.Names[5089] = "Virgin Media"
	m.Countries[5089] = "GB"
	return m
}

// muteAlerts are three buckets of alerts: a feed fault of the test feed
// fires with an alert of that feed (muted by the fault), a zone of a
// British network (silenced) and a country of another feed (an event);
// then all resolve and the network fails again with no fault.
func muteAlerts() [][]*alerting.Event {
	mk := func(id, entity, signal, detector, status string, bucket int64) *alerting.Event {
		return &alerting.Event{ID: id, Kind: alerting.KindAlert, Status: status, Rule: id, Detector: detector,
			Signal: signal, Entity: entity, Start: alertTime(0), At: alertTime(bucket * width)}
	}
	sig := testSignal.String()
	return [][]*alerting.Event{
		{mk("fh", "feed:stagetest", "records", "feed_health", alerting.Firing, 1), mk("net", "asn:5089", sig, "echo", alerting.Firing, 1),
			mk("zone", "zone:virginmedia.com", "dns_failure_ratio_unregistered", "echo", alerting.Firing, 1),
			mk("cc", "country:UG", "unregistered_signal", "echo", alerting.Firing, 1)},
		{mk("fh", "feed:stagetest", "records", "feed_health", alerting.Resolved, 2), mk("net", "asn:5089", sig, "echo", alerting.Resolved, 2),
			mk("zone", "zone:virginmedia.com", "dns_failure_ratio_unregistered", "echo", alerting.Resolved, 2),
			mk("cc", "country:UG", "unregistered_signal", "echo", alerting.Resolved, 2)},
		{mk("net", "asn:5089", sig, "echo", alerting.Firing, 3)},
	}
}

func describe(evs []*alerting.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s %s muted=%q event=%q country=%q", ev.ID, ev.Status, ev.Muted, ev.OutageEvent, ev.Labels["country"]))
	}
	return out
}

// The mute stages, ahead of correlate, mute exactly the alerts the
// correlator muted when it did so itself, for the same reasons, and the
// outage events are the same.
func TestMuteStagesAsTheCorrelatorDid(t *testing.T) {
	old := correlate.New(correlate.Config{Map: muteMap(), Mute: []correlate.Muter{silenceGB{}}, GroupWait: -1})
	p, err := New(Config{Rules: &rules.Set{}, Map: muteMap(), Mute: []correlate.Muter{silenceGB{}}, GroupWait: -1, Logger: quiet()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want, got [][]string
	for i, alerts := range muteAlerts() {
		end := int64(i+1) * width
		for _, ev := range alerts {
			old.Add(ev)
		}
		want = append(want, append(describe(alerts), describe(old.Flush(alertTime(end)))...))

		alerts = muteAlerts()[i]
		var b Batch
		b.reset(&aggregate.Closed{Start: end - width, End: end})
		for _, ev := range alerts {
			p.alert.label(ev)
		}
		b.Alerts = alerts
		ctx, bp := context.Background(), &b
		for _, s := range p.chain[2:] { // mute-silences, mute-feed-faults, correlate, out
			ctx, bp, _ = s.Exec(ctx, bp)
		}
		got = append(got, append(describe(alerts), describe(b.Events)...))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("bucket %d:\n got %q\nwant %q", i+1, got[i], want[i])
		}
	}
	// And what they are: the network muted by the fault, the zone by the
	// silence, both resolves muted alike, and the network's next failure
	// not muted.
	if !strings.Contains(want[0][1], `muted="feed fault fh"`) || !strings.Contains(want[0][2], `muted="silence gb-zones"`) ||
		!strings.Contains(want[0][2], `country="GB"`) || !strings.Contains(want[1][1], `muted="feed fault fh"`) ||
		!strings.Contains(want[1][2], `muted="silence gb-zones"`) || !strings.Contains(want[2][0], `muted=""`) {
		t.Fatalf("the case tests little: %q", want)
	}
	if c := p.StageCounters(); c["mute-silences"]["muted"] != 2 || c["mute-feed-faults"]["muted"] != 2 || c["mute-feed-faults"]["faults_firing"] != 0 {
		t.Fatalf("counters %v", c)
	}
}

// A checkpoint written when the correlator muted alerts itself keeps the
// mute state in the correlator's section: restored, the mute stages take
// it, so the muted alerts' resolves are muted and the fault still mutes.
func TestMuteStagesTakeTheCorrelatorsState(t *testing.T) {
	old := correlate.New(correlate.Config{Map: muteMap(), Mute: []correlate.Muter{silenceGB{}}, GroupWait: -1})
	for _, ev := range muteAlerts()[0] {
		old.Add(ev)
	}
	old.Flush(alertTime(width))
	outages, err := old.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// A whole checkpoint as the older build wrote it: the correlator's
	// section with the mute state, no sections of the mute stages.
	p, _ := New(Config{Rules: &rules.Set{}, Map: muteMap(), Mute: []correlate.Muter{silenceGB{}}, GroupWait: -1, Logger: quiet()}, nil)
	b0, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var cp checkpoint
	if err := gob.NewDecoder(bytes.NewReader(b0)).Decode(&cp); err != nil {
		t.Fatal(err)
	}
	if len(cp.Sections) != 2 {
		t.Fatalf("sections %v, want the two mute stages'", slices.Collect(maps.Keys(cp.Sections)))
	}
	cp.Outages, cp.Sections = outages, nil
	b1, err := gobOf(&cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.UnmarshalBinary(b1); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(p.faults.faults, map[string]string{"fh": "stagetest"}) || !maps.Equal(p.faults.muted, map[string]string{"net": "feed fault fh"}) ||
		!maps.Equal(p.silences.muted, map[string]string{"zone": "silence gb-zones"}) {
		t.Fatalf("took faults %v, fault-muted %v, silenced %v", p.faults.faults, p.faults.muted, p.silences.muted)
	}
	if f, m := p.corr.corr.TakeMutes(); len(f)+len(m) != 0 {
		t.Fatal("the correlator kept the mute state it handed over")
	}
	// Checkpointed now, the state is in the mute stages' own sections.
	b2, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	q, _ := New(Config{Rules: &rules.Set{}, Map: muteMap(), Logger: quiet()}, nil)
	if err := q.UnmarshalBinary(b2); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(q.faults.faults, p.faults.faults) || !maps.Equal(q.faults.muted, p.faults.muted) || !maps.Equal(q.silences.muted, p.silences.muted) {
		t.Fatal("the mute stages' sections did not round-trip")
	}
	var b Batch
	b.reset(&aggregate.Closed{Start: width, End: 2 * width})
	b.Alerts = muteAlerts()[1][1:3] // the network's and the zone's resolves
	ctx, bp := context.Background(), &b
	for _, s := range p.chain[2:] {
		ctx, bp, _ = s.Exec(ctx, bp)
	}
	if got := describe(b.Alerts); got[0] != `net resolved muted="feed fault fh" event="" country=""` || got[1] != `zone resolved muted="silence gb-zones" event="" country=""` {
		t.Fatalf("resolves after the restore: %q", got)
	}
}
