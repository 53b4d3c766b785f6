package statuspage_test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/outagewatch/outagewatch/alerting"
	"github.com/outagewatch/outagewatch/chart/recorder"
	"github.com/outagewatch/outagewatch/internal/browsertest"
	"github.com/outagewatch/outagewatch/internal/replaytest"
	"github.com/outagewatch/outagewatch/statuspage"
)

// replayFixture replays a bundled fixture into a store (alerts and outage
// events, as `replay --serve` does) and a recorder.
func replayFixture(t *testing.T, name string) (*statuspage.Store, *recorder.Recorder, []alerting.Event) {
	t.Helper()
	rec, events := replaytest.Fixture(t, name)
	store := statuspage.NewStore()
	store.Recent = 100 * 365 * 24 * time.Hour
	for _, ev := range events {
		store.Add(ev)
	}
	return store, rec, events
}

// valueAtJS maps an SVG y coordinate of a chart to its value, from two of
// the value axis' labels (drawn 4 px under their grid line, right-aligned
// left of the plot, which starts further right for a wide unit such as
// "/24 prefixes").
const valueAtJS = `function valueAt(svg, y){
  const ts=[...svg.querySelectorAll('text[text-anchor=end]')].filter(t=>+t.getAttribute('x')<200&&/^[-0-9.]/.test(t.textContent))
    .map(t=>[parseFloat(t.textContent), +t.getAttribute('y')-4]);
  const [a,b]=[ts[0],ts[ts.length-1]];
  return a[0]+(y-a[1])*(b[0]-a[0])/(b[1]-a[1]);
}
function chart(part){return [...document.querySelectorAll('figure.signal svg')].find(s=>s.querySelector('title').textContent.includes(part));}
function line(svg,color,width){return [...svg.querySelectorAll('polyline[stroke="'+color+'"]')].filter(p=>!width||p.getAttribute('stroke-width')==width).filter(p=>p.getAttribute('points').split(' ').length>2);}
function pts(p){return p.getAttribute('points').split(' ').map(s=>s.split(',').map(Number));}
`

func jsFloats(t *testing.T, b *browsertest.Browser, expr string) []float64 {
	t.Helper()
	var out []float64
	if err := json.Unmarshal([]byte(b.String(valueAtJS+"JSON.stringify("+expr+")")), &out); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return out
}

// noOverflow checks that the page fits a phone's width and a laptop's
// window: no cell of figures held on one line pushes it wider.
func noOverflow(t *testing.T, b *browsertest.Browser, what string) {
	t.Helper()
	for _, w := range []int64{1000, 390} {
		b.Do(chromedp.EmulateViewport(w, 844))
		if got := b.Int(`document.documentElement.scrollWidth`); got > int(w) {
			t.Errorf("%s at %d px: the page is %d px wide", what, w, got)
		}
	}
}

