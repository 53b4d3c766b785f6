package chart

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strconv"
)

// SVG writes the chart as an SVG element (no XML prolog), ready to inline
// in HTML or to save as a file. It scales to the width of its container.
func (c *Chart) SVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	wd, ht := c.size()
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" width="100%%" preserveAspectRatio="xMidYMid meet" role="img" font-family="Go, DejaVu Sans, Helvetica, Arial, sans-serif"><title>%s</title>`,
		wd, ht, html.EscapeString(c.Title))
	c.draw(&svgCanvas{w: bw})
	bw.WriteString("</svg>")
	return bw.Flush()
}

type svgCanvas struct{ w *bufio.Writer }

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func (s *svgCanvas) rect(x, y, w, h float64, fill string, opacity float64, stroke string, dash bool) {
	fmt.Fprintf(s.w, `<rect x="%s" y="%s" width="%s" height="%s"`, f1(x), f1(y), f1(w), f1(h))
	if fill != "" {
		fmt.Fprintf(s.w, ` fill="%s"`, fill)
		if opacity < 1 {
			fmt.Fprintf(s.w, ` fill-opacity="%g"`, opacity)
		}
	} else {
		s.w.WriteString(` fill="none"`)
	}
	if stroke != "" {
		fmt.Fprintf(s.w, ` stroke="%s"`, stroke)
		if dash {
			s.w.WriteString(` stroke-dasharray="4 3"`)
		}
	}
	s.w.WriteString("/>")
}

func (s *svgCanvas) polyline(pts []pt, color string, width float64, dash bool) {
	s.w.WriteString(`<polyline fill="none" points="`)
	for i, p := range pts {
		if i > 0 {
			s.w.WriteByte(' ')
		}
		s.w.WriteString(f1(p.X) + "," + f1(p.Y))
	}
	fmt.Fprintf(s.w, `" stroke="%s" stroke-width="%g" stroke-linejoin="round"`, color, width)
	if dash {
		s.w.WriteString(` stroke-dasharray="5 3"`)
	}
	s.w.WriteString("/>")
}

func (s *svgCanvas) polygon(pts []pt, fill string, opacity float64) {
	s.w.WriteString(`<polygon points="`)
	for i, p := range pts {
		if i > 0 {
			s.w.WriteByte(' ')
		}
		s.w.WriteString(f1(p.X) + "," + f1(p.Y))
	}
	fmt.Fprintf(s.w, `" fill="%s" fill-opacity="%g" stroke="none"/>`, fill, opacity)
}

func (s *svgCanvas) text(x, y float64, t string, size float64, a anchor, color string, bold bool) {
	fmt.Fprintf(s.w, `<text x="%s" y="%s" font-size="%g" fill="%s"`, f1(x), f1(y), size, color)
	switch a {
	case anchorMiddle:
		s.w.WriteString(` text-anchor="middle"`)
	case anchorEnd:
		s.w.WriteString(` text-anchor="end"`)
	}
	if bold {
		s.w.WriteString(` font-weight="bold"`)
	}
	s.w.WriteString(">" + html.EscapeString(t) + "</text>")
}
