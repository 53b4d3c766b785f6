package alerting

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
)

// ChartPNG draws an event's or alert's evidence as a small PNG: the
// observed values (dark line) against the baseline (light line), so a
// Slack reader sees the drop without opening anything. Missing buckets
// break the line. Returns nil when there is nothing to draw.
func ChartPNG(ev *Event, w, h int) []byte {
	pts := ev.Evidence
	if len(pts) < 2 || w < 20 || h < 20 {
		return nil
	}
	top := 0.0
	for _, p := range pts {
		top = max(top, p.Baseline)
		if p.Value != nil {
			top = max(top, *p.Value)
		}
	}
	if top <= 0 || math.IsInf(top, 0) || math.IsNaN(top) {
		return nil
	}
	top *= 1.1
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	bg := color.RGBA{255, 255, 255, 255}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, bg)
		}
	}
	const pad = 6
	grid := color.RGBA{225, 225, 225, 255}
	for i := 0; i <= 4; i++ {
		y := pad + (h-2*pad)*i/4
		for x := pad; x < w-pad; x++ {
			img.SetRGBA(x, y, grid)
		}
	}
	px := func(i int) int { return pad + (w-2*pad-1)*i/(len(pts)-1) }
	py := func(v float64) int { return pad + int(float64(h-2*pad-1)*(1-v/top)) }
	base := color.RGBA{150, 180, 230, 255}
	obs := color.RGBA{200, 30, 30, 255}
	for i := 1; i < len(pts); i++ {
		line(img, px(i-1), py(pts[i-1].Baseline), px(i), py(pts[i].Baseline), base, 1)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i-1].Value == nil || pts[i].Value == nil {
			continue
		}
		line(img, px(i-1), py(*pts[i-1].Value), px(i), py(*pts[i].Value), obs, 2)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil
	}
	return b.Bytes()
}

// line draws with Bresenham's algorithm, thick pixels wide.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, thick int) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		for t := 0; t < thick; t++ {
			img.SetRGBA(x0, y0+t, c)
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
