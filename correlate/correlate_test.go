package correlate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/correlate"
	_ "github.com/outagewatch/outagewatch/ingest/bgp" // registers the routing signals
	"github.com/outagewatch/outagewatch/netmap"
	"github.com/outagewatch/outagewatch/obs"
)

var t0 = time.Date(2024, 5, 14, 10, 0, 0, 0, time.UTC)

func alert(status, detector, signal, entity string, start, at time.Time, change float64) *alerting.Event {
	ev := &alerting.Event{ID: alerting.AlertID(detector, signal, entity), Kind: alerting.KindAlert, Status: status,
		Detector: detector, Signal: signal, Entity: entity, Start: start, At: at, ChangePct: change, Severity: "critical"}
	if status == alerting.Resolved {
		end := at
		ev.End = &end
	}
	return ev
}

func testMap() *netmap.Map {
	m := netmap.New()
	m.Countries[5089], m.Names[5089] = "GB", "Virgin Media"
	m.Countries[2856], m.Names[2856] = "GB", "BT"
	return m
}

// A collector that loses its peers explains a withdrawal seen through it:
// the withdrawal is recorded, muted by the fault, and opens no event.
func TestFeedFaultInhibitsWhatItExplains(t *testing.T) {
	c := correlate.New(correlate.Config{Map: testMap(), GroupWait: -1})
	fault := alert(alerting.Firing, "feed_health", "bgp_full_feed_peers", "feed:bgp@rrc01", t0, t0.Add(5*time.Minute), -33)
	c.Add(fault)
	wd := alert(alerting.Firing, "prefix_withdrawal", "bgp_announced_v4", "asn:5089", t0, t0.Add(5*time.Minute), -40)
	c.Add(wd)
	if wd.Muted != "feed fault "+fault.ID || wd.OutageEvent != "" || !fault.Paged() || wd.Paged() {
		t.Fatalf("withdrawal muted %q event %q; fault paged %v", wd.Muted, wd.OutageEvent, fault.Paged())
	}
	if evs := c.Flush(t0.Add(5 * time.Minute)); len(evs) != 0 {
		t.Fatalf("events while the feed is at fault: %+v", evs)
	}
	// Its resolve is muted too; after the fault, the same withdrawal is
	// an outage again.
	c.Add(alert(alerting.Resolved, "feed_health", "bgp_full_feed_peers", "feed:bgp@rrc01", t0, t0.Add(20*time.Minute), 0))
	res := alert(alerting.Resolved, "prefix_withdrawal", "bgp_announced_v4", "asn:5089", t0, t0.Add(25*time.Minute), 0)
	c.Add(res)
	if res.Muted != wd.Muted {
		t.Fatalf("resolve muted %q", res.Muted)
	}
	again := alert(alerting.Firing, "prefix_withdrawal", "bgp_announced_v4", "asn:5089", t0.Add(time.Hour), t0.Add(65*time.Minute), -40)
	c.Add(again)
	evs := c.Flush(t0.Add(65 * time.Minute))
	if again.Muted != "" || len(evs) != 1 || evs[0].Update != "open" || evs[0].Scope.Place != "country:GB" {
		t.Fatalf("after the fault: muted %q, events %+v", again.Muted, evs)
	}
}

