package service

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// /metrics follows the Prometheus conventions from the first scrape, before
// any record: times are _timestamp_seconds, the build is described, and
// each configured topic's records counter and each routing rule's count of
// unjudgeable series are there at zero.
func TestMetricsNamesAndInitialSeries(t *testing.T) {
	c := startBroker(t, 0, "", "flows", "dns")
	defer c.Close()
	cfg := mustValidate(t, testConfig(c.ListenAddrs()[0], t.TempDir(),
		Topic{Name: "flows", Stream: "flows", Format: "goflow2-pb"}, Topic{Name: "dns", Stream: "dns", Format: "dnstap"}))
	base, _, stop := startStaged(t, cfg, Options{})
	defer stop()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []string{
		"\noutagewatch_records_total{topic=\"flows\"} 0\n",
		"\noutagewatch_records_total{topic=\"dns\"} 0\n",
		"\noutagewatch_watermark_timestamp_seconds ",
		"\noutagewatch_last_checkpoint_timestamp_seconds ",
		"\noutagewatch_checkpoint_duration_seconds_count ",
		"\noutagewatch_build_info{goversion=\"go",
		// Every rule whose detector says what it cannot judge has its
		// count from the start.
		"\noutagewatch_unjudgeable_series{rule=\"asn-prefix-withdrawal\"} 0\n",
		"\noutagewatch_unjudgeable_series{rule=\"country-prefix-withdrawal\"} 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
	for _, old := range []string{"outagewatch_watermark_seconds", "outagewatch_last_checkpoint_seconds", "outagewatch_checkpoint_seconds_"} {
		if strings.Contains(body, old) {
			t.Errorf("/metrics still has %s", old)
		}
	}
}
