package learnbench

import (
	"fmt"
	"image/color"
	"sort"

	"github.com/frognano/frognano/internal/pngplot"
)

// Colours as finetune/report's plots (Okabe–Ito, told apart by colour-blind readers).
var (
	black = color.RGBA{0, 0, 0, 255}
	grey  = color.RGBA{120, 120, 120, 255}
	seeds = []color.RGBA{{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {213, 94, 0, 255}, {204, 121, 167, 255}, {86, 180, 233, 255}}
)

// PNG draws the curve with the report's plotting (internal/pngplot): the pooled held-out
// pass rate of each checkpoint with its 95% Wilson interval (black, joined), each seed's
// rate (coloured, a little to the right), and the training rollouts' pooled pass rate of
// the model in use with its interval (grey, a little to the left; see Result.Train).
func (r *Result) PNG() ([]byte, error) {
	p := pngplot.New("SmolLM2-135M in the online loop (95% Wilson intervals)", 825, 374)
	p.X.Label, p.Y.Label = "iterations of the loop (0: the base model)", "pass rate"
	p.X.Grid, p.Y.Grid = true, true
	n := max(r.Options.Iterations, 1)
	p.X.Min, p.X.Max = -0.5, float64(n)+0.5
	p.X.Ticks = pngplot.IntegerTicks(p.X.Min, p.X.Max)
	p.Y.Min, p.Y.Max, p.Y.Ticks = pngplot.NiceTicks(0, 1, 6)
	series(p, "training rollouts", r.Train, -0.08, grey, false)
	series(p, "held-out, all seeds", r.Curve, 0, black, true)
	bySeed := map[int][]pngplot.XY{}
	for _, pt := range r.Curve {
		for s, rate := range pt.BySeed {
			bySeed[s] = append(bySeed[s], pngplot.XY{X: float64(pt.Iteration) + 0.05*float64(s), Y: rate})
		}
	}
	var ss []int
	for s := range bySeed {
		ss = append(ss, s)
	}
	sort.Ints(ss)
	for _, s := range ss {
		m := pngplot.Points{Points: bySeed[s], Color: seeds[(s-1)%len(seeds)], Radius: 4}
		p.Add(m)
		p.Legend(fmt.Sprintf("held-out, seed %d", s), m)
	}
	return p.PNG()
}

// series adds points with their intervals, shifted by dx, joined when join is set.
func series(p *pngplot.Plot, name string, pts []Point, dx float64, c color.RGBA, join bool) {
	if len(pts) == 0 {
		return
	}
	bars := pngplot.ErrorBars{Color: c, Width: 2, Cap: 9}
	dots := pngplot.Points{Color: c, Radius: 6}
	for _, pt := range pts {
		xy := pngplot.XY{X: float64(pt.Iteration) + dx, Y: pt.Rate}
		dots.Points = append(dots.Points, xy)
		bars.Intervals = append(bars.Intervals, pngplot.Interval{X: xy.X, Low: pt.Low, High: pt.High})
	}
	p.Add(bars, dots)
	if join && len(dots.Points) > 1 {
		p.Add(pngplot.Line{Points: dots.Points, Color: c, Width: 2})
	}
	p.Legend(name, dots)
}
