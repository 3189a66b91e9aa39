package pngplot

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"reflect"
	"testing"
)

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi   float64
		n        int
		tlo, thi float64
		labels   []string
	}{
		{0, 1, 6, 0, 1, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{0, 10.5, 6, 0, 12, []string{"0", "2", "4", "6", "8", "10", "12"}},
		{0, 186, 6, 0, 200, []string{"0", "50", "100", "150", "200"}},
		{0.013, 0.049, 5, 0.01, 0.05, []string{"0.01", "0.02", "0.03", "0.04", "0.05"}},
		{-3, 3, 4, -4, 4, []string{"-4", "-2", "0", "2", "4"}},
		// No range: one unit around the value, so a single point still has a place.
		{5, 5, 3, 5, 6, []string{"5.0", "5.5", "6.0"}},
	} {
		tlo, thi, ticks := NiceTicks(c.lo, c.hi, c.n)
		var labels []string
		for _, tk := range ticks {
			labels = append(labels, tk.Label)
		}
		if tlo != c.tlo || thi != c.thi || !reflect.DeepEqual(labels, c.labels) {
			t.Errorf("NiceTicks(%v, %v, %d) = %v, %v, %v; want %v, %v, %v", c.lo, c.hi, c.n, tlo, thi, labels, c.tlo, c.thi, c.labels)
		}
	}
	// Values are the labels' numbers exactly, not sums that drifted.
	_, _, ticks := NiceTicks(0, 1, 6)
	if want := []float64{0, 0.2, 0.4, 0.6, 0.8, 1}; !reflect.DeepEqual(values(ticks), want) {
		t.Errorf("values %v, want %v", values(ticks), want)
	}
}

func values(ts []Tick) []float64 {
	var v []float64
	for _, t := range ts {
		v = append(v, t.Value)
	}
	return v
}

func TestIntegerTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []Tick
	}{
		{0.75, 3.25, []Tick{{1, "1"}, {2, "2"}, {3, "3"}}},
		{-0.5, 2.5, []Tick{{0, "0"}, {1, "1"}, {2, "2"}}},
		// 15 numbers: every second labelled, all marked.
		{1, 15, []Tick{{1, ""}, {2, "2"}, {3, ""}, {4, "4"}, {5, ""}, {6, "6"}, {7, ""}, {8, "8"},
			{9, ""}, {10, "10"}, {11, ""}, {12, "12"}, {13, ""}, {14, "14"}, {15, ""}}},
		// 300 numbers: labels every 50, and only they are marked.
		{0, 300, []Tick{{0, "0"}, {50, "50"}, {100, "100"}, {150, "150"}, {200, "200"}, {250, "250"}, {300, "300"}}},
	} {
		if got := IntegerTicks(c.lo, c.hi); !reflect.DeepEqual(got, c.want) {
			t.Errorf("IntegerTicks(%v, %v) = %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

var (
	blue   = color.RGBA{0, 114, 178, 255}
	orange = color.RGBA{230, 159, 0, 255}
	green  = color.RGBA{0, 158, 115, 255}
	pale   = color.RGBA{230, 240, 250, 255}
)

func testPlot() *Plot {
	p := New("A title", 400, 240)
	p.X.Label, p.Y.Label = "x", "y"
	p.X.Min, p.X.Max, p.X.Ticks = 0, 4, IntegerTicks(0, 4)
	p.Y.Min, p.Y.Max, p.Y.Ticks = NiceTicks(0, 1, 6)
	p.X.Grid, p.Y.Grid = true, true
	band := Rect{X0: 0, X1: 4, Y0: 0.3, Y1: 0.8, Color: pale}
	bar := Rect{X0: 2.8, X1: 3.2, Y0: 0, Y1: 0.5, Color: orange}
	line := Line{Points: []XY{{1, 0.1}, {3, 0.9}}, Color: blue, Width: 2, Dot: 3}
	errs := ErrorBars{Intervals: []Interval{{X: 3.6, Low: 0.4, High: 0.7}}, Color: green, Width: 2, Cap: 8}
	p.Add(band, bar, line, errs)
	p.Legend("line", line)
	p.Legend("bar", bar)
	return p
}

func rgba(im *Image, pt image.Point) color.RGBA { return im.RGBAAt(pt.X, pt.Y) }

// TestDrawPixels: each mark is where its data put it, in its colour.
func TestDrawPixels(t *testing.T) {
	im := testPlot().Draw()
	if b := im.Bounds(); b.Dx() != 400*Scale || b.Dy() != 240*Scale {
		t.Fatalf("image %v, want %dx%d", b, 400*Scale, 240*Scale)
	}
	a := im.Area
	// The axes' ends are the area's corners.
	if p := im.Point(0, 0); p != image.Pt(a.Min.X, a.Max.Y) {
		t.Errorf("(0, 0) at %v, area %v", p, a)
	}
	if p := im.Point(4, 1); p != image.Pt(a.Max.X, a.Min.Y) {
		t.Errorf("(4, 1) at %v, area %v", p, a)
	}
	for _, c := range []struct {
		what string
		at   image.Point
		want color.RGBA
	}{
		{"the line's first point", im.Point(1, 0.1), blue},
		{"the line's last point", im.Point(3, 0.9), blue},
		{"the line's middle", im.Point(2, 0.5), blue},
		{"the band", im.Point(0.5, 0.5), pale},
		{"above the band", im.Point(0.5, 0.9).Add(image.Pt(3, 0)), white},
		{"below the band", im.Point(0.5, 0.25).Add(image.Pt(3, 0)), white},
		{"the bar", im.Point(3.1, 0.25), orange},
		{"the error bar's top", im.Point(3.6, 0.7), green},
		{"the error bar's bottom", im.Point(3.6, 0.4).Add(image.Pt(0, -1)), green},
		{"the error bar's cap, left", im.Point(3.6, 0.7).Add(image.Pt(-3*Scale, 0)), green},
		{"past the cap", im.Point(3.6, 0.7).Add(image.Pt(-6*Scale, 0)), pale},
		{"above the error bar", im.Point(3.6, 0.7).Add(image.Pt(0, -2*Scale)), pale},
		{"below the error bar", im.Point(3.6, 0.4).Add(image.Pt(0, 2*Scale)), pale},
		{"the x axis", image.Pt((a.Min.X+a.Max.X)/2, a.Max.Y), axisColor},
		{"the y axis", image.Pt(a.Min.X-1, (a.Min.Y+a.Max.Y)/2), axisColor},
		{"a grid line under the band", im.Point(0.5, 0.4), pale},
		{"a grid line below the band", im.Point(0.5, 0.2), gridColor},
		{"a grid line (x = 1, above the band)", im.Point(1, 0.9).Add(image.Pt(0, -1)), gridColor},
	} {
		if got := rgba(im, c.at); got != c.want {
			t.Errorf("%s at %v is %v, want %v", c.what, c.at, got, c.want)
		}
	}
	// The legend's swatches are right of the data area, in their marks' colours.
	counts := colours(im, image.Rect(a.Max.X, a.Min.Y, im.Bounds().Max.X, a.Max.Y))
	if counts[blue] == 0 || counts[orange] == 0 {
		t.Errorf("the legend's colours: %v", counts)
	}
	// The title is text: ink above the data area, and none where the line would be.
	if n := colours(im, image.Rect(0, 0, im.Bounds().Max.X, a.Min.Y))[ink]; n < 50 {
		t.Errorf("the title has %d pixels of ink", n)
	}
}

func colours(im *Image, r image.Rectangle) map[color.RGBA]int {
	m := map[color.RGBA]int{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			m[im.RGBAAt(x, y)]++
		}
	}
	return m
}

// TestDashed: a dashed line has gaps along it, a solid one none.
func TestDashed(t *testing.T) {
	for _, dashed := range []bool{false, true} {
		p := New("", 300, 150)
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
		p.Add(Line{Points: []XY{{0, 0.5}, {1, 0.5}}, Color: blue, Width: 2, Dashed: dashed})
		im := p.Draw()
		y := im.Point(0, 0.5).Y
		off := 0
		for x := im.Area.Min.X + 2; x < im.Area.Max.X-2; x++ {
			if im.RGBAAt(x, y) == white {
				off++
			}
		}
		// The pattern is 8 on, 5 off: about 5/13 of the line is gap.
		if share := float64(off) / float64(im.Area.Dx()); dashed && (share < 0.3 || share > 0.45) || !dashed && off != 0 {
			t.Errorf("dashed %v: %d of %d pixels white", dashed, off, im.Area.Dx())
		}
	}
}

// TestText: each glyph of the face draws, and the characters outside ASCII that the
// report's labels hold are spelled with ASCII rather than as the replacement box.
func TestText(t *testing.T) {
	if got := string(ascii("0.2–0.8 harder →")); got != "0.2-0.8 harder ->" {
		t.Errorf("ascii: %q", got)
	}
	if w := textWidth("abc"); w != 21 {
		t.Errorf("textWidth(abc) = %d", w)
	}
	lit := func(s string) int {
		n := 0
		glyphs(s, func(int, int) { n++ })
		return n
	}
	if lit(" ") != 0 || lit("i") == 0 || lit("W") <= lit("i") {
		t.Errorf("lit pixels: space %d, i %d, W %d", lit(" "), lit("i"), lit("W"))
	}
}

func TestPNG(t *testing.T) {
	b, err := testPlot().PNG()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	want := testPlot().Draw()
	x, y := want.Point(3, 0.9).X, want.Point(3, 0.9).Y
	if r, g, bl, _ := img.At(x, y).RGBA(); uint8(r>>8) != blue.R || uint8(g>>8) != blue.G || uint8(bl>>8) != blue.B {
		t.Errorf("decoded pixel at the line's end is %v", img.At(x, y))
	}
}