// The outage page of a replayed Uganda shutdown (what `replay --serve`
// serves): the list names Uganda with MTN among its networks and its worst
// traffic change; the incident shows traffic at about −97 % at its worst
// (not the −4 % it had recovered to at resolve), its cause and type, the
// routed space's baseline held at the detector's 243.8 /24 prefixes through the
// shutdown, and the withdrawal peak at its bucket's 315; no console error,
// no horizontal overflow on a phone.
func TestStatusPageInChromium(t *testing.T) {
	browsertest.Require(t)
	store, rec, _ := replayFixture(t, "uganda-2021-01-13")
	b := browsertest.New(t)
	srv := httptest.NewServer(statuspage.Handler(store, rec, "outagewatch"))
	defer srv.Close()

	b.Do(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#incidents tbody tr")),
		// Let the page poll once, so the script's rendering is what we read.
		chromedp.Poll[chromedp.Void](`document.getElementById('updated').textContent.startsWith('Updated')`, chromedp.WithPollingTimeout(20*time.Second)))
	rows := b.Int(`document.querySelectorAll('#incidents tbody tr').length`)
	place := b.Text(`#incidents tbody tr:first-child td[data-l=place]`)
	networks := b.Text(`#incidents tbody tr:first-child td[data-l=networks]`)
	worst := b.Text(`#incidents tbody tr:first-child td[data-l=worst]`)
	scope := b.Text(`#incidents tbody tr:first-child td[data-l=scope]`)
	// Signals in the words the incident's page uses, as the script
	// writes them and as the server did before it.
	const sigWords = "traffic, DNS queries, announced IPv4 space, announced IPv6 space, BGP withdrawals"
	if sigs := b.Text(`#incidents tbody tr:first-child td[data-l=signals]`); sigs != sigWords {
		t.Errorf("signals %q, want %q", sigs, sigWords)
	}
	if resp, err := http.Get(srv.URL + "/"); err == nil {
		list, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(list), `<td data-l="signals">`+sigWords+`</td>`) {
			t.Errorf("the served list lacks the signals in words")
		}
	} else {
		t.Fatal(err)
	}
	if rows != 1 || place != "Uganda" || !strings.Contains(networks, "MTN Uganda (AS20294)") || worst != "traffic −97\u00a0%" ||
		scope != "nationwide · power outage or shutdown" {
		t.Errorf("%d incidents, first %q, networks %q, worst %q, scope %q: want one, Uganda, with MTN Uganda (AS20294), traffic −97 %%, nationwide · power outage or shutdown",
			rows, place, networks, worst, scope)
	}
	b.Shot("statuspage-list.png", 1000, 900)
	b.Shot("statuspage-list-phone.png", 390, 844)
	noOverflow(t, b, "the list")

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
	// The charts' window is a choice: from a week before starts six days
	// earlier than a day either side (its first date label, on ticks two
	// days apart, at least four days earlier).
	firstDate := func(q string) string {
		resp, err := http.Get(href + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`(?s)<figure class="overlay".*?font-weight="bold">((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [^<]+)</text>`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s: no overlay with dates", q)
		}
		return string(m[1])
	}
	day, week := firstDate(""), firstDate("?chart=week")
	d0, err1 := time.Parse("Mon 2 Jan 2006", day)
	w0, err2 := time.Parse("Mon 2 Jan 2006", week)
	if err1 != nil || err2 != nil || day != "Wed 13 Jan 2021" || d0.Sub(w0) < 4*24*time.Hour {
		t.Errorf("overlay's first date %q, from a week before %q; want Wed 13 Jan 2021 and one at least four days earlier", day, week)
	}
	b.Do(chromedp.EmulateViewport(1000, 900), chromedp.Navigate(href), chromedp.WaitVisible(chromedp.CSS("#place")))
	ug := store.Incidents()[0]
	title := b.Text("#place")
	alerts := b.Int(`document.querySelectorAll('table.alerts tbody tr').length`)
	charts := b.Int(`document.querySelectorAll('figure.signal svg').length`)
	if title != "Uganda" || alerts != len(ug.Alerts) || charts != min(len(ug.Alerts), 24) || charts == 0 {
		t.Errorf("incident page %q: %d alerts, %d charts; want Uganda, %d alerts, a chart each", title, alerts, charts, len(ug.Alerts))
	}
	traffic := b.String(`[...document.querySelectorAll('table.changes tbody tr')].find(r=>r.dataset.kind==='traffic').querySelector('.worst').textContent`)
	if !strings.HasPrefix(traffic, "−97 %") {
		t.Errorf("worst traffic change %q, want about −97 %%", traffic)
	}
	cause := b.Text(".cause")
	if !strings.Contains(cause, "4 networks lost traffic within minutes of each other (power-like or a shutdown)") {
		t.Errorf("cause %q", cause)
	}
	if typ := b.Text(`.tag[data-k=type]`); typ != "power outage or shutdown" {
		t.Errorf("type %q", typ)
	}
	if n := b.Int(`document.querySelectorAll('figure.overlay svg').length`); n != 1 {
		t.Errorf("%d overlay charts, want 1", n)
	}
	if n := b.Int(`document.querySelectorAll('.links a[href^="https://bgp.tools/as/20294"]').length`); n != 1 {
		t.Errorf("%d bgp.tools links for MTN, want 1", n)
	}

	// The routed space's baseline inside the alert (the shaded span): flat
	// at the detector's held 243.8.
	held := jsFloats(t, b, `(()=>{const s=chart('bgp_announced_v4{country:UG}');const r=s.querySelector('rect[fill="#d55e00"]');
	  const x0=+r.getAttribute('x'),x1=x0+ +r.getAttribute('width');
	  return line(s,'#e69f00').flatMap(pts).filter(p=>p[0]>x0+2&&p[0]<x1-2).map(p=>valueAt(s,p[1]));})()`)
	if len(held) < 100 {
		t.Fatalf("%d baseline points inside the alert", len(held))
	}
	for _, v := range held {
		if math.Abs(v-243.8) > 1.5 {
			t.Fatalf("baseline inside the alert drawn at %.1f, want the detector's 243.8 throughout (%d points)", v, len(held))
		}
	}
	// The withdrawals' highest point is the bucket of 315.
	peak := jsFloats(t, b, `(()=>{const s=chart('bgp_withdrawals{country:UG}');return [valueAt(s, Math.min(...line(s,'#0072b2','2').flatMap(pts).map(p=>p[1])))];})()`)
	if math.Abs(peak[0]-315) > 3 {
		t.Errorf("withdrawal peak drawn at %.1f, want its bucket's 315", peak[0])
	}
	t.Logf("baseline held at %.1f over %d points; withdrawal peak drawn at %.1f; worst traffic %s", held[0], len(held), peak[0], traffic)
	b.Shot("statuspage-incident.png", 1000, 900)
	b.Shot("statuspage-incident-phone.png", 390, 844)
	noOverflow(t, b, "the incident")
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

