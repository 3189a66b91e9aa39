package report

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/internal/pngplot"
)

// The plots' size in display pixels (the PNG has pngplot.Scale times as many): wide enough
// for a page's column.
const plotW, plotH = 825, 374

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
	make                 func(*Summary) *pngplot.Plot
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

func newPlot(title, x, y string) *pngplot.Plot {
	p := pngplot.New(title, plotW, plotH)
	p.X.Label, p.Y.Label = x, y
	p.X.Grid, p.Y.Grid = true, true
	return p
}

// rateAxis is a rate's axis: 0 to 1 whatever the data, so that plots compare.
func rateAxis(a *pngplot.Axis) { a.Min, a.Max, a.Ticks = pngplot.NiceTicks(0, 1, 6) }

// countAxis runs from 0 to a round number above top, with room above the tallest bar.
func countAxis(a *pngplot.Axis, top float64) {
	a.Min, a.Max, a.Ticks = pngplot.NiceTicks(0, top*1.05, 6)
}

// stepAxis is an axis of whole numbers (iterations, steps) from lo to hi, with room for a
// point's dot at either end.
func stepAxis(a *pngplot.Axis, lo, hi int, room float64) {
	a.Min, a.Max = float64(lo)-room, float64(hi)+room
	a.Ticks = pngplot.IntegerTicks(a.Min, a.Max)
}

// categoryAxis places names at 0, 1, … with half a category's room at either end, and no
// grid line through the bars.
func categoryAxis(a *pngplot.Axis, names []string) {
	a.Min, a.Max, a.Grid, a.Ticks = -0.5, float64(len(names))-0.5, false, nil
	for i, n := range names {
		a.Ticks = append(a.Ticks, pngplot.Tick{Value: float64(i), Label: n})
	}
}

func heldOutPlot(s *Summary) *pngplot.Plot {
	p := newPlot("Held-out pass rate per checkpoint (95% Wilson interval)", "checkpoint (training step; 0 is the base)", "pass rate")
	groups := []struct {
		name string
		c    color.RGBA
		ok   func(Checkpoint) bool
	}{
		{"base", grey, func(c Checkpoint) bool { return c.Step == 0 }},
		{"accepted", green, func(c Checkpoint) bool { return c.Step > 0 && accepted(c) }},
		{"rejected", red, func(c Checkpoint) bool { return c.Step > 0 && !accepted(c) }},
	}
	var inUse []pngplot.XY
	lo, hi := -1, 0
	for _, g := range groups {
		bars := pngplot.ErrorBars{Color: g.c, Width: 2, Cap: 9}
		pts := pngplot.Points{Color: g.c, Radius: 6}
		for _, c := range s.Checkpoints {
			if c.HeldOut == nil || !g.ok(c) {
				continue
			}
			xy := pngplot.XY{X: float64(c.Step), Y: c.HeldOut.Rate}
			pts.Points = append(pts.Points, xy)
			bars.Intervals = append(bars.Intervals, pngplot.Interval{X: xy.X, Low: c.HeldOut.Low, High: c.HeldOut.High})
			if c.InUse {
				inUse = append(inUse, xy)
			}
			if lo < 0 || c.Step < lo {
				lo = c.Step
			}
			hi = max(hi, c.Step)
		}
		if len(pts.Points) == 0 {
			continue
		}
		p.Add(bars, pts)
		p.Legend(g.name, pts)
	}
	if len(inUse) > 0 {
		ring := pngplot.Points{Points: inUse, Color: blue, Radius: 12, Ring: true}
		p.Add(ring)
		p.Legend("in use", ring)
	}
	rateAxis(&p.Y)
	stepAxis(&p.X, lo, hi, 0.5)
	return p
}

// accepted says whether the gate let the checkpoint through (it may have been rolled back
// since).
func accepted(c Checkpoint) bool {
	if c.Verdict != nil {
		return c.Verdict.Accept
	}
	return strings.HasPrefix(c.Status, string(registry.Accepted)) || strings.HasPrefix(c.Status, string(registry.RolledBack))
}

// line is a series joined by a line, with a dot at each point.
func line(p *pngplot.Plot, name string, c color.RGBA, dashed bool, xys []pngplot.XY) {
	l := pngplot.Line{Points: xys, Color: c, Width: 3, Dashed: dashed, Dot: 4}
	p.Add(l)
	p.Legend(name, l)
}

