package chart

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strconv"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// PNG writes the chart as a PNG image at scale times its size (2 for a
// sharp image on high-density screens), for chat uploads and e-mail,
// where SVG does not show.
func (c *Chart) PNG(w io.Writer, scale float64) error {
	if scale <= 0 {
		scale = 1
	}
	wd, ht := c.size()
	img := image.NewRGBA(image.Rect(0, 0, int(math.Ceil(wd*scale)), int(math.Ceil(ht*scale))))
	cv := &pngCanvas{img: img, s: scale}
	c.draw(cv)
	if cv.err != nil {
		return cv.err
	}
	return png.Encode(w, img)
}

var (
	fontsOnce         sync.Once
	regularTT, boldTT *opentype.Font
	fontErr           error
	facesMu           sync.Mutex
	faces             = map[[2]float64]font.Face{}
)

func face(size float64, bold bool) (font.Face, error) {
	fontsOnce.Do(func() {
		if regularTT, fontErr = opentype.Parse(goregular.TTF); fontErr == nil {
			boldTT, fontErr = opentype.Parse(gobold.TTF)
		}
	})
	if fontErr != nil {
		return nil, fontErr
	}
	k := [2]float64{size, 0}
	f := regularTT
	if bold {
		k[1], f = 1, boldTT
	}
	facesMu.Lock()
	defer facesMu.Unlock()
	if fc, ok := faces[k]; ok {
		return fc, nil
	}
	fc, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return nil, err
	}
	faces[k] = fc
	return fc, nil
}

type pngCanvas struct {
	img *image.RGBA
	s   float64
	err error
}

func parseColor(hex string, alpha float64) color.Color {
	if len(hex) != 7 || hex[0] != '#' {
		return color.Black
	}
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if err != nil {
		return color.Black
	}
	a := uint8(math.Round(alpha * 255))
	// Premultiplied, as color.RGBA wants.
	m := func(c uint64) uint8 { return uint8(math.Round(float64(c) * alpha)) }
	return color.RGBA{m(v >> 16 & 0xff), m(v >> 8 & 0xff), m(v & 0xff), a}
}

// fill rasterises a closed polygon (in chart units) in c.
func (p *pngCanvas) fill(poly []pt, c color.Color) {
	b := p.img.Bounds()
	z := vector.NewRasterizer(b.Dx(), b.Dy())
	z.MoveTo(float32(poly[0].X*p.s), float32(poly[0].Y*p.s))
	for _, q := range poly[1:] {
		z.LineTo(float32(q.X*p.s), float32(q.Y*p.s))
	}
	z.ClosePath()
	z.Draw(p.img, b, image.NewUniform(c), image.Point{})
}

func (p *pngCanvas) rect(x, y, w, h float64, fill string, opacity float64, stroke string, dash bool) {
	if fill != "" {
		p.fill([]pt{{x, y}, {x + w, y}, {x + w, y + h}, {x, y + h}}, parseColor(fill, opacity))
	}
	if stroke != "" {
		p.polyline([]pt{{x, y}, {x + w, y}, {x + w, y + h}, {x, y + h}, {x, y}}, stroke, 1, dash)
	}
}

func (p *pngCanvas) polygon(pts []pt, fill string, opacity float64) {
	if len(pts) > 2 {
		p.fill(pts, parseColor(fill, opacity))
	}
}

// polyline strokes each segment as a thin quadrilateral; dashes cut the
// segments into 5-on, 3-off pieces.
func (p *pngCanvas) polyline(pts []pt, col string, width float64, dash bool) {
	c := parseColor(col, 1)
	seg := func(a, b pt) {
		dx, dy := b.X-a.X, b.Y-a.Y
		l := math.Hypot(dx, dy)
		if l == 0 {
			return
		}
		nx, ny := -dy/l*width/2, dx/l*width/2
		// Extend a little along the line so joints have no gaps.
		ex, ey := dx/l*width/4, dy/l*width/4
		p.fill([]pt{{a.X + nx - ex, a.Y + ny - ey}, {b.X + nx + ex, b.Y + ny + ey}, {b.X - nx + ex, b.Y - ny + ey}, {a.X - nx - ex, a.Y - ny - ey}}, c)
	}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if !dash {
			seg(a, b)
			continue
		}
		l := math.Hypot(b.X-a.X, b.Y-a.Y)
		for d := 0.0; d < l; d += 8 {
			e := math.Min(d+5, l)
			seg(pt{a.X + (b.X-a.X)*d/l, a.Y + (b.Y-a.Y)*d/l}, pt{a.X + (b.X-a.X)*e/l, a.Y + (b.Y-a.Y)*e/l})
		}
	}
}

func (p *pngCanvas) text(x, y float64, s string, size float64, a anchor, col string, bold bool) {
	fc, err := face(size*p.s, bold)
	if err != nil {
		if p.err == nil {
			p.err = fmt.Errorf("chart: font: %w", err)
		}
		return
	}
	d := font.Drawer{Dst: p.img, Src: image.NewUniform(parseColor(col, 1)), Face: fc}
	adv := d.MeasureString(s)
	px := x * p.s
	switch a {
	case anchorMiddle:
		px -= float64(adv) / 64 / 2
	case anchorEnd:
		px -= float64(adv) / 64
	}
	d.Dot = fixed.Point26_6{X: fixed.Int26_6(px * 64), Y: fixed.Int26_6(y * p.s * 64)}
	d.DrawString(s)
}

var _ draw.Image = (*image.RGBA)(nil)
