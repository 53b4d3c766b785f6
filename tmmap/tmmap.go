// Package tmmap draws the Traffic Manager's plan in force as a page: each
// location a disc coloured by its planned utilisation against its own
// thresholds, an arrow for the load moved between two locations, withdrawn
// and stale locations marked, and the moves and notes listed. It reads the
// same input and plan the capacity endpoint answers from, so the page and
// the API never disagree.
package tmmap

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"sort"

	"github.com/outagewatch/outagewatch/trafficmanager"
)

//go:embed map.html
var files embed.FS

var page = template.Must(template.New("map.html").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"ms":  func(f float64) string { return fmt.Sprintf("%.0f", f) },
	"fpct": func(f float64) string {
		return fmt.Sprintf("%.4g%%", math.Round(f*1e6)/1e4)
	},
}).ParseFS(files, "map.html"))

// Location is one disc of the map.
type Location struct {
	Name      string  `json:"name"`
	X         float64 `json:"x"`
	Y         float64 `json:"y"`
	Capacity  float64 `json:"capacity_ms"`
	Served    float64 `json:"served_ms"`
	Util      float64 `json:"util"`
	Max       float64 `json:"max"`
	Accept    float64 `json:"acceptable"`
	Band      string  `json:"band"` // ok, busy, over, withdrawn
	Withdrawn bool    `json:"withdrawn"`
	Stale     bool    `json:"stale"`
}

// Arrow is the load one location moves to another, all plans and
// sections together; moves between sections of one location are listed
// but not drawn.
type Arrow struct {
	From   string  `json:"from"`
	To     string  `json:"to"`
	CPU    float64 `json:"cpu_ms"`
	X1, Y1 float64 `json:"-"`
	X2, Y2 float64 `json:"-"`
	MX, MY float64 `json:"-"` // the label's place, mid-arrow
	Width  float64 `json:"-"`
}

// View is the whole page.
type View struct {
	Locations []Location            `json:"locations"`
	Arrows    []Arrow               `json:"arrows"`
	Moves     []trafficmanager.Move `json:"moves"`
	Withdrawn []string              `json:"withdrawn"`
}

// Size of the drawing, in SVG units; locations sit on a circle in name
// order (the topology carries no coordinates).
const (
	width, height = 800.0, 640.0
	ring          = 250.0
	disc          = 30.0
)

// Build lays out the plan st on input in.
func Build(in trafficmanager.Input, st trafficmanager.State) View {
	served := trafficmanager.Served(in, st)
	type agg struct {
		capa, served, max, acc float64
		stale                  bool
	}
	locs := map[string]*agg{}
	unitLoc := map[string]string{}
	for i := range in.Units {
		u := &in.Units[i]
		unitLoc[u.ID()] = u.Location
		a := locs[u.Location]
		if a == nil {
			a = &agg{}
			locs[u.Location] = a
		}
		lim, _ := u.Limits()
		a.capa += u.Capacity
		a.served += served[u.ID()]
		a.max += lim.Max * u.Capacity
		a.acc += lim.Acceptable * u.Capacity
		a.stale = a.stale || in.Stale(u)
	}
	gone := map[string]bool{}
	for _, l := range st.Withdrawn {
		gone[l] = true
	}
	names := make([]string, 0, len(locs))
	for l := range locs {
		names = append(names, l)
	}
	sort.Strings(names)
	v := View{Moves: st.Moves, Withdrawn: st.Withdrawn}
	pos := map[string][2]float64{}
	for i, l := range names {
		a := locs[l]
		th := 2*math.Pi*float64(i)/float64(len(names)) - math.Pi/2
		x, y := width/2+ring*math.Cos(th), height/2+ring*math.Sin(th)
		pos[l] = [2]float64{x, y}
		loc := Location{Name: l, X: x, Y: y, Capacity: a.capa, Served: a.served, Withdrawn: gone[l], Stale: a.stale}
		if a.capa > 0 {
			loc.Util, loc.Max, loc.Accept = a.served/a.capa, a.max/a.capa, a.acc/a.capa
		} else if a.served > 0 {
			loc.Util = math.Inf(1)
		}
		switch {
		case loc.Withdrawn:
			loc.Band = "withdrawn"
		case loc.Util > loc.Max:
			loc.Band = "over"
		case loc.Util >= loc.Accept:
			loc.Band = "busy"
		default:
			loc.Band = "ok"
		}
		v.Locations = append(v.Locations, loc)
	}
	sum := map[[2]string]float64{}
	for _, m := range st.Moves {
		f, t := unitLoc[m.From], unitLoc[m.To]
		if f == "" || t == "" || f == t {
			continue
		}
		sum[[2]string{f, t}] += m.CPU
	}
	keys := make([][2]string, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		a, b := pos[k[0]], pos[k[1]]
		dx, dy := b[0]-a[0], b[1]-a[1]
		d := math.Hypot(dx, dy)
		if d == 0 {
			continue
		}
		ux, uy := dx/d, dy/d
		// Offset sideways so that moves both ways between two locations
		// do not draw over each other. The width grows with the square
		// root of the load, so a big move does not hide the map.
		ox, oy := -uy*6, ux*6
		v.Arrows = append(v.Arrows, Arrow{From: k[0], To: k[1], CPU: sum[k],
			X1: a[0] + ux*disc + ox, Y1: a[1] + uy*disc + oy, X2: b[0] - ux*(disc+8) + ox, Y2: b[1] - uy*(disc+8) + oy,
			MX: (a[0]+b[0])/2 + 2*ox, MY: (a[1]+b[1])/2 + 2*oy, Width: 1.5 + math.Min(10, math.Sqrt(sum[k])/4)})
	}
	return v
}

// Handler serves the map at / (HTML) and /map.json; state returns the
// input and the plan in force.
func Handler(title string, state func() (trafficmanager.Input, trafficmanager.State)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /map.json", func(w http.ResponseWriter, r *http.Request) {
		in, st := state()
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(Build(in, st)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		in, st := state()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		err := page.Execute(w, struct {
			Title string
			View
			W, H float64
		}{title, Build(in, st), width, height})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return mux
}
