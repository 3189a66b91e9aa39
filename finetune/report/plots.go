package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/frognano/frognano/finetune/registry"
)

// The plots' size and resolution: wide enough for a page's column, sharp on a laptop's
// screen.
const (
	plotW, plotH = 7.5 * vg.Inch, 3.4 * vg.Inch
	plotDPI      = 110
)

// pixels is a length at plotDPI, as vgimg rounds it.
func pixels(l vg.Length) int { return int(math.Ceil(float64(l / vg.Inch * plotDPI))) }

// Colours, chosen to be told apart by colour-blind readers (Okabe–Ito).
var (
	blue   = color.RGBA{0, 114, 178, 255}
	orange = color.RGBA{230, 159, 0, 255}
	green  = color.RGBA{0, 158, 115, 255}
	red    = color.RGBA{213, 94, 0, 255}
	purple = color.RGBA{204, 121, 167, 255}
	grey   = color.RGBA{120, 120, 120, 255}
	sky    = color.RGBA{86, 180, 233, 255}
)

// figure is one plot of the page.
type figure struct {
	File, Title, Caption string
	make                 func(*Summary) (*plot.Plot, error)
}

// figures are the page's plots, in the page's order. Each is drawn only when its data
// exists (see has).
var figures = []figure{
	{"held-out.png", "Held-out pass rate per checkpoint",
		"Each model's pass rate on the held-out tasks (never trained on), pooled over its episodes, with its 95% Wilson score interval. Step 0 is the base model. Green: accepted by the gate; red: rejected; the ring marks the model in use. The interval treats episodes as independent, so it is narrower than the truth when tasks differ in difficulty; the gate itself compares the models task by task.",
		heldOutPlot},
	{"reward.png", "Reward and the band over iterations",
		"Mean reward of each iteration's training rollouts; groups varied: the share of its groups whose rewards differed (only those teach anything); in the band: the share of the training tasks rolled out so far whose estimated pass rate lies in the band after the iteration (the frontier replayed from the rollouts).",
		rewardPlot},
	{"tasks.png", "Task mix by synthesizer and difficulty",
		"Tasks made, by synthesizer and rung of the frontier's ladder (0 is the easiest: the file and function named, one small bug).",
		mixPlot},
	{"time.png", "Time per iteration",
		"Training is the trainer's wall clock (on the GPU when there is one); rollouts and gate are the episodes' wall clock summed (they run in parallel, so more than the time that passed); model is the part of both spent in Ollama.",
		timePlot},
}

// has says whether a figure has anything to draw.
func (f figure) has(s *Summary) bool {
	switch f.File {
	case "held-out.png":
		return slices.ContainsFunc(s.Checkpoints, func(c Checkpoint) bool { return c.HeldOut != nil })
	case "tasks.png":
		return len(s.Mix) > 0
	default:
		return len(s.Series) > 0
	}
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	// Sans serif, as the page around the plots; the title a little larger.
	for _, st := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		st.Font.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	p.Add(plotter.NewGrid())
	return p
}

// encode draws p as a PNG, its legend in a column to the right of the data, where it never
// hides a point (a legend inside the data area would, wherever the data happen to go).
func encode(p *plot.Plot) ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(plotW, plotH), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(c)
	legend := p.Legend
	p.Legend = plot.NewLegend()
	const pad = 10
	lw := legend.Rectangle(dc).Size().X + 2*vg.Points(pad)
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	legend.Top, legend.Left = true, true
	legend.Draw(draw.Crop(dc, plotW-lw+vg.Points(pad), 0, 0, -vg.Points(40)))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// integerTicks labels whole numbers only: iterations and steps.
type integerTicks struct{}

func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	step := max(1, int((hi-lo)/12)+1)
	for i := int(lo); float64(i) <= hi; i++ {
		if float64(i) < lo {
			continue
		}
		t := plot.Tick{Value: float64(i)}
		if i%step == 0 {
			t.Label = fmt.Sprint(i)
		}
		ts = append(ts, t)
	}
	return ts
}

type errXYs struct {
	plotter.XYs
	plotter.YErrors
}

