package chart

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// eq compares float slices, NaN equal to NaN.
func eq(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
}

func TestDownsampleKeepsExtremes(t *testing.T) {
	nan := math.NaN()
	// Uganda's withdrawals: one bucket of 315 among none, folded by four;
	// a run with a gap; a run of only gaps; a short last run.
	v := []float64{0, 0, 315, 0, 5, nan, 1, 3, nan, nan, nan, nan, 7, 2}
	line, lo, hi := Downsample(v, 4, KeepMax)
	if want := []float64{315, 5, nan, 7}; !eq(line, want) {
		t.Errorf("max line %v, want %v", line, want)
	}
	if want := []float64{0, 1, nan, 2}; !eq(lo, want) {
		t.Errorf("lo %v, want %v", lo, want)
	}
	if want := []float64{315, 5, nan, 7}; !eq(hi, want) {
		t.Errorf("hi %v, want %v", hi, want)
	}
	line, _, _ = Downsample(v, 4, KeepMin)
	if want := []float64{0, 1, nan, 2}; !eq(line, want) {
		t.Errorf("min line %v, want %v", line, want)
	}
	line, _, _ = Downsample(v, 4, KeepMean)
	if want := []float64{78.75, 3, nan, 4.5}; !eq(line, want) {
		t.Errorf("mean line %v, want %v", line, want)
	}
	// f of 1 (or less) is the series itself.
	if line, lo, hi := Downsample(v, 0, KeepMean); !eq(line, v) || !eq(lo, v) || !eq(hi, v) {
		t.Errorf("f=0: %v %v %v", line, lo, hi)
	}
}

// A series with a band draws one polygon per run without gaps, under its
// line; one without draws none.
func TestBandDrawn(t *testing.T) {
	c := sample()
	obs := c.Series[0].Values
	line, lo, hi := Downsample(obs, 4, KeepMin)
	c.Series[0].Values, c.Series[0].Lo, c.Series[0].Hi = line, lo, hi
	c.Step *= 4
	var b strings.Builder
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	// Bucket 10 is a gap, but folded by four its run (8..11) still has
	// values: one band.
	if n := strings.Count(b.String(), `<polygon points="`); n != 1 {
		t.Errorf("%d bands, want 1", n)
	}
	if strings.Count(b.String(), `fill="#0072b2" fill-opacity="0.22"`) != 1 {
		t.Errorf("the band is not in the observed colour")
	}
	b.Reset()
	if err := sample().SVG(&b); err != nil || strings.Contains(b.String(), "<polygon") {
		t.Errorf("a series without Lo and Hi drew a band (%v)", err)
	}
}

// A legend too long for one row wraps to a second, and the plot starts
// lower; every entry stays inside the chart.
func TestLegendWraps(t *testing.T) {
	c := sample()
	c.Series[1].Name = "baseline: detector's (median of the hours before onset), else median, same time, previous weeks or days"
	var b strings.Builder
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{`y="36.0" font-size="11" fill="#444444">observed</text>`, `y="50.0" font-size="11" fill="#444444">alert</text>`,
		// The plot's top grid line moved down a row, from 46 to 60.
		`<polyline fill="none" points="84.0,60.0 884.0,60.0"`} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %s", want)
		}
	}
	items, rows := c.legend(8, 884)
	for _, it := range items {
		if it.x < 8 {
			t.Errorf("legend entry %q starts at x=%.1f, off the chart", it.name, it.x)
		}
	}
	if rows != 2 {
		t.Errorf("%d legend rows, want 2", rows)
	}
}
