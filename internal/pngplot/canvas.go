package pngplot

import (
	"image"
	"image/color"
	"image/draw"
	"math"

	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// canvas draws in image pixels. Shapes are antialiased by their coverage of each pixel
// (the distance from its centre to the shape's edge), which is enough for discs, rings and
// round-capped lines and needs no rasterizer.
type canvas struct{ *image.RGBA }

func newCanvas(w, h int) *canvas {
	c := &canvas{image.NewRGBA(image.Rect(0, 0, w, h))}
	draw.Draw(c.RGBA, c.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	return c
}

func (c *canvas) fill(r image.Rectangle, col color.RGBA) {
	draw.Draw(c.RGBA, r, image.NewUniform(col), image.Point{}, draw.Src)
}

// blend lays col over the pixel at x, y with opacity a in [0, 1].
func (c *canvas) blend(x, y int, col color.RGBA, a float64) {
	if a <= 0 || !(image.Point{x, y}).In(c.Rect) {
		return
	}
	if a >= 1 {
		c.SetRGBA(x, y, col)
		return
	}
	o := c.RGBAAt(x, y)
	mix := func(f, b uint8) uint8 { return uint8(math.Round(float64(f)*a + float64(b)*(1-a))) }
	c.SetRGBA(x, y, color.RGBA{mix(col.R, o.R), mix(col.G, o.G), mix(col.B, o.B), 255})
}

// cover paints col over the pixels of the box (x0, y0)–(x1, y1), each with the opacity
// that dist (from the pixel's centre to the shape's edge, negative inside) gives it.
func (c *canvas) cover(x0, y0, x1, y1 float64, col color.RGBA, dist func(x, y float64) float64) {
	for y := int(math.Floor(y0)) - 1; y <= int(math.Ceil(y1))+1; y++ {
		for x := int(math.Floor(x0)) - 1; x <= int(math.Ceil(x1))+1; x++ {
			c.blend(x, y, col, math.Min(1, 0.5-dist(float64(x)+0.5, float64(y)+0.5)))
		}
	}
}

// disc fills the circle of radius r around (x, y).
func (c *canvas) disc(x, y, r float64, col color.RGBA) {
	c.cover(x-r, y-r, x+r, y+r, col, func(px, py float64) float64 { return math.Hypot(px-x, py-y) - r })
}

// ring draws the circle of radius r around (x, y) with a line w wide.
func (c *canvas) ring(x, y, r, w float64, col color.RGBA) {
	c.cover(x-r-w, y-r-w, x+r+w, y+r+w, col, func(px, py float64) float64 {
		return math.Abs(math.Hypot(px-x, py-y)-r) - w/2
	})
}

// segment draws a line w wide from (x0, y0) to (x1, y1), with round ends.
func (c *canvas) segment(x0, y0, x1, y1, w float64, col color.RGBA) {
	dx, dy := x1-x0, y1-y0
	l2 := dx*dx + dy*dy
	c.cover(math.Min(x0, x1)-w, math.Min(y0, y1)-w, math.Max(x0, x1)+w, math.Max(y0, y1)+w, col, func(px, py float64) float64 {
		t := 0.0
		if l2 > 0 {
			t = math.Max(0, math.Min(1, ((px-x0)*dx+(py-y0)*dy)/l2))
		}
		return math.Hypot(px-x0-t*dx, py-y0-t*dy) - w/2
	})
}

// polyline joins pts with a line w wide; dashed, it is drawn on for dash and off for gap
// along its length, the pattern carried across the corners.
func (c *canvas) polyline(pts [][2]float64, w float64, dash, gap float64, col color.RGBA) {
	at := 0.0 // the distance along the line where the segment starts
	for i := 1; i < len(pts); i++ {
		x0, y0, x1, y1 := pts[i-1][0], pts[i-1][1], pts[i][0], pts[i][1]
		l := math.Hypot(x1-x0, y1-y0)
		if dash <= 0 || l == 0 {
			c.segment(x0, y0, x1, y1, w, col)
			at += l
			continue
		}
		period := dash + gap
		for s := -math.Mod(at, period); s < l; s += period {
			a, b := math.Max(0, s), math.Min(l, s+dash)
			if b > a {
				c.segment(x0+(x1-x0)*a/l, y0+(y1-y0)*a/l, x0+(x1-x0)*b/l, y0+(y1-y0)*b/l, w, col)
			}
		}
		at += l
	}
}

// The text face: X11's 7×13 fixed font, ASCII only, drawn k image pixels per font pixel.
var face = basicfont.Face7x13

// textH is a line of text's height in display pixels.
const textH = 13

type align int

const (
	alignLeft align = iota
	center
	alignRight
)

// ascii spells the few other characters the report's labels hold with the face's ASCII.
func ascii(s string) []rune {
	var rs []rune
	for _, r := range s {
		switch r {
		case '–', '—', '−':
			rs = append(rs, '-')
		case '→':
			rs = append(rs, '-', '>')
		case '≤':
			rs = append(rs, '<', '=')
		default:
			rs = append(rs, r)
		}
	}
	return rs
}

// textWidth is s's width in display pixels.
func textWidth(s string) int { return len(ascii(s)) * face.Advance }

// glyphs calls on for each lit font pixel of s, at (x, y) from the top left of its line.
func glyphs(s string, on func(x, y int)) {
	for i, r := range ascii(s) {
		_, mask, mp, _, _ := face.Glyph(fixed.Point26_6{}, r)
		if mask == nil {
			continue
		}
		m := mask.(*image.Alpha)
		for y := 0; y < face.Ascent+face.Descent; y++ {
			for x := 0; x < face.Width; x++ {
				if m.AlphaAt(mp.X+x, mp.Y+y).A >= 0x80 {
					on(i*face.Advance+x, y)
				}
			}
		}
	}
}

// text draws s with its top at y, its left, centre or right at x, k image pixels per font
// pixel.
func (c *canvas) text(s string, x, y, k int, al align, col color.RGBA) {
	switch al {
	case center:
		x -= textWidth(s) * k / 2
	case alignRight:
		x -= textWidth(s) * k
	}
	glyphs(s, func(gx, gy int) { c.fill(image.Rect(x+gx*k, y+gy*k, x+(gx+1)*k, y+(gy+1)*k), col) })
}

// textUp draws s turned a quarter left (read from the bottom up), its top at x and its
// centre at y.
func (c *canvas) textUp(s string, x, y, k int, col color.RGBA) {
	y += textWidth(s) * k / 2
	glyphs(s, func(gx, gy int) { c.fill(image.Rect(x+gy*k, y-(gx+1)*k, x+(gy+1)*k, y-gx*k), col) })
}
