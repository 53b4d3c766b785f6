// Package chart draws one time-series chart the way outage analysts read
// them (Radar, IODA): the observed series against its baseline over the
// whole window, the same time a week earlier, alert spans shaded, units and
// sensible ticks on the value axis, hours and dates with their time zone on
// the time axis, and a legend. The same layout goes to SVG (the report and
// the status page) and PNG (a chat upload) through one small canvas
// interface, so both show the same thing.
//
// It is our own rather than a charting library's: the Go chart library the
// module proxy serves here (go-analyze/charts) has category x axes only and
// no shaded ranges, and rasterises text through the unmaintained
// golang/freetype; what is drawn here is a few lines and rectangles, and
// golang.org/x/image (vector, opentype, the Go fonts) does the PNG.
package chart

import (
	"math"
	"time"
)

// Series is one line: Values[i] is the value at Start + i*Step; NaN is no
// data, drawn as a gap.
type Series struct {
	Name   string
	Values []float64
	// Lo and Hi, when set, are each point's lowest and highest value
	// (see Downsample): drawn as a light band under the line, so a
	// downsampled chart still shows every bucket's extreme.
	Lo, Hi []float64
	Color  string // "#rrggbb"
	Width  float64
	Dash   bool
}

// Span is a time range drawn across the plot: an alert (filled) or a
// labelled window of a scored fixture (outlined).
type Span struct {
	From, To time.Time
	Label    string
	Color    string
	Outline  bool
}

// Chart is one chart. Values are in the unit's base (bit/s, not Gbit/s):
// the axis picks the prefix.
type Chart struct {
	Title    string
	Start    time.Time
	Step     time.Duration
	Unit     Unit
	Location *time.Location // time zone of the labels; UTC when nil
	Series   []Series
	Spans    []Span
	Width    int // pixels; 900 when 0
	Height   int // pixels; 260 when 0
}

// Colours of the usual series, colour-blind safe (Okabe-Ito).
const (
	ColorObserved = "#0072b2"
	ColorBaseline = "#e69f00"
	ColorLastWeek = "#999999"
	ColorAlert    = "#d55e00"
	ColorWindow   = "#009e73"
)

func (c *Chart) size() (w, h float64) {
	w, h = float64(c.Width), float64(c.Height)
	if w == 0 {
		w = 900
	}
	if h == 0 {
		h = 260
	}
	return
}

func (c *Chart) loc() *time.Location {
	if c.Location == nil {
		return time.UTC
	}
	return c.Location
}

// End returns the time just after the last value of the longest series.
func (c *Chart) End() time.Time {
	n := 0
	for _, s := range c.Series {
		n = max(n, len(s.Values))
	}
	return c.Start.Add(time.Duration(n) * c.Step)
}

// yRange returns the value range to draw: from 0 (outages read against
// zero) unless the values are all far from it, to a little above the
// highest value.
func (c *Chart) yRange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, vs := range [][]float64{s.Values, s.Lo, s.Hi} {
			for _, v := range vs {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					lo, hi = min(lo, v), max(hi, v)
				}
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 0, 1
	}
	if lo >= 0 && lo < hi*0.6 || lo >= 0 && hi == 0 {
		lo = 0
	}
	if hi == lo {
		hi = lo + math.Max(1, math.Abs(lo)*0.1)
	}
	return lo, hi
}
