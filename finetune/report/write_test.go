package report

import (
	"bytes"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/frognano/frognano/internal/pngplot"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// imgSrc finds the page's <img src> references.
var imgSrc = regexp.MustCompile(`<img src="([^"]+)"`)

// checkPage reads the page Write wrote for s and checks that every image it references is
// a file beside it that decodes as a PNG of the size the page gives it, with as much drawn in
// it as its points need (see checkInk); it returns the page.
func checkPage(t *testing.T, path string, s *Summary) (string, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	var files []string
	for _, m := range imgSrc.FindAllStringSubmatch(page, -1) {
		files = append(files, m[1])
		f, err := os.ReadFile(filepath.Join(filepath.Dir(path), m[1]))
		if err != nil {
			t.Errorf("the page references %s: %v", m[1], err)
			continue
		}
		img, err := png.Decode(bytes.NewReader(f))
		if err != nil {
			t.Errorf("%s: %v", m[1], err)
			continue
		}
		if r := img.Bounds(); r.Dx() != plotW*pngplot.Scale || r.Dy() != plotH*pngplot.Scale || !strings.Contains(page, fmt.Sprintf(`width="%d" height="%d"`, plotW, plotH)) {
			t.Errorf("%s is %v", m[1], r)
		}
		if err := checkInk(img, dataArea(m[1], s), plotted(m[1], s)); err != nil {
			t.Errorf("%s: %v", m[1], err)
		}
	}
	for _, bad := range []string{"<script", "http://", "https://", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q: it must open offline with nothing fetched", bad)
		}
	}
	return page, files
}