func rewardPlot(s *Summary) *pngplot.Plot {
	p := newPlot("Reward and the band over iterations", "iteration", "share")
	var reward, varied, band []pngplot.XY
	for _, pt := range s.Series {
		x := float64(pt.Iteration)
		reward = append(reward, pngplot.XY{X: x, Y: pt.MeanReward})
		if pt.Groups > 0 {
			varied = append(varied, pngplot.XY{X: x, Y: float64(pt.Varied) / float64(pt.Groups)})
		}
		if pt.Seen > 0 {
			band = append(band, pngplot.XY{X: x, Y: float64(pt.InBand) / float64(pt.Seen)})
		}
	}
	line(p, "mean reward", blue, false, reward)
	if len(varied) > 0 {
		line(p, "groups varied", orange, true, varied)
	}
	if len(band) > 0 {
		line(p, fmt.Sprintf("in the band %.1f–%.1f", s.BandLow, s.BandHigh), green, false, band)
	}
	rateAxis(&p.Y)
	stepAxis(&p.X, s.Series[0].Iteration, s.Series[len(s.Series)-1].Iteration, 0.25)
	return p
}

// barWidth is the width of one of per bars side by side in each of n categories (a
// category is one unit wide): three quarters of a category, and no wider than about 60
// display pixels when there are few categories.
func barWidth(n, per int) float64 {
	return min(0.75, 0.12*float64(n)) / float64(max(per, 1))
}

func mixPlot(s *Summary) *pngplot.Plot {
	p := newPlot("Tasks by synthesizer and rung", "rung of the ladder (harder →)", "tasks")
	var synths []string
	top, most := 0, 0
	for _, m := range s.Mix {
		if !slices.Contains(synths, m.Synthesizer) {
			synths = append(synths, m.Synthesizer)
		}
		top, most = max(top, m.Rung), max(most, m.Tasks)
	}
	palette := []color.RGBA{blue, orange, green, purple, sky, red, grey}
	w := barWidth(top+1, len(synths))
	for i, name := range synths {
		c := palette[i%len(palette)]
		x := w * (float64(i) - float64(len(synths)-1)/2) // the bar's offset from its rung
		for _, m := range s.Mix {
			if m.Synthesizer == name {
				p.Add(pngplot.Rect{X0: float64(m.Rung) + x - w/2, X1: float64(m.Rung) + x + w/2, Y0: 0, Y1: float64(m.Tasks), Color: c})
			}
		}
		p.Legend(name, pngplot.Rect{Color: c})
	}
	var names []string
	for r := 0; r <= top; r++ {
		names = append(names, fmt.Sprint(r))
	}
	categoryAxis(&p.X, names)
	countAxis(&p.Y, float64(most))
	return p
}

func timePlot(s *Summary) *pngplot.Plot {
	p := newPlot("Time per iteration", "iteration", "minutes")
	w := barWidth(len(s.Series), 1)
	parts := []struct {
		name string
		c    color.RGBA
		of   func(Time) float64
	}{
		{"training", red, func(t Time) float64 { return t.Train / 60 }},
		{"rollouts", blue, func(t Time) float64 { return t.Rollouts / 60 }},
		{"gate", sky, func(t Time) float64 { return t.Gate / 60 }},
	}
	var names []string
	model := make([]pngplot.XY, len(s.Series))
	top := 0.0
	for i, pt := range s.Series {
		names = append(names, fmt.Sprint(pt.Iteration))
		model[i] = pngplot.XY{X: float64(i), Y: pt.Time.Model / 60}
		below := 0.0 // the parts stack: training at the bottom
		for _, part := range parts {
			h := part.of(pt.Time)
			p.Add(pngplot.Rect{X0: float64(i) - w/2, X1: float64(i) + w/2, Y0: below, Y1: below + h, Color: part.c})
			below += h
		}
		top = max(top, below, model[i].Y)
	}
	for _, part := range parts {
		p.Legend(part.name, pngplot.Rect{Color: part.c})
	}
	line(p, "of which in Ollama", orange, true, model)
	categoryAxis(&p.X, names)
	countAxis(&p.Y, top)
	return p
}
