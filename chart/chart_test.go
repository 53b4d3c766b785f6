package chart

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestUnitFormat(t *testing.T) {
	for _, tc := range []struct {
		u       Unit
		v, step float64
		want    string
	}{
		{BitsPerSecond, 40e9, 10e9, "40 Gbit/s"},
		{BitsPerSecond, 2.5e9, 2.5e9, "2.5 Gbit/s"},
		{BitsPerSecond, 0, 2e8, "0 Mbit/s"},
		{BitsPerSecond, 122.7e9, 0, "123 Gbit/s"},
		{Milliseconds, 1.234, 0, "1.23 ms"},
		{QueriesPerSecond, 1500, 500, "1.5 kqueries/s"},
		{Milliseconds, 22, 5, "22 ms"},
		{Milliseconds, 0.25, 0.05, "0.25 ms"},
		{Percent, 0.125, 0.025, "12.5 %"},
		{Unit{Name: "/24 prefixes"}, 40, 10, "40 /24 prefixes"},
	} {
		if got := tc.u.Format(tc.v, tc.step); got != tc.want {
			t.Errorf("%v.Format(%g, %g) = %q, want %q", tc.u, tc.v, tc.step, got, tc.want)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	ticks, lo, hi := niceTicks(0, 122.7e9, 5)
	want := []float64{0, 50e9, 100e9, 150e9}
	if len(ticks) != len(want) || lo != 0 || hi != 150e9 {
		t.Fatalf("ticks %v lo %g hi %g", ticks, lo, hi)
	}
	for i := range want {
		if ticks[i] != want[i] {
			t.Fatalf("ticks %v, want %v", ticks, want)
		}
	}
}

func TestTimeTicks(t *testing.T) {
	from := time.Date(2025, 4, 28, 6, 7, 0, 0, time.UTC)
	to := from.Add(30 * time.Hour)
	var got []string
	for _, tk := range timeTicks(from, to, time.UTC, 8) {
		got = append(got, tk.T.Format("02T15")+"|"+tk.Hour+"|"+tk.Date)
	}
	want := "28T12|12:00|Mon 28 Apr 2025 28T18|18:00| 29T00|00:00|Tue 29 Apr 29T06|06:00| 29T12|12:00|"
	if strings.Join(got, " ") != want {
		t.Errorf("ticks\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	madrid, err := time.LoadLocation("Europe/Madrid")
	if err != nil {
		t.Skip("no time zone data")
	}
	if z := zoneName(from, madrid); z != "CEST (UTC+2)" {
		t.Errorf("zone %q", z)
	}
	if tk := timeTicks(from, to, madrid, 8)[0]; tk.Hour != "12:00" || tk.T.UTC().Hour() != 10 {
		t.Errorf("first Madrid tick %v %q", tk.T, tk.Hour)
	}
}

// sample is a day of a diurnal series that drops to a tenth for six hours.
func sample() *Chart {
	start := time.Date(2025, 4, 28, 0, 0, 0, 0, time.UTC)
	n := 288
	obs, base, week := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		b := 30e9 + 10e9*math.Sin(float64(i)/float64(n)*2*math.Pi)
		base[i], week[i], obs[i] = b, b*1.02, b
		if i >= 120 && i < 192 {
			obs[i] = b * 0.1
		}
	}
	obs[10] = math.NaN()
	return &Chart{
		Title: "traffic of Spain", Start: start, Step: 5 * time.Minute, Unit: BitsPerSecond,
		Series: []Series{{Name: "observed", Values: obs, Color: ColorObserved, Width: 2},
			{Name: "baseline", Values: base, Color: ColorBaseline},
			{Name: "same time last week", Values: week, Color: ColorLastWeek, Dash: true}},
		Spans: []Span{{From: start.Add(10 * time.Hour), To: start.Add(16 * time.Hour)}},
	}
}

func TestSVG(t *testing.T) {
	var b bytes.Buffer
	if err := sample().SVG(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{
		">observed</text>", ">baseline</text>", ">same time last week</text>", ">alert</text>",
		">40 Gbit/s</text>", ">0 Gbit/s</text>", ">12:00</text>", ">Mon 28 Apr 2025</text>", ">UTC</text>",
		// The alert from 10:00 to 16:00 of a 24-hour axis 800 px wide from x=84.
		`<rect x="417.3" y="46.0" width="200.0" height="170.0" fill="#d55e00" fill-opacity="0.14"/>`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %s", want)
		}
	}
	// The gap at bucket 10 splits the observed line in two; the third is
	// the legend's sample.
	if n := strings.Count(s, `stroke="#0072b2" stroke-width="2"`); n != 3 {
		t.Errorf("observed drawn as %d lines, want 3 (two around the gap, one in the legend)", n)
	}
	if dir := os.Getenv("OUTAGEWATCH_ARTIFACTS"); dir != "" {
		os.WriteFile(filepath.Join(dir, "chart-sample.svg"), b.Bytes(), 0o644)
	}
}

func TestPNG(t *testing.T) {
	var b bytes.Buffer
	if err := sample().PNG(&b, 1); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 900 || img.Bounds().Dy() != 260 {
		t.Fatalf("size %v", img.Bounds())
	}
	// Inside the alert span the background is tinted orange; outside it
	// is white.
	r, g, bl, _ := img.At(500, 60).RGBA()
	if !(r > g && g > bl && r>>8 > 240 && bl>>8 < 235) {
		t.Errorf("span pixel %d %d %d, want a light orange", r>>8, g>>8, bl>>8)
	}
	r, g, bl, _ = img.At(300, 60).RGBA()
	if r>>8 != 255 || g>>8 != 255 || bl>>8 != 255 {
		t.Errorf("pixel outside the span %d %d %d, want white", r>>8, g>>8, bl>>8)
	}
	if dir := os.Getenv("OUTAGEWATCH_ARTIFACTS"); dir != "" {
		var b2 bytes.Buffer
		sample().PNG(&b2, 2)
		os.WriteFile(filepath.Join(dir, "chart-sample.png"), b2.Bytes(), 0o644)
	}
}

// A unit in words ("/24 prefixes") moves the plot right of its widest
// value label, so that no label is cut at the chart's left edge; the
// usual units keep the plot at padL.
func TestSVGWideUnitLabels(t *testing.T) {
	c := sample()
	c.Unit = Unit{Name: "/24 prefixes"}
	c.Title = "announced IPv4 space of Uganda"
	for _, s := range c.Series {
		for i := range s.Values {
			s.Values[i] /= 1.6e8 // 30e9 → 187.5, the sample's shape
		}
	}
	var b bytes.Buffer
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	// "300 /24 prefixes" is 16 characters, 98.6 px at 11 px: the plot
	// starts at 112.6 and the label ends 6 px before it, 8 px from the
	// edge.
	for _, want := range []string{`<text x="106.6" y="50.0" font-size="11" fill="#444444" text-anchor="end">300 /24 prefixes</text>`,
		`>0 /24 prefixes</text>`, `<polyline fill="none" points="112.6,216.0 884.0,216.0"`} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %s", want)
		}
	}
}
