// Package pngplot draws the charts of `frognano finetune report` as PNG images: axes with
// ticks and a light grid, a title and axis labels, lines with dots, points and rings, error
// bars, filled rectangles (bars, bands) and a legend to the right of the data. Start at
// [New]; add marks with [Plot.Add] and legend entries with [Plot.Legend]; [Plot.PNG] encodes
// it and [Plot.Draw] gives the image with the mapping from data to pixels (for tests).
//
// It uses only the standard library's image packages and x/image's 7×13 bitmap face, whose
// glyphs are static data: nothing is parsed or allocated when frognano starts. It replaced
// gonum.org/v1/plot, whose PDF, SVG and LaTeX backends and fonts made the binary that
// editors start for every session 8 MB larger, its package initialisation about 1 ms longer
// and an idle language server hold 2 MB more (cmd/frognano's deps test keeps them out).
package pngplot

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
)

// Scale is how many image pixels make one display pixel. Sizes in this package are display
// pixels; the image is drawn Scale times larger, so that the bitmap face is sharp on a
// high-density screen and evenly smoothed when a browser halves it on another.
const Scale = 2

// XY is a point in data coordinates.
type XY struct{ X, Y float64 }

// Tick is a mark on an axis; one with an empty Label is a short mark only.
type Tick struct {
	Value float64
	Label string
}

// Axis is the range shown along one direction and its ticks.
type Axis struct {
	Label    string
	Min, Max float64
	Ticks    []Tick
	// Grid draws a light line across the data area at each labelled tick.
	Grid bool
}

// Plot is one chart. Its axes' ranges and ticks are the caller's to set (see NiceTicks and
// IntegerTicks): the report knows which ranges mean something (a rate is 0 to 1).
type Plot struct {
	Title string
	X, Y  Axis
	// Width and Height are the size in display pixels.
	Width, Height int
	marks         []Mark
	legend        []entry
}

type entry struct {
	label string
	mark  Mark
}

// New is an empty plot of width×height display pixels.
func New(title string, width, height int) *Plot {
	return &Plot{Title: title, Width: width, Height: height}
}

// Add draws marks over those added before.
func (p *Plot) Add(marks ...Mark) { p.marks = append(p.marks, marks...) }

// Legend adds a row to the legend: label beside a small sample of m.
func (p *Plot) Legend(label string, m Mark) { p.legend = append(p.legend, entry{label, m}) }

