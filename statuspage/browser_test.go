package statuspage

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart/recorder"
	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/internal/browsertest"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/report"
	"github.com/outagewatch/outagewatch/scenario"
)

// replayFixture replays a bundled fixture into a store and a recorder.
func replayFixture(t *testing.T, name string) (*Store, *recorder.Recorder, []alerting.Event) {
	t.Helper()
	b, ok := fixtures.Read(name)
	if !ok {
		t.Fatalf("no fixture %s", name)
	}
	spec, err := scenario.Parse(name, b)
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := replay.RenderSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	store, rec := NewStore(), recorder.New()
	var events []alerting.Event
	p, err := pipeline.New(pipeline.Config{Map: spec.Map(), LocalASNs: spec.LocalASNs, Tap: rec.Bucket}, func(ev *alerting.Event) {
		store.Add(*ev)
		events = append(events, *ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := replay.Run(p, srcs, nil); err != nil {
		t.Fatal(err)
	}
	return store, rec, events
}

// The outage page of a replayed Uganda shutdown (what `replay --serve`
// serves): the list names Uganda with MTN among its networks, updates
// itself without error, and the incident page shows the member alerts and
// a chart of each.
func TestStatusPageInChromium(t *testing.T) {
	browsertest.Require(t)
	store, rec, _ := replayFixture(t, "uganda-2021-01-13")
	b := browsertest.New(t)
	srv := httptest.NewServer(Handler(store, rec, "outagewatch"))
	defer srv.Close()

	b.Do(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#incidents tbody tr")),
		// Let the page poll once, so the script's rendering is what we read.
		chromedp.Poll[chromedp.Void](`document.getElementById('updated').textContent.startsWith('Updated')`, chromedp.WithPollingTimeout(20*time.Second)))
	rows := b.Int(`document.querySelectorAll('#incidents tbody tr').length`)
	place := b.Text(`#incidents tbody tr:first-child td[data-l=place]`)
	networks := b.Text(`#incidents tbody tr:first-child td[data-l=networks]`)
	state := b.Text(`#incidents tbody tr:first-child td[data-l=state]`)
	if rows != 1 || place != "Uganda" || !strings.Contains(networks, "MTN Uganda (AS20294)") {
		t.Errorf("%d incidents, first %q, networks %q: want one, Uganda, with MTN Uganda (AS20294)", rows, place, networks)
	}
	t.Logf("%d incidents; first %q (%s): %s", rows, place, state, networks)
	b.Shot("statuspage-list.png", 1000, 900)
	b.Shot("statuspage-list-phone.png", 390, 844)

	href := b.String(`document.querySelector('#incidents tbody tr:first-child td[data-l=place] a').href`)
	resp, err := http.Get(href)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("incident page: %s: %s", resp.Status, page)
	}
	b.Do(chromedp.EmulateViewport(1000, 900), chromedp.Navigate(href), chromedp.WaitVisible(chromedp.CSS("#place")))
	title := b.Text("#place")
	charts := b.Int(`document.querySelectorAll('figure svg').length`)
	alerts := b.Int(`document.querySelectorAll('#alerts tbody tr').length`)
	ug := store.Incidents()[0]
	if title != "Uganda" || alerts != len(ug.Alerts) || charts != min(len(ug.Alerts), 24) || charts == 0 {
		t.Errorf("incident page %q: %d alerts, %d charts; want Uganda, %d alerts, a chart each", title, alerts, charts, len(ug.Alerts))
	}
	b.Shot("statuspage-incident.png", 1000, 900)
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

// The Iberian report opens offline, shows a chart with units, hours and a
// legend for every alerted series, with the baseline through the outage,
// and raises no console error.
func TestIberianReportInChromium(t *testing.T) {
	browsertest.Require(t)
	_, rec, events := replayFixture(t, "iberia-2025-04-28")
	b := browsertest.New(t)
	file := filepath.Join(browsertest.Artefacts(t), "iberia-report.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Write(f, "iberia-2025-04-28", events, rec); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(file)
	series := map[string]bool{}
	for _, ev := range events {
		series[ev.Signal+"{"+ev.Entity+"}"] = true
	}
	b.Do(chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.CSS("figure svg")))
	charts := b.Int(`document.querySelectorAll('figure svg').length`)
	legends := b.Int(`[...document.querySelectorAll('figure svg')].filter(s => s.textContent.includes('observed') && s.textContent.includes('same time last week')).length`)
	// The baseline runs through the whole outage: one unbroken run of its
	// line (over 100 points) across each chart.
	baselines := b.Int(`[...document.querySelectorAll('figure svg')].filter(s => [...s.querySelectorAll('polyline[stroke="#e69f00"]')].some(p => p.getAttribute('points').split(' ').length > 100)).length`)
	hours := b.Int(`[...document.querySelectorAll('figure svg')].filter(s => [...s.querySelectorAll('text')].some(t => /^\d\d:00$/.test(t.textContent)) && [...s.querySelectorAll('text')].some(t => t.textContent === 'UTC')).length`)
	units := b.String(`[...new Set([...document.querySelectorAll('figure svg text')].map(t => t.textContent).filter(s => /^[-0-9.]+ .*(bit\/s|queries\/s|ms|%|\/24s|\/48s)$/.test(s)).map(s => s.replace(/^[-0-9.]+ [kMGT]?/, '')))].sort().join(',')`)
	if charts != len(series) || legends != charts || baselines != charts || hours != charts {
		t.Errorf("%d charts (%d with a legend, %d with a baseline through the window, %d with hours in UTC), want one for each of the %d alerted series",
			charts, legends, baselines, hours, len(series))
	}
	t.Logf("report %d bytes, %d charts, units %s", st.Size(), charts, units)
	if st.Size() > 5<<20 {
		t.Errorf("report is %d bytes, over 5 MB", st.Size())
	}
	for _, u := range []string{"/24s", "bit/s", "ms", "queries/s"} {
		if !strings.Contains(units, u) {
			t.Errorf("no axis in %s (units seen: %s)", u, units)
		}
	}
	b.Shot("iberia-report.png", 1000, 900)
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