// Two networks of one country in one bucket are one event; a growth in
// scope is one more notification; the event resolves with its last member
// and survives a checkpoint in between.
func TestGroupGrowResolveAcrossCheckpoint(t *testing.T) {
	c := correlate.New(correlate.Config{Map: testMap(), GroupWait: -1})
	a := alert(alerting.Firing, "prefix_withdrawal", "bgp_announced_v4", "asn:5089", t0, t0.Add(5*time.Minute), -90)
	c.Add(a)
	evs := c.Flush(t0.Add(5 * time.Minute))
	if len(evs) != 1 || evs[0].Update != "open" || evs[0].Revision != 1 || a.OutageEvent != evs[0].ID {
		t.Fatalf("open: %+v", evs)
	}
	id := evs[0].ID
	if evs := c.Flush(t0.Add(10 * time.Minute)); len(evs) != 0 {
		t.Fatalf("nothing changed, but %d notifications", len(evs))
	}
	b := alert(alerting.Firing, "prefix_withdrawal", "bgp_announced_v4", "asn:2856", t0.Add(10*time.Minute), t0.Add(15*time.Minute), -50)
	c.Add(b)
	evs = c.Flush(t0.Add(15 * time.Minute))
	if len(evs) != 1 || evs[0].ID != id || evs[0].Update != "grow" || len(evs[0].Scope.Entities) != 2 || evs[0].Revision != 2 {
		t.Fatalf("grow: %+v", evs)
	}
	cp, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	c2 := correlate.New(correlate.Config{Map: testMap(), GroupWait: -1})
	if err := c2.UnmarshalBinary(cp); err != nil {
		t.Fatal(err)
	}
	if act := c2.Active(); len(act) != 1 || act[0].ID != id {
		t.Fatalf("restored active %+v", act)
	}
	c2.Add(alert(alerting.Resolved, "prefix_withdrawal", "bgp_announced_v4", "asn:5089", t0, t0.Add(time.Hour), 0))
	// One member still fires: no resolve, but an hour in, the event has
	// lasted long enough to escalate (networks of unknown weight count
	// as 0.1 each: 0.9 × 0.1 × 1 ≥ 0.05).
	evs = c2.Flush(t0.Add(time.Hour))
	if len(evs) != 1 || evs[0].Update != "grow" || evs[0].Severity != "warning" || evs[0].Status != alerting.Firing {
		t.Fatalf("one member still firing: %+v", evs)
	}
	c2.Add(alert(alerting.Resolved, "prefix_withdrawal", "bgp_announced_v4", "asn:2856", t0, t0.Add(2*time.Hour), 0))
	evs = c2.Flush(t0.Add(2 * time.Hour))
	if len(evs) != 1 || evs[0].Update != "resolve" || evs[0].Status != alerting.Resolved || evs[0].Revision != 4 ||
		!evs[0].End.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("resolve: %+v", evs)
	}
	if len(c2.Active()) != 0 {
		t.Fatal("resolved event still active")
	}
	// Its page still answers, with the resolve.
	if ev, ok := c2.Event(id); !ok || ev.Status != alerting.Resolved || ev.Revision != 4 {
		t.Fatalf("resolved event lookup: %v %+v", ok, ev)
	}
	if _, ok := c2.Event("nope"); ok {
		t.Fatal("unknown event found")
	}
}

