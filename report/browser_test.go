package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/outagewatch/outagewatch/internal/browsertest"
	"github.com/outagewatch/outagewatch/internal/replaytest"
)

// The Iberian report is the incident review: its two outage events
// (Portugal, Spain) come first, each with its timeline of pages from open
// to resolve and why each was sent; then the alerts and a chart with
// units, hours and a legend for every alerted series, with the baseline
// through the outage. It opens offline and raises no console error.
func TestIberianReportInChromium(t *testing.T) {
	browsertest.Require(t)
	rec, events := replaytest.Fixture(t, "iberia-2025-04-28")
	b := browsertest.New(t)
	file := filepath.Join(browsertest.Artefacts(t), "iberia-report.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(f, "iberia-2025-04-28", events, rec); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(file)
	series := map[string]bool{}
	for _, ev := range events {
		if !ev.IsEvent() {
			series[ev.Signal+"{"+ev.Entity+"}"] = true
		}
	}
	b.Do(chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.CSS("figure svg")))

	// Events first: both sections come before the alerts, oldest first.
	places := b.String(`[...document.querySelectorAll('section.event .event-place')].map(h=>h.textContent).join(',')`)
	first := b.Int(`(document.querySelector('section.event').compareDocumentPosition(document.getElementById('alerts')) & Node.DOCUMENT_POSITION_FOLLOWING) ? 1 : 0`)
	if places != "Portugal,Spain" || first != 1 {
		t.Errorf("events %q (first: %d), want Portugal,Spain before the alerts", places, first)
	}
	// Each event's timeline: every page sent, open first, resolve last.
	// The first page waits for its place (correlation.group_wait, 10 min),
	// so it already carries what was a growth before: one growth each.
	timelines := b.String(`[...document.querySelectorAll('section.event')].map(s=>[...s.querySelectorAll('table.pages tbody tr .update')].map(td=>td.textContent).join(' ')).join(' | ')`)
	if want := "open grow resolve | open grow resolve"; timelines != want {
		t.Errorf("timelines %q, want %q", timelines, want)
	}
	// Spain's pages: the first names Spain with every view; the growth
	// says why it paged (a network joined the scope) and then what else
	// differs; the resolve that its figures are those paged.
	why := b.String(`[...[...document.querySelectorAll('section.event')][1].querySelectorAll('table.pages tbody tr .changed')].map(td=>td.textContent).join(' | ')`)
	if want := "opened: Spain | scope + Euskaltel (AS12338); also new signals: median bandwidth; 6 more member alerts (19) | " +
		"every member alert resolved; its figures are those paged, not the level at resolve"; why != want {
		t.Errorf("Spain's pages:\n%s\nwant\n%s", why, want)
	}
	overlays := b.Int(`document.querySelectorAll('section.event figure.overlay svg').length`)
	if overlays != 2 {
		t.Errorf("%d overlay charts, want one an event", overlays)
	}

	charts := b.Int(`document.querySelectorAll('figure:not(.overlay) svg').length`)
	legends := b.Int(`[...document.querySelectorAll('figure:not(.overlay) svg')].filter(s => s.textContent.includes('observed') && s.textContent.includes('same time last week')).length`)
	// The baseline runs through the whole outage: one unbroken run of its
	// line (over 100 points) across each chart.
	baselines := b.Int(`[...document.querySelectorAll('figure:not(.overlay) svg')].filter(s => [...s.querySelectorAll('polyline[stroke="#e69f00"]')].some(p => p.getAttribute('points').split(' ').length > 100)).length`)
	hours := b.Int(`[...document.querySelectorAll('figure:not(.overlay) svg')].filter(s => [...s.querySelectorAll('text')].some(t => /^\d\d:00$/.test(t.textContent)) && [...s.querySelectorAll('text')].some(t => t.textContent === 'UTC')).length`)
	units := b.String(`[...new Set([...document.querySelectorAll('figure svg text')].map(t => t.textContent).filter(s => /^[-0-9.]+ .*(bit\/s|queries\/s|ms|%|\/24 prefixes|\/48 prefixes)$/.test(s)).map(s => s.replace(/^[-0-9.]+ [kMGT]?/, '')))].sort().join(',')`)
	if charts != len(series) || legends != charts || baselines != charts || hours != charts {
		t.Errorf("%d charts (%d with a legend, %d with a baseline through the window, %d with hours in UTC), want one for each of the %d alerted series",
			charts, legends, baselines, hours, len(series))
	}
	t.Logf("report %d bytes, events %s, %d charts, units %s", st.Size(), places, charts, units)
	if st.Size() > 5<<20 {
		t.Errorf("report is %d bytes, over 5 MB", st.Size())
	}
	for _, u := range []string{"/24 prefixes", "bit/s", "ms", "queries/s", "%"} {
		if !strings.Contains(units, u) {
			t.Errorf("no axis in %s (units seen: %s)", u, units)
		}
	}
	b.Shot("iberia-report.png", 1000, 900)
	b.Shot("iberia-report-phone.png", 390, 844)
	for _, w := range []int64{1000, 390} {
		b.Do(chromedp.EmulateViewport(w, 844))
		if got := b.Int(`document.documentElement.scrollWidth`); got > int(w) {
			t.Errorf("the report at %d px is %d px wide", w, got)
		}
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
