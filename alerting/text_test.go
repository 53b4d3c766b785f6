package alerting

import (
	"os"
	"testing"
	"time"
)

func TestHumanWording(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		// 4.5e10 bytes in a 5-minute bucket is 1.2 Gbit/s.
		{Measure("traffic_bytes", 4.5e10, 1.47e12, -96.9, "similar_days"), "1.2 Gbit/s vs 39 Gbit/s expected, −97 %"},
		{Measure("latency_p50", 40, 22, 81.8, "previous_days"), "40 ms vs 22 ms expected, +82 %"},
		{Measure("dns_failure_ratio", 0.962, 0, 0, ""), "96.2 % vs 0 % expected"},
		{Measure("packet_loss", 0.081, 0.1, 0, "threshold"), "8.1 % of packets lost (a destination counts as lossy from 10 %)"},
		{Human("dns_queries", 3000), "10 queries/s"},
		{Human("dns_queries", 23.05), "0.077 queries/s"},
		{Human("dns_queries", 0), "0 queries/s"},
		{Human("bgp_announced_v6", 97896), "98k /48 prefixes"},
		{Human("bgp_announced_v4", 331), "331 /24 prefixes"},
		{Human("bandwidth_p50", 8.5), "8.5 Mbit/s"},
		{Human("bgp_withdrawals", 567), "567 prefixes per 5 min"},
		{Human("dns_clients", 120), "120 clients per 5 min"},
		{ObservedUnit("dns_clients"), "clients/300s"},
		{HumanChange(-4.25), "−4.3 %"},
		{HumanDuration(116*time.Hour + 35*time.Minute), "4 d 20 h"},
		{HumanDuration(95 * time.Minute), "1 h 35 min"},
		{HumanDuration(35 * time.Minute), "35 min"},
		{BaselineWording("similar_days"), "the same time on similar days"},
		{BaselineWording("median_recent"), "the median of the recent buckets"},
		{BaselineWording("same_time_previous_days"), "the same time on the previous days"},
		// JSON events state the unit beside their values: per-bucket
		// counts per 300 s, gauges as they are.
		{ObservedUnit("traffic_bytes"), "bytes/300s"},
		{ObservedUnit("dns_queries"), "queries/300s"},
		{ObservedUnit("bgp_announced_v4"), "/24 prefixes"},
		{ObservedUnit("bgp_withdrawals"), "prefixes/300s"},
		{ObservedUnit("latency_p50"), "ms"},
		{ObservedUnit("bandwidth_p50"), "Mbit/s"},
		{ObservedUnit("dns_failure_ratio"), "ratio"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestMain(m *testing.M) {
	// The tz database's table as shipped in testdata, so local times do
	// not depend on what the machine has installed.
	ZoneTab = "testdata/zone.tab"
	os.Exit(m.Run())
}

func TestLocalTime(t *testing.T) {
	at := time.Date(2025, 4, 28, 10, 35, 0, 0, time.UTC)
	for cc, want := range map[string]string{
		"ES": "2025-04-28 10:35 UTC (12:35 Europe/Madrid)",
		"UG": "2025-04-28 10:35 UTC (13:35 Africa/Kampala)",
		"XX": "2025-04-28 10:35 UTC",
		"":   "2025-04-28 10:35 UTC",
	} {
		if got := When(at, cc); got != want {
			t.Errorf("%s: %q, want %q", cc, got, want)
		}
	}
	if got := When(time.Date(2021, 1, 13, 22, 30, 0, 0, time.UTC), "UG"); got != "2021-01-13 22:30 UTC (Jan 14 01:30 Africa/Kampala)" {
		t.Errorf("next local day: %q", got)
	}
}

// What a rule fires at, from its params as the rules file spells them.
func TestThresholdText(t *testing.T) {
	type params struct {
		Threshold float64 `yaml:"threshold"`
		For       string  `yaml:"for"`
		Critical  float64 `yaml:"critical"`
		MinQ      int     `yaml:"min_queries"`
	}
	if got := ThresholdText(&params{Threshold: 0.4, For: "10m0s", Critical: 0.85, MinQ: 50}); got != "threshold 40 %, for 10 min, critical at 85 %" {
		t.Errorf("got %q", got)
	}
	if got := ThresholdText(nil); got != "" {
		t.Errorf("nil params: %q", got)
	}
	// A rise of 100 % (YAML writes 1.0 back as the int 1), and a rule
	// with no relative threshold, whose first condition is absolute.
	type rise struct {
		Threshold float64 `yaml:"threshold"`
		MinDelta  float64 `yaml:"min_delta_ms"`
		For       string  `yaml:"for"`
	}
	if got := ThresholdText(&rise{Threshold: 1, MinDelta: 20, For: "15m0s"}); got != "threshold 100 %, and 20 ms above it, for 15 min" {
		t.Errorf("a rise of 100 %%: %q", got)
	}
	if got := ThresholdText(&rise{Threshold: 1.5, MinDelta: 20}); got != "threshold 150 %, and 20 ms above it" {
		t.Errorf("a rise of 150 %%: %q", got)
	}
	if got := ThresholdText(&rise{MinDelta: 20, For: "15m0s"}); got != "20 ms above it, for 15 min" {
		t.Errorf("no relative threshold: %q", got)
	}
	// A burst's bar is the larger of a multiple of the usual and a count,
	// which is the bar wherever the usual is 0.
	type burst struct {
		Min      float64 `yaml:"min_withdrawals"`
		Multiple float64 `yaml:"multiple"`
		For      string  `yaml:"for"`
	}
	if got := ThresholdText(&burst{Min: 300, Multiple: 10, For: "5m0s"}); got != "10× the baseline, and at least 300 withdrawals, for 5 min" {
		t.Errorf("a burst: %q", got)
	}
}

// The noise bar a rule sets besides its thresholds, whole or not, and
// none where it is off or the detector has none.
func TestNoiseText(t *testing.T) {
	type params struct {
		Threshold float64 `yaml:"threshold"`
		Noise     float64 `yaml:"noise"`
	}
	for _, c := range []struct {
		p    any
		want string
	}{
		{&params{Threshold: 0.4, Noise: 4}, "past 4σ of its own noise"},
		{&params{Noise: 2.5}, "past 2.5σ of its own noise"},
		{&params{Threshold: 0.4}, ""},
		{&struct {
			Multiple float64 `yaml:"multiple"`
		}{10}, ""},
		{nil, ""},
	} {
		if got := NoiseText(c.p); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}

// A line for a person per notification: an event with its summary and
// what grew, an alert with its measure, detector and event.
func TestTextLine(t *testing.T) {
	at := time.Date(2025, 4, 28, 10, 50, 0, 0, time.UTC)
	ev := &Event{Kind: KindEvent, Status: Firing, Severity: "critical", At: at,
		Summary: "Outage in Spain: traffic 1.8 Gbit/s vs 4.7 Gbit/s expected, −61 %",
		Outage:  &Outage{Update: "grow", Grew: []string{"scope + Euskaltel (AS12338)"}}}
	if got, want := TextLine(ev), "2025-04-28 10:50 UTC  event grow     [critical] Outage in Spain: traffic 1.8 Gbit/s vs 4.7 Gbit/s expected, −61 % (grew: scope + Euskaltel (AS12338))"; got != want {
		t.Errorf("event line\n got %s\nwant %s", got, want)
	}
	a := &Event{Kind: KindAlert, Status: Resolved, Severity: "critical", At: at, Detector: "traffic_drop", Signal: "traffic_bytes",
		Entity: "asn:3352", Labels: map[string]string{"name": "Telefonica de Espana", "display": "Telefonica de Espana (AS3352)"}, Observed: 4.5e10, Baseline: 4.6e10, ChangePct: -2.2,
		BaselineMethod: "similar_days", OutageEvent: "9a0941bd5fba9f18"}
	if got, want := TextLine(a), "2025-04-28 10:50 UTC  alert resolved [critical] Telefonica de Espana (AS3352): traffic now 1.2 Gbit/s vs 1.2 Gbit/s expected, −2.2 % (traffic_drop; event 9a0941bd5fba9f18)"; got != want {
		t.Errorf("alert line\n got %s\nwant %s", got, want)
	}
	// A feed gone silent says so, not "records 0 vs 0 expected".
	f := &Event{Kind: KindAlert, Status: Firing, Severity: "warning", At: at, Detector: "feed_health", Signal: "records",
		Entity: "feed:ioda-telescope", Labels: map[string]string{"display": "the ioda-telescope feed"}, ChangePct: -100,
		Summary: "no data from the ioda-telescope feed for 5 buckets (it reports every 1): its series read as no data, not as zero"}
	if got, want := TextLine(f), "2025-04-28 10:50 UTC  alert firing   [warning] no data from the ioda-telescope feed for 5 buckets (it reports every 1): its series read as no data, not as zero (feed_health)"; got != want {
		t.Errorf("feed line\n got %s\nwant %s", got, want)
	}
}

// A chart's value axis names routed space as the text beside it does:
// "/24 prefixes", not "/24s".
func TestChartUnitRoutedSpace(t *testing.T) {
	for signal, want := range map[string]string{"bgp_announced_v4": "/24 prefixes", "bgp_announced_v6": "/48 prefixes"} {
		u, scale := ChartUnit(signal, 5*time.Minute)
		if u.Name != want || u.SI || scale != 1 {
			t.Errorf("%s: unit %+v scale %v, want %s unscaled", signal, u, scale, want)
		}
		if got := u.Format(243, 50); got != "243 "+want {
			t.Errorf("%s: axis label %q", signal, got)
		}
	}
}