func heldOutPlot(s *Summary) (*plot.Plot, error) {
	p := newPlot("Held-out pass rate per checkpoint (95% Wilson interval)", "checkpoint (training step; 0 is the base)", "pass rate")
	groups := []struct {
		name string
		c    color.Color
		ok   func(Checkpoint) bool
	}{
		{"base", grey, func(c Checkpoint) bool { return c.Step == 0 }},
		{"accepted", green, func(c Checkpoint) bool { return c.Step > 0 && accepted(c) }},
		{"rejected", red, func(c Checkpoint) bool { return c.Step > 0 && !accepted(c) }},
	}
	var inUse plotter.XYs
	for _, g := range groups {
		var d errXYs
		for _, c := range s.Checkpoints {
			if c.HeldOut == nil || !g.ok(c) {
				continue
			}
			d.XYs = append(d.XYs, plotter.XY{X: float64(c.Step), Y: c.HeldOut.Rate})
			d.YErrors = append(d.YErrors, struct{ Low, High float64 }{c.HeldOut.Rate - c.HeldOut.Low, c.HeldOut.High - c.HeldOut.Rate})
			if c.InUse {
				inUse = append(inUse, plotter.XY{X: float64(c.Step), Y: c.HeldOut.Rate})
			}
		}
		if len(d.XYs) == 0 {
			continue
		}
		bars, err := plotter.NewYErrorBars(d)
		if err != nil {
			return nil, err
		}
		bars.Color, bars.Width, bars.CapWidth = g.c, vg.Points(1.5), vg.Points(6)
		pts, err := plotter.NewScatter(d.XYs)
		if err != nil {
			return nil, err
		}
		pts.Color, pts.Shape, pts.Radius = g.c, draw.CircleGlyph{}, vg.Points(4)
		p.Add(bars, pts)
		p.Legend.Add(g.name, pts)
	}
	if len(inUse) > 0 {
		ring, err := plotter.NewScatter(inUse)
		if err != nil {
			return nil, err
		}
		ring.Color, ring.Shape, ring.Radius = blue, draw.RingGlyph{}, vg.Points(8)
		p.Add(ring)
		p.Legend.Add("in use", ring)
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.X.Tick.Marker = integerTicks{}
	p.X.Min, p.X.Max = p.X.Min-0.5, p.X.Max+0.5
	return p, nil
}

// accepted says whether the gate let the checkpoint through (it may have been rolled back
// since).
func accepted(c Checkpoint) bool {
	if c.Verdict != nil {
		return c.Verdict.Accept
	}
	return strings.HasPrefix(c.Status, string(registry.Accepted)) || strings.HasPrefix(c.Status, string(registry.RolledBack))
}

func line(p *plot.Plot, name string, c color.Color, dashed bool, xys plotter.XYs) error {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, l.Width = c, vg.Points(2)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	pts.Color, pts.Shape, pts.Radius = c, draw.CircleGlyph{}, vg.Points(2.5)
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

func rewardPlot(s *Summary) (*plot.Plot, error) {
	p := newPlot("Reward and the band over iterations", "iteration", "share")
	var reward, varied, band plotter.XYs
	for _, pt := range s.Series {
		x := float64(pt.Iteration)
		reward = append(reward, plotter.XY{X: x, Y: pt.MeanReward})
		if pt.Groups > 0 {
			varied = append(varied, plotter.XY{X: x, Y: float64(pt.Varied) / float64(pt.Groups)})
		}
		if pt.Seen > 0 {
			band = append(band, plotter.XY{X: x, Y: float64(pt.InBand) / float64(pt.Seen)})
		}
	}
	if err := line(p, "mean reward", blue, false, reward); err != nil {
		return nil, err
	}
	if len(varied) > 0 {
		if err := line(p, "groups varied", orange, true, varied); err != nil {
			return nil, err
		}
	}
	if len(band) > 0 {
		if err := line(p, fmt.Sprintf("in the band %.1f–%.1f", s.BandLow, s.BandHigh), green, false, band); err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.X.Tick.Marker = integerTicks{}
	return p, nil
}

func mixPlot(s *Summary) (*plot.Plot, error) {
	p := newPlot("Tasks by synthesizer and rung", "rung of the ladder (harder →)", "tasks")
	var synths []string
	top := 0
	for _, m := range s.Mix {
		if !slices.Contains(synths, m.Synthesizer) {
			synths = append(synths, m.Synthesizer)
		}
		top = max(top, m.Rung)
	}
	palette := []color.Color{blue, orange, green, purple, sky, red, grey}
	w := barWidth(top+1, len(synths))
	for i, name := range synths {
		vals := make(plotter.Values, top+1)
		for _, m := range s.Mix {
			if m.Synthesizer == name {
				vals[m.Rung] = float64(m.Tasks)
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color, b.LineStyle.Width = palette[i%len(palette)], 0
		b.Offset = w * vg.Length(float64(i)-float64(len(synths)-1)/2)
		p.Add(b)
		p.Legend.Add(name, b)
	}
	var names []string
	for r := 0; r <= top; r++ {
		names = append(names, fmt.Sprint(r))
	}
	p.NominalX(names...)
	p.Y.Min = 0
	p.Y.Max *= 1.08 // room above the tallest bar
	return p, nil
}

// barWidth fits per bars side by side in each of n categories, with a gap between
// categories (the data area is about the plot's width less the axis and the legend).
func barWidth(n, per int) vg.Length {
	area := plotW - 2.6*vg.Inch
	return min(vg.Points(40), area*0.75/vg.Length(max(n, 1)*max(per, 1)))
}

func timePlot(s *Summary) (*plot.Plot, error) {
	p := newPlot("Time per iteration", "iteration", "minutes")
	n := len(s.Series)
	train, roll, gate, model := make(plotter.Values, n), make(plotter.Values, n), make(plotter.Values, n), make(plotter.XYs, n)
	var names []string
	for i, pt := range s.Series {
		train[i], roll[i], gate[i] = pt.Time.Train/60, pt.Time.Rollouts/60, pt.Time.Gate/60
		model[i] = plotter.XY{X: float64(i), Y: pt.Time.Model / 60}
		names = append(names, fmt.Sprint(pt.Iteration))
	}
	w := barWidth(n, 1)
	var below *plotter.BarChart
	for _, b := range []struct {
		name string
		v    plotter.Values
		c    color.Color
	}{{"training", train, red}, {"rollouts", roll, blue}, {"gate", gate, sky}} {
		bc, err := plotter.NewBarChart(b.v, w)
		if err != nil {
			return nil, err
		}
		bc.Color, bc.LineStyle.Width = b.c, 0
		if below != nil {
			bc.StackOn(below)
		}
		below = bc
		p.Add(bc)
		p.Legend.Add(b.name, bc)
	}
	if err := line(p, "of which in Ollama", orange, true, model); err != nil {
		return nil, err
	}
	p.NominalX(names...)
	p.Y.Min = 0
	p.Legend.Left = true
	return p, nil
}
