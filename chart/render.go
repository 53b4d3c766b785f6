package chart

import (
	"math"
	"time"
)

type pt struct{ X, Y float64 }

type anchor int

const (
	anchorStart anchor = iota
	anchorMiddle
	anchorEnd
)

// canvas is what a backend draws; coordinates in pixels from the top left.
type canvas interface {
	rect(x, y, w, h float64, fill string, opacity float64, stroke string, dash bool)
	polyline(pts []pt, color string, width float64, dash bool)
	polygon(pts []pt, fill string, opacity float64)
	text(x, y float64, s string, size float64, a anchor, color string, bold bool)
}

// Layout, in pixels.
const (
	padL, padR, padT, padB = 84.0, 16.0, 46.0, 44.0
	fontSize               = 11.0
	textGrey               = "#444444"
	gridGrey               = "#e4e4e4"
)

// textWidth estimates the width of s: the legend is laid out before any
// backend measures (Go Regular averages about 0.55 em a character).
func textWidth(s string, size float64) float64 { return float64(len([]rune(s))) * size * 0.56 }

// draw lays the chart out on cv.
func (c *Chart) draw(cv canvas) {
	w, h := c.size()
	lo, hi := c.yRange()
	ticks, lo, hi := niceTicks(lo, hi, 5)
	step := 0.0
	if len(ticks) > 1 {
		step = ticks[1] - ticks[0]
	}
	// The plot starts right of the widest value label ("240 /24
	// prefixes"), and never left of padL.
	x0, x1, y0, y1 := padL, w-padR, padT, h-padB
	for _, v := range ticks {
		x0 = math.Max(x0, textWidth(c.Unit.Format(v, step), fontSize)+14)
	}
	items, rows := c.legend(8, x1)
	y0 += float64(rows-1) * 14
	cv.rect(0, 0, w, h, "#ffffff", 1, "", false)
	cv.text(8, 17, c.Title, 13, anchorStart, "#111111", true)

	start, end := c.Start, c.End()
	if !end.After(start) {
		end = start.Add(time.Hour)
	}
	xOf := func(t time.Time) float64 {
		return x0 + (x1-x0)*float64(t.Sub(start))/float64(end.Sub(start))
	}
	yOf := func(v float64) float64 { return y1 - (y1-y0)*(v-lo)/(hi-lo) }

	// Spans under everything else.
	for _, s := range c.Spans {
		a, b := s.From, s.To
		if a.Before(start) {
			a = start
		}
		if b.After(end) || b.IsZero() {
			b = end
		}
		if !b.After(a) {
			continue
		}
		color := s.Color
		if color == "" {
			color = ColorAlert
		}
		if s.Outline {
			cv.rect(xOf(a), y0, xOf(b)-xOf(a), y1-y0, "", 0, color, true)
		} else {
			cv.rect(xOf(a), y0, math.Max(xOf(b)-xOf(a), 1), y1-y0, color, 0.14, "", false)
		}
		if s.Label != "" {
			cv.text(xOf(a)+3, y0+11, s.Label, 9.5, anchorStart, color, false)
		}
	}

	// Value axis: grid and labels.
	for _, v := range ticks {
		y := yOf(v)
		cv.polyline([]pt{{x0, y}, {x1, y}}, gridGrey, 1, false)
		cv.text(x0-6, y+4, c.Unit.Format(v, step), fontSize, anchorEnd, textGrey, false)
	}

	// Time axis: hours, and the date under the first tick of each day.
	for _, tk := range timeTicks(start, end, c.loc(), int((x1-x0)/70)) {
		x := xOf(tk.T)
		cv.polyline([]pt{{x, y1}, {x, y1 + 4}}, textGrey, 1, false)
		if tk.Date != "" {
			cv.polyline([]pt{{x, y0}, {x, y1}}, gridGrey, 1, false)
		}
		if tk.Hour != "" {
			cv.text(x, y1+16, tk.Hour, fontSize, anchorMiddle, textGrey, false)
		}
		// Dates start at their tick, and one that would run off the right
		// edge is left out.
		if tk.Date != "" && x+textWidth(tk.Date, fontSize) <= w-2 {
			cv.text(x, y1+30, tk.Date, fontSize, anchorStart, textGrey, true)
		}
	}
	cv.text(8, y1+30, zoneName(start, c.loc()), fontSize, anchorStart, textGrey, false)
	cv.polyline([]pt{{x0, y1}, {x1, y1}}, "#999999", 1, false)

	// Series, in order (the observed line last, on top, reads best).
	for i := len(c.Series) - 1; i >= 0; i-- {
		s := c.Series[i]
		width := s.Width
		if width == 0 {
			width = 1.5
		}
		c.band(cv, s, xOf, func(v float64) float64 { return yOf(math.Min(math.Max(v, lo), hi)) })
		var run []pt
		flush := func() {
			if len(run) == 1 {
				run = append(run, pt{run[0].X + 1, run[0].Y})
			}
			if len(run) > 1 {
				cv.polyline(run, s.Color, width, s.Dash)
			}
			run = nil
		}
		for j, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				flush()
				continue
			}
			t := start.Add(time.Duration(j)*c.Step + c.Step/2)
			run = append(run, pt{xOf(t), yOf(math.Min(math.Max(v, lo), hi))})
		}
		flush()
	}

	// Legend, top right, laid out above.
	for _, it := range items {
		if it.box {
			if it.dash {
				cv.rect(it.x, it.y-8, 16, 10, "", 0, it.color, true)
			} else {
				cv.rect(it.x, it.y-8, 16, 10, it.color, 0.25, "", false)
			}
		} else {
			cv.polyline([]pt{{it.x, it.y - 4}, {it.x + 16, it.y - 4}}, it.color, 2, it.dash)
		}
		cv.text(it.x+22, it.y, it.name, fontSize, anchorStart, textGrey, false)
	}
}

