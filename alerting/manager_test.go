package alerting

import (
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/detectors"
)

// Every resolve says why: a detector's own reason where it gives one,
// "recovered" otherwise.
func TestResolveReasons(t *testing.T) {
	m := NewManager(nil)
	fire := detectors.Finding{Status: detectors.Firing, Detector: "prefix_withdrawal", Signal: "bgp_announced_v4", Entity: "asn:1", Start: 1e9, At: 2e9}
	if ev := m.Handle(nil, fire); ev == nil || ev.Reason != "" {
		t.Fatalf("firing %+v, want no reason", ev)
	}
	res := fire
	res.Status, res.End, res.At = detectors.Resolved, 3e9, 4e9
	if ev := m.Handle(nil, res); ev == nil || ev.Reason != detectors.ReasonRecovered {
		t.Fatalf("resolve %+v, want reason %q", ev, detectors.ReasonRecovered)
	}
	m.Handle(nil, fire)
	res.Reason = detectors.ReasonBaselineAdapted
	if ev := m.Handle(nil, res); ev == nil || ev.Reason != detectors.ReasonBaselineAdapted {
		t.Fatalf("adapted resolve %+v, want reason %q", ev, detectors.ReasonBaselineAdapted)
	}
}

// An alert's summary reads as the rest of its notification: the signal
// and the baseline in words, a real minus sign; a summary already in words
// passes unchanged.
func TestAlertSummaryInWords(t *testing.T) {
	m := NewManager(nil)
	fire := detectors.Finding{Status: detectors.Firing, Detector: "traffic_drop", Signal: "traffic_bytes", Entity: "asn:20294", Start: 1e9, At: 2e9,
		Summary: "traffic_bytes of asn:20294 -96.9% against similar_days baseline"}
	if ev := m.Handle(nil, fire); ev == nil || ev.Summary != "traffic of asn:20294 −96.9% against the same time on similar days" {
		t.Fatalf("firing summary %q", ev.Summary)
	}
	res := fire
	res.Status, res.End, res.At = detectors.Resolved, 3e9, 4e9
	res.Summary = "traffic_bytes of asn:20294 recovered (-0.4% against baseline)"
	if ev := m.Handle(nil, res); ev == nil || ev.Summary != "traffic of asn:20294 recovered (−0.4% against baseline)" {
		t.Fatalf("resolve summary %q", ev.Summary)
	}
	for in, want := range map[string]string{
		"latency_p50 of site:ams01 up 18.0 ms to 40.0 ms (+81.8%) for 30m0s against 22.0 ms over the previous 7d": "median latency of site:ams01 up 18.0 ms to 40.0 ms (+81.8%) for 30m0s against 22.0 ms over the previous 7d",
		"packet loss through AS1299: 22 of 40 destinations at least 10% lossy at ams01; 8.1% of packets lost":     "packet loss through AS1299: 22 of 40 destinations at least 10% lossy at ams01; 8.1% of packets lost",
		"dns_queries of zone:ug-01 -52.0% against previous_days baseline":                                         "DNS queries of zone:ug-01 −52.0% against the same time on the previous days",
	} {
		signal, _, _ := strings.Cut(in, " ")
		if in[0] == 'p' {
			signal = "packet_loss"
		}
		if got := SummaryInWords(signal, in); got != want {
			t.Errorf("SummaryInWords(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	in := "announced space of Uganda down 18.8%: 198 of 244 /24 prefixes visible (bgp_announced_v4)"
	if got, want := SummaryInWords("bgp_announced_v4", in), "announced space of Uganda down 18.8%: 198 of 244 /24 prefixes visible (announced IPv4 space)"; got != want {
		t.Errorf("SummaryInWords(%q)\n got %q\nwant %q", in, got, want)
	}
}
