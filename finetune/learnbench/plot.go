package learnbench

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sort"
)

// PNG draws the curve: the pooled held-out pass rate by checkpoint with its 95% interval
// (black, joined), each seed's rate (coloured dots to its right), and the training
// rollouts' pooled pass rate with its interval (grey squares to its left; see Result.Train), on a 0–100%
// axis. It is drawn with the
// standard library only (a 3×5 pixel font for the tick labels); the README's caption names
// the axes.
func (r *Result) PNG() ([]byte, error) {
	const w, h, left, right, top, bottom = 640, 360, 48, 16, 16, 40
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill(img, img.Rect, color.White)
	n := max(r.Options.Iterations, 1)
	x := func(it int) int { return left + it*(w-left-right)/n }
	y := func(rate float64) int { return top + int((1-rate)*float64(h-top-bottom)) }
	grey, black := color.RGBA{220, 220, 220, 255}, color.Black
	for _, t := range []float64{0, .25, .5, .75, 1} {
		line(img, left, y(t), w-right, y(t), grey)
		text(img, 4, y(t)-2, fmt.Sprintf("%3.0f%%", t*100), black)
	}
	for it := 0; it <= n; it++ {
		line(img, x(it), top, x(it), h-bottom, grey)
		text(img, x(it)-2, h-bottom+8, fmt.Sprint(it), black)
	}
	line(img, left, top, left, h-bottom, black)
	line(img, left, h-bottom, w-right, h-bottom, black)
	palette := []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}}
	// the training rollouts' pass rate, grey and a little to the left
	lightGrey := color.RGBA{150, 150, 150, 255}
	for _, p := range r.Train {
		xx := x(p.Iteration) - 8
		line(img, xx, y(p.Low), xx, y(p.High), lightGrey)
		fill(img, image.Rect(xx-3, y(p.Rate)-3, xx+4, y(p.Rate)+4), lightGrey)
	}
	var prev *Point
	for i := range r.Curve {
		p := &r.Curve[i]
		seeds := make([]int, 0, len(p.BySeed))
		for s := range p.BySeed {
			seeds = append(seeds, s)
		}
		sort.Ints(seeds)
		for j, s := range seeds {
			dot(img, x(p.Iteration)+6+3*j, y(p.BySeed[s]), 2, palette[(s-1+len(palette))%len(palette)])
		}
		line(img, x(p.Iteration), y(p.Low), x(p.Iteration), y(p.High), black)
		line(img, x(p.Iteration)-4, y(p.Low), x(p.Iteration)+4, y(p.Low), black)
		line(img, x(p.Iteration)-4, y(p.High), x(p.Iteration)+4, y(p.High), black)
		dot(img, x(p.Iteration), y(p.Rate), 3, black)
		if prev != nil {
			line(img, x(prev.Iteration), y(prev.Rate), x(p.Iteration), y(p.Rate), black)
		}
		prev = p
	}
	var b bytes.Buffer
	err := png.Encode(&b, img)
	return b.Bytes(), err
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	for yy := r.Min.Y; yy < r.Max.Y; yy++ {
		for xx := r.Min.X; xx < r.Max.X; xx++ {
			img.Set(xx, yy, c)
		}
	}
}

// line draws a straight line (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.Set(x0, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		if 2*e >= dy {
			e += dy
			x0 += sx
		}
		if 2*e <= dx {
			e += dx
			y0 += sy
		}
	}
}

func dot(img *image.RGBA, cx, cy, r int, c color.Color) {
	for yy := -r; yy <= r; yy++ {
		for xx := -r; xx <= r; xx++ {
			if xx*xx+yy*yy <= r*r {
				img.Set(cx+xx, cy+yy, c)
			}
		}
	}
}

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// glyphs are 3×5 pixel digits and the few signs the tick labels use, one row per string.
var glyphs = map[rune][5]string{
	'0': {"###", "#.#", "#.#", "#.#", "###"}, '1': {".#.", "##.", ".#.", ".#.", "###"},
	'2': {"###", "..#", "###", "#..", "###"}, '3': {"###", "..#", "###", "..#", "###"},
	'4': {"#.#", "#.#", "###", "..#", "..#"}, '5': {"###", "#..", "###", "..#", "###"},
	'6': {"###", "#..", "###", "#.#", "###"}, '7': {"###", "..#", "..#", "..#", "..#"},
	'8': {"###", "#.#", "###", "#.#", "###"}, '9': {"###", "#.#", "###", "..#", "###"},
	'%': {"#.#", "..#", ".#.", "#..", "#.#"}, ' ': {"...", "...", "...", "...", "..."},
}

// text draws s with glyphs at twice their size.
func text(img *image.RGBA, x0, y0 int, s string, c color.Color) {
	for _, ch := range s {
		g := glyphs[ch]
		for row, bits := range g {
			for col, b := range bits {
				if b == '#' {
					fill(img, image.Rect(x0+2*col, y0+2*row-4, x0+2*col+2, y0+2*row-2), c)
				}
			}
		}
		x0 += 8
	}
}
