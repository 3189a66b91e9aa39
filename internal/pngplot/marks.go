package pngplot

import (
	"image"
	"image/color"
	"math"
)

// Mark is something drawn in the data area, in data coordinates, and its sample in the
// legend. Lengths (widths, radii) are display pixels.
type Mark interface {
	draw(c *canvas, im *Image)
	swatch(c *canvas, r image.Rectangle)
}

// Line joins Points in order with a line Width wide, dashed when Dashed, with a dot of
// radius Dot at each point (none when Dot is 0).
type Line struct {
	Points []XY
	Color  color.RGBA
	Width  float64
	Dashed bool
	Dot    float64
}

// The dashes' pattern, in display pixels.
const dashOn, dashOff = 8, 5

func (l Line) draw(c *canvas, im *Image) {
	pts := make([][2]float64, len(l.Points))
	for i, p := range l.Points {
		pts[i] = [2]float64{im.px(p.X), im.py(p.Y)}
	}
	l.stroke(c, pts)
}

func (l Line) stroke(c *canvas, pts [][2]float64) {
	on, off := 0.0, 0.0
	if l.Dashed {
		// Each dash's round ends reach half the width past it: the pattern seen is dashOn,
		// dashOff.
		on, off = max(1, dashOn*Scale-l.Width*Scale), dashOff*Scale+l.Width*Scale
	}
	if l.Width > 0 {
		c.polyline(pts, l.Width*Scale, on, off, l.Color)
	}
	if l.Dot > 0 {
		for _, p := range pts {
			c.disc(p[0], p[1], l.Dot*Scale, l.Color)
		}
	}
}

// swatch is a short line with one dot in its middle.
func (l Line) swatch(c *canvas, r image.Rectangle) {
	y := float64(r.Min.Y+r.Max.Y) / 2
	dot := l.Dot
	l.Dot = 0
	l.stroke(c, [][2]float64{{float64(r.Min.X), y}, {float64(r.Max.X), y}})
	if dot > 0 {
		c.disc(float64(r.Min.X+r.Max.X)/2, y, dot*Scale, l.Color)
	}
}

// Points draws a dot of Radius at each point, or a ring (a circle 1.5 wide) when Ring.
type Points struct {
	Points []XY
	Color  color.RGBA
	Radius float64
	Ring   bool
}

const ringWidth = 1.5

func (p Points) draw(c *canvas, im *Image) {
	for _, pt := range p.Points {
		p.at(c, im.px(pt.X), im.py(pt.Y), p.Radius*Scale)
	}
}

func (p Points) at(c *canvas, x, y, r float64) {
	if p.Ring {
		c.ring(x, y, r, ringWidth*Scale, p.Color)
	} else {
		c.disc(x, y, r, p.Color)
	}
}

func (p Points) swatch(c *canvas, r image.Rectangle) {
	// A ring larger than a row of the legend is shown as large as the row allows.
	rad := math.Min(p.Radius*Scale, float64(r.Dy())/2-ringWidth*Scale)
	p.at(c, float64(r.Min.X+r.Max.X)/2, float64(r.Min.Y+r.Max.Y)/2, rad)
}

// Interval is a vertical range at X.
type Interval struct{ X, Low, High float64 }

// ErrorBars draws each interval as a vertical line Width wide from Low to High, with a
// horizontal cap Cap wide at both ends.
type ErrorBars struct {
	Intervals []Interval
	Color     color.RGBA
	Width     float64
	Cap       float64
}

func (e ErrorBars) draw(c *canvas, im *Image) {
	for _, iv := range e.Intervals {
		e.bar(c, im.px(iv.X), im.py(iv.Low), im.py(iv.High))
	}
}

// bar draws one interval, square-ended so that its ends are where the data say.
func (e ErrorBars) bar(c *canvas, x, ylo, yhi float64) {
	w, cw := e.Width*Scale, e.Cap*Scale
	c.fill(rect(x-w/2, yhi, x+w/2, ylo), e.Color)
	c.fill(rect(x-cw/2, yhi-w/2, x+cw/2, yhi+w/2), e.Color)
	c.fill(rect(x-cw/2, ylo-w/2, x+cw/2, ylo+w/2), e.Color)
}

func (e ErrorBars) swatch(c *canvas, r image.Rectangle) {
	e.bar(c, float64(r.Min.X+r.Max.X)/2, float64(r.Max.Y-Scale), float64(r.Min.Y+Scale))
}

// Rect fills the rectangle between X0 and X1 and Y0 and Y1 in data coordinates: a bar, or
// a band across the plot.
type Rect struct {
	X0, X1, Y0, Y1 float64
	Color          color.RGBA
}

func (b Rect) draw(c *canvas, im *Image) {
	c.fill(rect(im.px(b.X0), im.py(b.Y1), im.px(b.X1), im.py(b.Y0)), b.Color)
}

func (b Rect) swatch(c *canvas, r image.Rectangle) {
	c.fill(image.Rect(r.Min.X+r.Dx()/4, r.Min.Y, r.Max.X-r.Dx()/4, r.Max.Y), b.Color)
}

// rect is the pixels from (x0, y0) to (x1, y1), rounded to the nearest pixel edges.
func rect(x0, y0, x1, y1 float64) image.Rectangle {
	return image.Rect(int(math.Round(x0)), int(math.Round(y0)), int(math.Round(x1)), int(math.Round(y1)))
}