func TestWritePage(t *testing.T) {
	repo, example := filepath.Join(t.TempDir(), "repo"), os.Getenv("FROGNANO_REPORT_EXAMPLE")
	if example != "" { // the page of docs/finetune-report.png, with a repository's path as a user's would be
		repo = "/home/dev/src/myproject"
	}
	sim := realistic(t, ollamatest.Shared(t), repo)
	s, err := Collect(sim.options())
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	path, err := Write(out, s)
	if err != nil {
		t.Fatal(err)
	}
	page, files := checkPage(t, path, s)
	if len(files) != len(figures) {
		t.Errorf("the page shows %v, want all of %d figures", files, len(figures))
	}
	// The headline numbers are on the page as the Summary has them.
	for _, want := range []string{bounds(s.HeldOutNow), bounds(s.HeldOutStart), s.InUse, "Wilson"} {
		if !strings.Contains(page, html.EscapeString(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, want := range []string{"<b>" + strconv.Itoa(s.Tasks.InBand) + " in the band</b>",
		`<span class="big">` + pct(s.HeldOutNow.Rate) + "</span>", `<span class="big">` + pct(s.HeldOutStart.Rate) + "</span>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if example != "" {
		if _, err := Write(example, s); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriteNotStarted: the page of a repository never fine-tuned says how to start, with no plot.
func TestWriteNotStarted(t *testing.T) {
	s, err := Collect(Options{Repo: "/home/me/project", Dir: t.TempDir(), RegistryDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	path, err := Write(t.TempDir(), s)
	if err != nil {
		t.Fatal(err)
	}
	page, files := checkPage(t, path, s)
	if len(files) != 0 || !strings.Contains(page, "frognano finetune step --repo DIR") {
		t.Errorf("files %v; page:\n%s", files, page)
	}
}

// TestWriteNoIterationYet: a loop whose first iteration is under way has a page with its
// headline and the tasks it made, and no plot of iterations.
func TestWriteNoIterationYet(t *testing.T) {
	sim := newSim(t, ollamatest.Shared(t), 1, 2, 8)
	sim.st.Iteration, sim.st.Phase = 1, "rollouts"
	sim.save()
	s, err := Collect(sim.options())
	if err != nil {
		t.Fatal(err)
	}
	path, err := Write(t.TempDir(), s)
	if err != nil {
		t.Fatal(err)
	}
	page, files := checkPage(t, path, s)
	if len(files) != 1 || files[0] != "tasks.png" || !strings.Contains(page, "No iteration has finished yet") || !strings.Contains(page, "<b>rollouts</b>") {
		t.Errorf("files %v; page:\n%s", files, page)
	}
}

// dataArea is where the figure in file draws s's data, in image pixels.
func dataArea(file string, s *Summary) image.Rectangle {
	for _, f := range figures {
		if f.File == file {
			return f.make(s).Draw().Area
		}
	}
	return image.Rectangle{}
}

// plotted is how many points the figure in file shows for s: one per checkpoint with a
// held-out result, per iteration, or per bar of the task mix.
func plotted(file string, s *Summary) int {
	switch file {
	case "held-out.png":
		n := 0
		for _, c := range s.Checkpoints {
			if c.HeldOut != nil {
				n++
			}
		}
		return n
	case "tasks.png":
		return len(s.Mix)
	default:
		return len(s.Series)
	}
}

// frameColours are the colours of a plot with nothing plotted: the background, the text,
// the axes and the grid, taken from an empty plot so that they stay pngplot's.
var frameColours = sync.OnceValue(func() map[color.RGBA]bool {
	p := newPlot("Empty 0123456789", "x", "y")
	rateAxis(&p.X)
	rateAxis(&p.Y)
	im := p.Draw()
	seen := map[color.RGBA]bool{}
	for y := im.Bounds().Min.Y; y < im.Bounds().Max.Y; y++ {
		for x := im.Bounds().Min.X; x < im.Bounds().Max.X; x++ {
			seen[im.RGBAAt(x, y)] = true
		}
	}
	return seen
})

// minPointInk is the fewest image pixels one plotted point colours: the smallest mark the
// figures give a point is a line's dot (radius 4 display pixels, see line; a checkpoint's
// is 6, a bar of one task is larger at the loop's task counts), halved for the part the
// axis may cover when the point sits on it (a reward or a time of 0) and for the
// antialiased rim, whose paler pixels still count but may blend into the grid's grey. A
// series' dots are apart while the data area gives each iteration more than a dot's width
// (up to about 70 iterations), as in every test here.
var minPointInk = int(math.Round(math.Pi * 4 * pngplot.Scale * 4 * pngplot.Scale / 2))

// checkInk says whether img, a plot of n points whose data area is area, has at least as
// many pixels there in colours other than its frame's as n points colour at the least. A
// fixed share of non-white over the image did not scale: the frame (title, ticks, labels,
// grid) is most of a plot's ink, so a plot of one iteration had 1.8% against a floor of 2%
// set for eight, and a floor low enough for one point would pass a plot whose data were
// lost. The area is widened by a dot's radius, for the points on its edges (a reward of 0
// on the x axis); the legend, right of it, does not count: it is drawn with no data too.
func checkInk(img image.Image, area image.Rectangle, n int) error {
	frame := frameColours()
	inked := 0
	b := area.Inset(-4 * pngplot.Scale).Intersect(img.Bounds())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if !frame[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)] {
				inked++
			}
		}
	}
	if want := max(n, 1) * minPointInk; inked < want {
		return fmt.Errorf("%d pixels of the data area %v drawn in the data's colours, want at least %d for %d points: blank?", inked, area, want, n)
	}
	return nil
}

// TestCheckInkBlank: the ink check fails a blank plot, white or with its frame (and legend)
// and nothing plotted, and passes a plot of one iteration (where the fixed 2% of non-white that it
// replaced failed a real one-iteration run's plot) and of one checkpoint.
func TestCheckInkBlank(t *testing.T) {
	heldOut := Wilson(1, 2)
	one := &Summary{Started: true, BandLow: 0.2, BandHigh: 0.8,
		Series:      []Point{{Iteration: 1, MeanReward: 0.5, Groups: 1, Varied: 1, Seen: 2, InBand: 2, Time: Time{Train: 30, Rollouts: 60, Gate: 40}}},
		Checkpoints: []Checkpoint{{Step: 0, Status: "base", HeldOut: &heldOut}},
		Mix:         []Mix{{Synthesizer: "mutation", Rung: 0, Tasks: 1}},
	}
	white := image.NewRGBA(image.Rect(0, 0, plotW*pngplot.Scale, plotH*pngplot.Scale))
	draw.Draw(white, white.Bounds(), image.White, image.Point{}, draw.Src)
	// The reward plot's frame with nothing plotted, and with its legend but no data.
	frame := func(legend bool) *pngplot.Image {
		p := newPlot("Reward and the band over iterations", "iteration", "share")
		rateAxis(&p.Y)
		stepAxis(&p.X, 1, 1, 0.25)
		if legend {
			p.Legend("mean reward", pngplot.Line{Color: blue, Width: 3, Dot: 4})
			p.Legend("groups varied", pngplot.Line{Color: orange, Width: 3, Dashed: true, Dot: 4})
		}
		return p.Draw()
	}
	for _, c := range []struct {
		name string
		img  image.Image
		area image.Rectangle
	}{
		{"white", white, dataArea("reward.png", one)},
		{"the reward plot's frame, nothing plotted", frame(false), frame(false).Area},
		{"the reward plot's frame and legend, nothing plotted", frame(true), frame(true).Area},
	} {
		if err := checkInk(c.img, c.area, 1); err == nil {
			t.Errorf("%s passes the check", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	for _, f := range figures {
		if err := checkInk(f.make(one).Draw(), dataArea(f.File, one), plotted(f.File, one)); err != nil {
			t.Errorf("%s of one point: %v", f.File, err)
		}
	}
}