// PNG draws p and encodes it.
func (p *Plot) PNG() ([]byte, error) {
	var b bytes.Buffer
	if err := png.Encode(&b, p.Draw()); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Image is a drawn plot, with its data area and the mapping from data to pixels.
type Image struct {
	*image.RGBA
	// Area is the data area, in image pixels.
	Area image.Rectangle
	x, y Axis
}

// Point is the pixel where the data point (x, y) is drawn.
func (im *Image) Point(x, y float64) image.Point {
	return image.Pt(int(math.Floor(im.px(x))), int(math.Floor(im.py(y))))
}

func (im *Image) px(x float64) float64 {
	return float64(im.Area.Min.X) + (x-im.x.Min)/(im.x.Max-im.x.Min)*float64(im.Area.Dx())
}

func (im *Image) py(y float64) float64 {
	return float64(im.Area.Max.Y) - (y-im.y.Min)/(im.y.Max-im.y.Min)*float64(im.Area.Dy())
}

// Layout, in display pixels.
const (
	pad     = 8
	tickLen = 4
	gap     = 4
	swatchW = 26
	// gridW is the grid's width in image pixels: half a display pixel, light beside the data.
	gridW = max(1, Scale/2)
)

// textK is the text's size, in image pixels per pixel of the 7×13 face: one and a half
// display pixels, 10×20 a character, as large as the page's own small text. The title is
// the same size in bold: the page gives each plot a heading already.
const textK = Scale * 3 / 2

var (
	white     = color.RGBA{255, 255, 255, 255}
	ink       = color.RGBA{29, 35, 39, 255}
	axisColor = color.RGBA{80, 80, 80, 255}
	gridColor = color.RGBA{221, 221, 221, 255}
)

// Draw renders p. The data area is what is left of the image once the title, the axes'
// labels and the legend have their room; a range with Min >= Max is widened to one unit so
// that a single value still has a place.
func (p *Plot) Draw() *Image {
	const S = Scale
	c := newCanvas(p.Width*S, p.Height*S)
	im := &Image{RGBA: c.RGBA, x: p.X, y: p.Y}
	for _, a := range []*Axis{&im.x, &im.y} {
		if !(a.Max > a.Min) {
			a.Min, a.Max = a.Min-0.5, a.Min+0.5
		}
	}
	lineH := textH * textK
	yw := 0
	for _, t := range p.Y.Ticks {
		yw = max(yw, textWidth(t.Label)*textK)
	}
	lw := 0
	for _, e := range p.legend {
		lw = max(lw, swatchW*S+gap*S+textWidth(e.label)*textK)
	}
	left := pad*S + lineH + 2*gap*S + yw + tickLen*S
	right := pad * S
	if lw > 0 {
		right += lw + 2*pad*S
	}
	tk := textK
	top := pad*S + textH*tk + 2*pad*S
	bottom := (tickLen+gap)*S + lineH + 2*gap*S + lineH + pad*S
	im.Area = image.Rect(left, top, p.Width*S-right, p.Height*S-bottom)
	a := im.Area

	for _, t := range p.X.Ticks {
		if x := int(im.px(t.Value)); p.X.Grid && t.Label != "" && x > a.Min.X && x < a.Max.X {
			c.fill(image.Rect(x, a.Min.Y, x+gridW, a.Max.Y), gridColor)
		}
	}
	for _, t := range p.Y.Ticks {
		if y := int(im.py(t.Value)); p.Y.Grid && t.Label != "" && y > a.Min.Y && y < a.Max.Y {
			c.fill(image.Rect(a.Min.X, y, a.Max.X, y+gridW), gridColor)
		}
	}
	for _, m := range p.marks {
		m.draw(c, im)
	}

	// The axes: a line along the left and the bottom of the data area, the ticks outside it.
	c.fill(image.Rect(a.Min.X-S, a.Min.Y, a.Min.X, a.Max.Y+S), axisColor)
	c.fill(image.Rect(a.Min.X-S, a.Max.Y, a.Max.X, a.Max.Y+S), axisColor)
	for _, t := range p.X.Ticks {
		x := int(im.px(t.Value))
		if x < a.Min.X-1 || x > a.Max.X+1 {
			continue
		}
		l := tickLen * S
		if t.Label == "" {
			l /= 2
		}
		c.fill(image.Rect(x-S/2, a.Max.Y+S, x-S/2+S, a.Max.Y+S+l), axisColor)
		c.text(t.Label, x, a.Max.Y+(tickLen+gap)*S, textK, center, ink)
	}
	for _, t := range p.Y.Ticks {
		y := int(im.py(t.Value))
		if y < a.Min.Y-1 || y > a.Max.Y+1 {
			continue
		}
		l := tickLen * S
		if t.Label == "" {
			l /= 2
		}
		c.fill(image.Rect(a.Min.X-S-l, y-S/2, a.Min.X-S, y-S/2+S), axisColor)
		c.text(t.Label, a.Min.X-(tickLen+gap)*S, y-lineH/2, textK, alignRight, ink)
	}
	c.text(p.X.Label, (a.Min.X+a.Max.X)/2, a.Max.Y+(tickLen+gap)*S+lineH+2*gap*S, textK, center, ink)
	c.textUp(p.Y.Label, pad*S, (a.Min.Y+a.Max.Y)/2, textK, ink)
	// The title in faux bold: its glyphs drawn twice, one image pixel apart. Centred on the
	// data unless that would push it off the image.
	tx := (a.Min.X + a.Max.X) / 2
	tx = min(max(tx, pad*S+textWidth(p.Title)*tk/2), p.Width*S-pad*S-textWidth(p.Title)*tk/2)
	c.text(p.Title, tx, pad*S, tk, center, ink)
	c.text(p.Title, tx+1, pad*S, tk, center, ink)

	// The legend, in a column right of the data, where it never hides a point.
	x0, y := a.Max.X+2*pad*S, a.Min.Y
	for _, e := range p.legend {
		sw := image.Rect(x0, y, x0+swatchW*S, y+lineH)
		e.mark.swatch(c, sw)
		c.text(e.label, sw.Max.X+gap*S, y, textK, alignLeft, ink)
		y += lineH + 4*S
	}
	return im
}
