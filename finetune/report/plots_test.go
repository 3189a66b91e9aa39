package report

import (
	"image"
	"image/color"
	"testing"

	"github.com/frognano/frognano/finetune/gate"
)

// TestPlotPixels: the plots put each figure of a Summary where its value says, in its
// series' colour.
func TestPlotPixels(t *testing.T) {
	base, good, bad := Wilson(10, 40), Wilson(24, 40), Wilson(6, 40)
	s := &Summary{
		Started: true, BandLow: 0.2, BandHigh: 0.8,
		Checkpoints: []Checkpoint{
			{Step: 0, Status: "base", HeldOut: &base},
			{Step: 1, Status: "accepted", HeldOut: &good, InUse: true, Verdict: &gate.Verdict{Accept: true}},
			{Step: 2, Status: "rejected", HeldOut: &bad, Verdict: &gate.Verdict{Accept: false}},
		},
		Series: []Point{
			{Iteration: 1, MeanReward: 0.25, Groups: 4, Varied: 3, Seen: 10, InBand: 5, Time: Time{Train: 600, Rollouts: 1200, Gate: 1800, Model: 900}},
			{Iteration: 2, MeanReward: 0.75, Groups: 4, Varied: 4, Seen: 10, InBand: 2, Time: Time{Rollouts: 600}},
		},
		Mix: []Mix{{Synthesizer: "mutation", Rung: 0, Tasks: 6}, {Synthesizer: "history", Rung: 1, Tasks: 3}},
	}
	white, gridGrey := color.RGBA{255, 255, 255, 255}, color.RGBA{221, 221, 221, 255}
	type want struct {
		what string
		x, y float64
		dy   int // pixels down from (x, y)
		c    color.RGBA
	}
	for _, c := range []struct {
		name  string
		draw  func(*Summary) image.Image
		wants []want
	}{
		{"held-out", func(s *Summary) image.Image { return heldOutPlot(s).Draw() }, []want{
			{"the base", 0, base.Rate, 0, grey},
			{"the base's interval, top", 0, base.High, 0, grey},
			{"the base's interval, bottom", 0, base.Low, -1, grey},
			{"above the base's interval (on the grid line)", 0, base.High, -3 * 2, gridGrey},
			{"the accepted checkpoint (in use: ringed)", 1, good.Rate, 0, green},
			{"its ring", 1, good.Rate, -12 * 2, blue},
			{"the rejected checkpoint", 2, bad.Rate, 0, red},
			{"the rejected one's interval, top", 2, bad.High, 0, red},
		}},
		{"reward", func(s *Summary) image.Image { return rewardPlot(s).Draw() }, []want{
			{"mean reward, iteration 1", 1, 0.25, 0, blue},
			{"mean reward, between", 1.5, 0.5, 0, blue},
			{"groups varied, iteration 1", 1, 0.75, 0, orange},
			{"in the band, iteration 2", 2, 0.2, 0, green},
		}},
		{"tasks", func(s *Summary) image.Image { return mixPlot(s).Draw() }, []want{
			// Two synthesizers: each rung has two bars, mutation's left of the centre.
			{"mutation at rung 0", -0.1, 5.5, 0, blue},
			{"no history at rung 0", 0.1, 0.5, 0, white},
			{"history at rung 1", 1.1, 2.5, 0, orange},
			{"above history's bar", 1.1, 3.5, 0, white},
		}},
		{"time", func(s *Summary) image.Image { return timePlot(s).Draw() }, []want{
			// Iteration 1: 10 minutes training, then 20 of rollouts, then 30 of gate.
			{"training", 0, 5, 0, red},
			{"rollouts", 0.05, 25, 0, blue},
			{"gate", 0.05, 55, 0, sky},
			{"above the stack", 0.05, 61, 0, white},
			{"in Ollama", 0, 15, 0, orange},
			{"iteration 2: rollouts only", 1.05, 5, 0, blue},
		}},
	} {
		im := c.draw(s).(interface {
			image.Image
			Point(x, y float64) image.Point
			RGBAAt(x, y int) color.RGBA
		})
		for _, w := range c.wants {
			p := im.Point(w.x, w.y).Add(image.Pt(0, w.dy))
			if got := im.RGBAAt(p.X, p.Y); got != w.c {
				t.Errorf("%s: %s at (%v, %v) %v is %v, want %v", c.name, w.what, w.x, w.y, p, got, w.c)
			}
		}
	}
}