// The Iberian blackout's Spain incident: its networks with their traffic
// shares, four kinds of signal (traffic, DNS, routing, quality), the
// overlay of every signal of Spain, and traffic at about −61 % at its
// worst (the resolve saw −17 %). With links out turned off, the page has
// none. No console error, and no horizontal overflow on a phone.
func TestIberianIncidentInChromium(t *testing.T) {
	browsertest.Require(t)
	store, rec, _ := replayFixture(t, "iberia-2025-04-28")
	var spain *statuspage.Incident
	for _, in := range store.Incidents() {
		if in.Place == "Spain" {
			spain = &in
		}
	}
	if spain == nil {
		t.Fatalf("no Spain incident among %d", len(store.Incidents()))
	}
	b := browsertest.New(t)
	srv := httptest.NewServer(statuspage.NewHandler(store, rec, statuspage.Options{Title: "outagewatch"}))
	defer srv.Close()
	b.Do(chromedp.Navigate(srv.URL+"/incident/"+spain.ID), chromedp.WaitVisible(chromedp.CSS("#place")))

	shares := b.String(`[...document.querySelectorAll('table.networks tbody tr')].map(r=>r.querySelector('[data-l=network]').textContent+': '+r.querySelector('.share').textContent).join('; ')`)
	// Each figure is joined to its "%" by a no-break space.
	want := "Telefonica de Espana (AS3352): 33.3\u00a0% of Spain's traffic; Euskaltel (AS12338): 9.5\u00a0% of Spain's traffic; " +
		"Vodafone Spain (AS12430): 18.5\u00a0% of Spain's traffic; Orange Espagne (AS12479): 25.3\u00a0% of Spain's traffic; Digi Spain (AS57269): 12.5\u00a0% of Spain's traffic"
	if shares != want {
		t.Errorf("networks\n%s\nwant\n%s", shares, want)
	}
	kinds := b.String(`[...new Set([...document.querySelectorAll('table.changes tbody tr')].map(r=>r.dataset.kind))].join(',')`)
	if kinds != "traffic,dns,routing,quality" {
		t.Errorf("signal kinds %q, want traffic,dns,routing,quality", kinds)
	}
	overlay := b.String(`(()=>{const s=document.querySelector('figure.overlay svg');return s?[...s.querySelectorAll('polyline')].filter(p=>p.getAttribute('points').split(' ').length>100).length+' lines, axis '+[...s.querySelectorAll('text')].some(t=>t.textContent==='100 %'):'none'})()`)
	if overlay != "6 lines, axis true" {
		t.Errorf("overlay: %s, want 6 lines (traffic, DNS, IPv4 and IPv6 space, bandwidth, latency) on a per cent axis", overlay)
	}
	traffic := b.String(`[...document.querySelectorAll('table.changes tbody tr')].find(r=>r.dataset.kind==='traffic').querySelector('.worst').textContent`)
	if !strings.HasPrefix(traffic, "−61 %") {
		t.Errorf("worst traffic change %q, want about −61 %%", traffic)
	}
	if n := b.Int(`document.querySelectorAll('a[href^="https://"]').length`); n != 0 {
		t.Errorf("%d links out with links turned off", n)
	}
	t.Logf("Spain: worst traffic %s; %s", traffic, overlay)
	b.Shot("iberia-spain-incident.png", 1000, 900)
	b.Shot("iberia-spain-incident-phone.png", 390, 844)
	noOverflow(t, b, "the Spain incident")
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
