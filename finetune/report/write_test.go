package report

import (
	"bytes"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/frognano/frognano/internal/pngplot"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// imgSrc finds the page's <img src> references.
var imgSrc = regexp.MustCompile(`<img src="([^"]+)"`)

// checkPage reads the page Write wrote and checks that every image it references is a file
// beside it that decodes as a PNG of the size the page gives it; it returns the page.
func checkPage(t *testing.T, path string) (string, []string) {
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
		// A plot is not blank: a white page with nothing drawn would decode too. Its text and
		// axes are one colour, each series another.
		if colours, inked := distinctColours(img); colours < 5 || inked < 0.02 {
			t.Errorf("%s has %d colours, %.1f%% of it not white: blank?", m[1], colours, 100*inked)
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
	page, files := checkPage(t, path)
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
	page, files := checkPage(t, path)
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
	page, files := checkPage(t, path)
	if len(files) != 1 || files[0] != "tasks.png" || !strings.Contains(page, "No iteration has finished yet") || !strings.Contains(page, "<b>rollouts</b>") {
		t.Errorf("files %v; page:\n%s", files, page)
	}
}

// distinctColours counts img's colours and the share of its pixels that are not white
// (sampling every third pixel of every third row).
func distinctColours(img image.Image) (int, float64) {
	seen := map[[4]uint32]bool{}
	n, inked := 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			n++
			if r&g&bl != 0xffff {
				inked++
			}
		}
	}
	return len(seen), float64(inked) / float64(n)
}
