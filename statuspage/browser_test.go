package statuspage

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/fixtures"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/replay"
	"github.com/outagewatch/outagewatch/report"
	"github.com/outagewatch/outagewatch/scenario"
)

// chromium returns the headless browser to drive, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium binary: install Debian's chromium (apt-get install chromium) to run the browser tests")
	return ""
}

// artefacts is where screenshots go: $OUTAGEWATCH_ARTIFACTS, else a
// directory of the test's own.
func artefacts(t *testing.T) string {
	if d := os.Getenv("OUTAGEWATCH_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err == nil {
			return d
		}
	}
	return t.TempDir()
}

// replayFixture replays a bundled fixture into a store and a recorder.
func replayFixture(t *testing.T, name string) (*Store, *report.Recorder, []alerting.Event) {
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
	store, rec := NewStore(), report.NewRecorder()
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

// browse opens a browser that records console errors and exceptions.
type browse struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

func newBrowser(t *testing.T) *browse {
	bin := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1000, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancel3)
	b := &browse{ctx: ctx}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value))
				}
				b.errors = append(b.errors, "console."+string(e.Type)+": "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			b.errors = append(b.errors, "exception: "+msg)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *browse) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

func (b *browse) shot(t *testing.T, file string, width, height int64) {
	t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artefacts(t), file)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(png))
}

// The status page of a replayed Uganda shutdown: the list names Uganda with
// MTN among its networks, updates itself without error, and the incident
// page shows the member alerts and their charts.
func TestStatusPageInChromium(t *testing.T) {
	chromium(t)
	store, rec, _ := replayFixture(t, "uganda-2021-01-13")
	b := newBrowser(t)
	srv := httptest.NewServer(Handler(store, rec, "outagewatch"))
	defer srv.Close()

	err := chromedp.Do(b.ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#incidents tbody tr")),
		// Let the page poll once, so the script's rendering is what we read.
		chromedp.Steps(func() chromedp.Action[chromedp.Void] {
			a := chromedp.Poll[chromedp.Void](`document.getElementById('updated').textContent.startsWith('Updated')`, chromedp.WithPollingTimeout(20*time.Second))
			return a
		}()),
	)
	if err != nil {
		t.Fatal(err)
	}
	text := func(sel string) string {
		v, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return v
	}
	count := func(expr string) int {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	rows := count(`document.querySelectorAll('#incidents tbody tr').length`)
	place := text(`#incidents tbody tr:first-child td[data-l=place]`)
	networks := text(`#incidents tbody tr:first-child td[data-l=networks]`)
	state := text(`#incidents tbody tr:first-child td[data-l=state]`)
	if place != "Uganda" || !strings.Contains(networks, "MTN Uganda (AS20294)") {
		t.Errorf("first incident %q, networks %q: want Uganda with MTN Uganda (AS20294)", place, networks)
	}
	t.Logf("%d incidents; first %q (%s): %s", rows, place, state, networks)
	b.shot(t, "statuspage-list.png", 1000, 900)
	b.shot(t, "statuspage-list-phone.png", 390, 844)

	href, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('#incidents tbody tr:first-child td[data-l=place] a').href`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.Get(href)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("GET %s: %s, %d bytes in %v", href, resp.Status, len(page), time.Since(start))
	if resp.StatusCode != 200 {
		t.Fatalf("incident page: %s: %s", resp.Status, page)
	}
	err = chromedp.Do(b.ctx,
		chromedp.EmulateViewport(1000, 900),
		chromedp.Navigate(href),
		chromedp.WaitVisible(chromedp.CSS("#place")),
	)
	if err != nil {
		t.Fatal(err)
	}
	title := text("#place")
	charts := count(`document.querySelectorAll('figure svg').length`)
	alerts := count(`document.querySelectorAll('#alerts tbody tr').length`)
	ug := store.Incidents()[0]
	if title != "Uganda" || alerts != len(ug.Alerts) || charts != min(len(ug.Alerts), 24) || charts == 0 {
		t.Errorf("incident page %q: %d alerts, %d charts; want Uganda, %d alerts, a chart each", title, alerts, charts, len(ug.Alerts))
	}
	b.shot(t, "statuspage-incident.png", 1000, 900)
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

// The Iberian report opens offline, shows a chart with units, hours and a
// legend for every alerted series, and raises no console error.
func TestIberianReportInChromium(t *testing.T) {
	chromium(t)
	_, rec, events := replayFixture(t, "iberia-2025-04-28")
	b := newBrowser(t)
	file := filepath.Join(artefacts(t), "iberia-report.html")
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
	err = chromedp.Do(b.ctx,
		chromedp.Navigate("file://"+file),
		chromedp.WaitVisible(chromedp.CSS("figure svg")),
	)
	if err != nil {
		t.Fatal(err)
	}
	eval := func(expr string) (int, string) {
		if strings.HasPrefix(expr, "S:") {
			v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr[2:]))
			if err != nil {
				t.Fatalf("%s: %v", expr, err)
			}
			return 0, v
		}
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v, ""
	}
	charts, _ := eval(`document.querySelectorAll('figure svg').length`)
	legends, _ := eval(`[...document.querySelectorAll('figure svg')].filter(s => s.textContent.includes('observed') && s.textContent.includes('same time last week')).length`)
	// The baseline runs through the whole outage: one unbroken run of
	// its line (over 100 points) in each chart.
	baselines, _ := eval(`[...document.querySelectorAll('figure svg')].filter(s => [...s.querySelectorAll('polyline[stroke="#e69f00"]')].some(p => p.getAttribute('points').split(' ').length > 100)).length`)
	_, units := eval(`S:[...new Set([...document.querySelectorAll('figure svg text')].map(t => t.textContent).filter(s => /^[-0-9.]+ .*(bit\/s|queries\/s|ms|%|\/24s|\/48s)$/.test(s)).map(s => s.replace(/^[-0-9.]+ [kMGT]?/, '')))].sort().join(',')`)
	if charts != len(series) || legends != charts || baselines != charts {
		t.Errorf("%d charts (%d with a legend, %d with a baseline through the window), want one for each of the %d alerted series", charts, legends, baselines, len(series))
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
	b.shot(t, "iberia-report.png", 1000, 900)
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