// legendItem is one entry of the legend: a line sample or a box, and a
// name, placed at x (the sample's left) on the baseline y.
type legendItem struct {
	name, color string
	dash, box   bool
	x, y        float64
}

// legend lays out the legend right-aligned from x1 at y=36: a line sample
// and the name of each series, then the span kinds shown. Entries that do
// not fit between left and x1 wrap to a further row 14 px lower; rows is
// how many there are.
func (c *Chart) legend(left, x1 float64) (items []legendItem, rows int) {
	for _, s := range c.Series {
		items = append(items, legendItem{name: s.Name, color: s.Color, dash: s.Dash})
	}
	seen := map[string]bool{}
	for _, s := range c.Spans {
		name := "alert"
		if s.Outline {
			name = "labelled window"
		}
		if !seen[name] {
			seen[name] = true
			color := s.Color
			if color == "" {
				color = ColorAlert
			}
			items = append(items, legendItem{name: name, color: color, dash: s.Outline, box: true})
		}
	}
	// Fill rows from the first item, each row right-aligned.
	rows = 1
	var row []int
	place := func(y float64) {
		x := x1
		for j := len(row) - 1; j >= 0; j-- {
			it := &items[row[j]]
			x -= textWidth(it.name, fontSize) + 22
			it.x, it.y = x, y
			x -= 14
		}
	}
	width := 0.0
	for i, it := range items {
		wd := textWidth(it.name, fontSize) + 36
		if len(row) > 0 && width+wd > x1-left {
			place(36 + float64(rows-1)*14)
			rows++
			row, width = nil, 0
		}
		row = append(row, i)
		width += wd
	}
	place(36 + float64(rows-1)*14)
	return items, rows
}

// band fills, under series s, the area between its Lo and Hi values, one
// polygon per run without gaps.
func (c *Chart) band(cv canvas, s Series, xOf func(time.Time) float64, yOf func(float64) float64) {
	if len(s.Lo) != len(s.Values) || len(s.Hi) != len(s.Values) {
		return
	}
	var top, bottom []pt
	flush := func() {
		if len(top) > 1 {
			poly := append(top, bottom...)
			cv.polygon(poly, s.Color, 0.22)
		}
		top, bottom = nil, nil
	}
	for j := range s.Values {
		l, h := s.Lo[j], s.Hi[j]
		if math.IsNaN(l) || math.IsNaN(h) || math.IsInf(l, 0) || math.IsInf(h, 0) {
			flush()
			continue
		}
		x := xOf(c.Start.Add(time.Duration(j)*c.Step + c.Step/2))
		top = append(top, pt{x, yOf(h)})
		bottom = append([]pt{{x, yOf(l)}}, bottom...)
	}
	flush()
}
