package statuspage_test

import (
	"strings"
	"testing"
)

// The Iberian blackout's Spain incident, from the replayed fixture: its
// first page already names Spain (the first page waits for its place);
// its growth says first why it paged, as the correlation stage said it,
// then what else differs; its resolve says its figures are those paged.
// Each signal's figures name their unit, and the traffic's latest is its
// alert's value at resolve.
func TestSpainPagesSayWhyTheyPaged(t *testing.T) {
	store, _, _ := replayFixture(t, "iberia-2025-04-28")
	var got []string
	found, seen := false, 0
	for _, in := range store.Incidents() {
		if in.Place != "Spain" {
			continue
		}
		found = true
		for _, p := range in.Pages {
			got = append(got, p.At.Format("15:04")+" "+p.Update+": "+p.Changed+" | grew "+strings.Join(p.Grew, "; ")+" | figures "+p.FiguresAt)
		}
		for _, c := range in.Changes {
			if c.Signal == "traffic_bytes" && c.Entity == "country:ES" {
				seen++
			}
			if c.Signal == "bgp_announced_v4" {
				seen++
			}
			if c.Signal == "traffic_bytes" && c.Entity == "country:ES" &&
				(c.Peak.Unit != "bytes/300s" || c.NowAt != "resolve") {
				t.Errorf("Spain's traffic: unit %q, now at %q; want bytes/300s, at resolve", c.Peak.Unit, c.NowAt)
			}
			if c.Signal == "bgp_announced_v4" && c.Peak.Unit != "/24 prefixes" {
				t.Errorf("Spain's routed space %s: unit %q, want /24 prefixes", c.Entity, c.Peak.Unit)
			}
		}
	}
	if !found || seen != 2 {
		t.Fatalf("Spain incident found %v, with %d of its traffic and IPv4 space signals; want both", found, seen)
	}
	want := []string{
		"10:45 open: opened: Spain | grew  | figures firing",
		"10:50 grow: scope + Euskaltel (AS12338); also new signals: median bandwidth; 6 more member alerts (19) | grew scope + Euskaltel (AS12338) | figures firing",
		"06:15 resolve: every member alert resolved; its figures are those paged, not the level at resolve | grew  | figures paged",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Spain's pages\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