// Signals of feeds declared in a rules file are views of their own, as
// IODA's three sources are: an outage seen in all three is seen three
// independent ways (confidence 0.85), not once as "other". Observation
// lines with no feed of their own stay one view between them.
func TestDeclaredFeedsAreViewsOfTheirOwn(t *testing.T) {
	for _, d := range []obs.SignalDef{
		{Name: "test_ioda_visible", Unit: "/24 blocks", Kind: obs.KindGauge, Feed: "ioda-bgp", Agg: obs.Last},
		{Name: "test_ioda_probed", Unit: "/24 blocks up", Kind: obs.KindGauge, Feed: "ioda-active-probing", Agg: obs.Last},
		{Name: "test_ioda_sources", Unit: "unique source IPs", Kind: obs.KindDistinct, Feed: "ioda-telescope", Agg: obs.Max},
		{Name: "test_plain_a", Unit: "x", Kind: obs.KindGauge, Feed: obs.FeedObs, Agg: obs.Last},
		{Name: "test_plain_b", Unit: "x", Kind: obs.KindGauge, Feed: obs.FeedObs, Agg: obs.Last},
	} {
		if _, err := obs.Declare(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		entity  string
		signals []string
		kinds   string
		conf    float64
	}{
		{"country:IQ", []string{"test_ioda_sources", "test_ioda_visible", "test_ioda_probed"}, "ioda-active-probing, ioda-bgp, ioda-telescope", 0.85},
		{"country:PS", []string{"test_plain_a", "test_plain_b"}, "other", 0.4},
		{"country:UA", []string{"test_ioda_visible", "test_plain_a"}, "ioda-bgp, other", 0.4},
	} {
		cr := correlate.New(correlate.Config{Map: testMap(), GroupWait: -1})
		for _, sig := range c.signals {
			cr.Add(alert(alerting.Firing, "prefix_withdrawal", sig, c.entity, t0, t0.Add(10*time.Minute), -60))
		}
		evs := cr.Flush(t0.Add(10 * time.Minute))
		if len(evs) != 1 {
			t.Fatalf("%s: %d events, want 1", c.entity, len(evs))
		}
		o := evs[0].Outage
		if got := strings.Join(o.Kinds(), ", "); got != c.kinds || o.Confidence != c.conf {
			t.Errorf("%s: seen in %s (confidence %v), want %s (%v)", c.entity, got, o.Confidence, c.kinds, c.conf)
		}
	}
}

func TestImpactAndSeverity(t *testing.T) {
	th := correlate.DefaultThresholds
	for _, c := range []struct {
		drop, share float64
		d           time.Duration
		want        string
	}{
		{0.6, 1, 15 * time.Minute, "critical"}, // a country at −60 % for 15 minutes
		{0.97, 0.3, 10 * time.Minute, "warning"},
		{0.97, 0.3, 30 * time.Minute, "critical"},
		{0.4, 0.1, time.Hour, "info"}, // a small network's latency
	} {
		if got := th.Severity(correlate.Impact(c.drop, c.share, c.d, th.FullAfter)); got != c.want {
			t.Errorf("drop %v share %v for %s: %s, want %s", c.drop, c.share, c.d, got, c.want)
		}
	}
}

// A zone belongs to the network named like its registrable label, or to
// the one the configuration says; its alerts join that network's country.
func TestZoneJoinsItsNetwork(t *testing.T) {
	m := testMap()
	m.Countries[2818], m.Names[2818] = "GB", "BBC"
	c := correlate.New(correlate.Config{Map: m, GroupWait: -1, ZoneOwners: map[string]uint32{"nhs.uk": 2856}})
	for zone, want := range map[string]string{"zone:virginmedia.com": "country:GB", "zone:www.bbc.co.uk": "country:GB",
		"zone:nhs.uk": "country:GB", "zone:example.org": "zone:example.org"} {
		ev := alert(alerting.Firing, "dns_failure", "dns_failure_ratio", zone, t0, t0.Add(10*time.Minute), 0)
		c.Add(ev)
		c.Flush(t0.Add(10 * time.Minute))
		var got string
		for _, e := range c.Active() {
			if e.ID == ev.OutageEvent {
				got = e.Scope.Place
			}
		}
		if got != want {
			t.Errorf("%s: place %s, want %s", zone, got, want)
		}
	}
}

// The first page waits GroupWait after the first alert for the place to
// fill in: a network's withdrawal alone is held, the country's traffic
// alert a bucket later opens the event as the country; a growth after
// the first page names what it adds (the country at −40 % is a warning at
// 10:15, 0.4 × 15/30 = 0.2, and critical at 10:20, 0.4 × 20/30 = 0.27);
// and an event over before its wait pages nothing at all.
func TestFirstPageWaitsForItsPlace(t *testing.T) {
	c := correlate.New(correlate.Config{Map: testMap(), GroupWait: 10 * time.Minute})
	c.Add(alert(alerting.Firing, "prefix_withdrawal", "bgp_announced_v4", "asn:5089", t0, t0.Add(5*time.Minute), -60))
	var got []string
	for m := 5; m <= 20; m += 5 {
		at := t0.Add(time.Duration(m) * time.Minute)
		switch m {
		case 15:
			c.Add(alert(alerting.Firing, "traffic_drop", "traffic_bytes", "country:GB", t0.Add(5*time.Minute), at, -40))
		case 20:
			c.Add(alert(alerting.Firing, "prefix_withdrawal", "bgp_announced_v4", "asn:2856", t0.Add(15*time.Minute), at, -40))
		}
		for _, ev := range c.Flush(at) {
			got = append(got, ev.Update+"@"+at.Format("15:04")+" "+ev.Title+" ["+strings.Join(ev.Grew, "; ")+"]")
		}
		if m == 10 && len(c.Active()) != 0 {
			t.Errorf("held event listed as active at 10:10: %+v", c.Active())
		}
	}
	want := "open@10:15 United Kingdom [] grow@10:20 United Kingdom [severity warning → critical; scope + BT (AS2856)]"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("notifications\n got %s\nwant %s", g, want)
	}

	// A blip: fires and resolves inside the wait, pages nobody.
	c = correlate.New(correlate.Config{Map: testMap(), GroupWait: 10 * time.Minute})
	c.Add(alert(alerting.Firing, "prefix_withdrawal", "bgp_announced_v4", "asn:5089", t0, t0.Add(5*time.Minute), -60))
	for m := 5; m <= 20; m += 5 {
		at := t0.Add(time.Duration(m) * time.Minute)
		if m == 10 {
			c.Add(alert(alerting.Resolved, "prefix_withdrawal", "bgp_announced_v4", "asn:5089", t0, at, 0))
		}
		if evs := c.Flush(at); len(evs) != 0 {
			t.Errorf("blip paged at %s: %s %s", at.Format("15:04"), evs[0].Update, evs[0].Title)
		}
	}
}
