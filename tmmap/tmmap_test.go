package tmmap

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/outagewatch/outagewatch/internal/browsertest"
	"github.com/outagewatch/outagewatch/trafficmanager"
)

// The cascade scenario after Auckland is drained on top of Christchurch:
// both withdrawn, Wellington moving 110 ms/s of Free to Sydney. For the
// view, Sydney runs on 5,000 (2,800 served: 56 %, below acceptable) and
// Wellington's reports are 15 minutes old against a 10-minute limit.
func fixture(t *testing.T) (trafficmanager.Input, trafficmanager.State) {
	sc, err := trafficmanager.LoadScenario("../trafficmanager/testdata/cascade.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, ins := sc.Inputs()
	var st trafficmanager.State
	for _, in := range ins[:3] {
		st = trafficmanager.Tick(in, st).State
	}
	in := ins[2]
	in.MaxAge = 10 * time.Minute
	for i := range in.Units {
		switch in.Units[i].ID() {
		case "SYD":
			in.Units[i].Capacity = 5000
		case "WLG":
			in.Units[i].ReportAge = 15 * time.Minute
		}
	}
	return in, st
}

func TestBuild(t *testing.T) {
	v := Build(fixture(t))
	var got []string
	for _, l := range v.Locations {
		s := l.Name + " " + l.Band
		if l.Stale {
			s += " stale"
		}
		got = append(got, s)
	}
	if strings.Join(got, ", ") != "AKL withdrawn, CHC withdrawn, SYD ok, WLG busy stale" {
		t.Fatalf("locations %q", got)
	}
	if len(v.Arrows) != 1 || v.Arrows[0].From != "WLG" || v.Arrows[0].To != "SYD" || v.Arrows[0].CPU != 110 {
		t.Fatalf("arrows %+v", v.Arrows)
	}
	// WLG: 600 own + 150 of AKL + 80 + 80 of CHC - 110 moved = 800 of 1,000.
	for _, l := range v.Locations {
		if l.Name == "WLG" && (l.Served != 800 || l.Util != 0.8) {
			t.Fatalf("WLG %+v", l)
		}
	}
}

// The page in headless Chromium: four discs coloured by band, the two
// withdrawn ones marked, one arrow labelled with its load, the move
// listed; clicking Auckland dims the Wellington move, clicking Sydney
// shows it; no console error.
func TestMapInChromium(t *testing.T) {
	browsertest.Require(t)
	in, st := fixture(t)
	srv := httptest.NewServer(Handler("outagewatch", func() (trafficmanager.Input, trafficmanager.State) { return in, st }))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/map.json")
	if err != nil {
		t.Fatal(err)
	}
	var v View
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || strings.Join(v.Withdrawn, " ") != "AKL CHC" || len(v.Moves) != 1 {
		t.Fatalf("map.json %+v %v", v, err)
	}

	b := browsertest.New(t)
	b.Do(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#map")))
	if n := b.Int(`document.querySelectorAll('#map .loc').length`); n != 4 {
		t.Fatalf("%d locations drawn", n)
	}
	if got := b.String(`[...document.querySelectorAll('#map .loc')].map(g => g.dataset.loc + ':' + getComputedStyle(g.querySelector('circle')).fill).join(' ')`); got != "AKL:rgb(189, 189, 189) CHC:rgb(189, 189, 189) SYD:rgb(102, 187, 106) WLG:rgb(255, 202, 40)" {
		t.Errorf("fills %s", got)
	}
	if got := b.String(`[...document.querySelectorAll('#map .loc text:nth-of-type(2)')].map(t => t.textContent).join(' ')`); got != "withdrawn withdrawn 56.0% 80.0%" {
		t.Errorf("labels %q", got)
	}
	if got := b.String(`document.querySelector('#map .loc.stale').dataset.loc`); got != "WLG" {
		t.Errorf("stale %q", got)
	}
	if got := b.String(`document.querySelector('#map .arrow text').textContent`); got != "110 ms/s" {
		t.Errorf("arrow label %q", got)
	}
	if got := b.Text(`#moves tbody tr`); !strings.Contains(got, "Free") || !strings.Contains(got, "27.5%") {
		t.Errorf("move row %q", got)
	}
	if got := b.Text(`#withdrawn`); got != "Withdrawn: AKL, CHC" {
		t.Errorf("withdrawn %q", got)
	}
	dim := `document.querySelector('#map .arrow').classList.contains('dim') + ' ' + document.querySelector('#moves tbody tr').classList.contains('dim')`
	b.Do(chromedp.Click(chromedp.CSS(`#map .loc[data-loc=AKL] circle`)))
	if got := b.String(dim); got != "true true" {
		t.Errorf("after clicking AKL: dimmed %s", got)
	}
	b.Do(chromedp.Click(chromedp.CSS(`#map .loc[data-loc=SYD] circle`)))
	if got := b.String(dim); got != "false false" {
		t.Errorf("after clicking SYD: dimmed %s", got)
	}
	b.Shot("tm-map.png", 1000, 900)
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
