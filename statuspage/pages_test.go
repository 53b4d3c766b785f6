package statuspage_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/outagewatch/outagewatch/statuspage"
)

// The Iberian blackout's Spain incident, from the replayed fixture: its
// first page already names Spain (the first page waits for its place);
// its growth says first why it paged, as the correlation stage said it,
// then what else differs; its resolve says its figures are those paged.
// Each signal's figures name their unit, and the traffic's latest is its
// alert's value at resolve. The API says the same in its JSON.
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

	rr := httptest.NewRecorder()
	statuspage.Handler(store, nil, "outagewatch").ServeHTTP(rr, httptest.NewRequest("GET", "/api/v1/incidents?range=all", nil))
	var body struct {
		Incidents []struct {
			Place string `json:"place"`
			Pages []struct {
				Grew      []string `json:"grew"`
				FiguresAt string   `json:"figures_at"`
			} `json:"pages"`
			Changes []struct {
				Signal string `json:"signal"`
				NowAt  string `json:"now_at"`
				Peak   struct {
					Unit string `json:"observed_unit"`
				} `json:"peak"`
			} `json:"changes"`
		} `json:"incidents"`
	}
	if err := json.Unmarshal(rr.Body.Bytes(), &body); err != nil {
		t.Fatalf("API: %v: %s", err, rr.Body.Bytes())
	}
	var api []string
	for _, in := range body.Incidents {
		if in.Place != "Spain" {
			continue
		}
		for _, p := range in.Pages {
			api = append(api, strings.Join(p.Grew, "; ")+" @"+p.FiguresAt)
		}
		if len(in.Changes) > 0 {
			api = append(api, in.Changes[0].Signal+" in "+in.Changes[0].Peak.Unit+", now at "+in.Changes[0].NowAt)
		}
	}
	if got, want := strings.Join(api, " | "), " @firing | scope + Euskaltel (AS12338) @firing |  @paged | traffic_bytes in bytes/300s, now at resolve"; got != want {
		t.Errorf("API's Spain: %q, want %q", got, want)
	}
}
