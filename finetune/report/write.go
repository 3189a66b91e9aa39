package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/frognano/frognano/internal/atomicfile"
)

// Index is the page's file name in the folder Write writes.
const Index = "index.html"

//go:embed page.html.tmpl
var pageText string

// page is parsed on first use, not when frognano starts: every `frognano lsp` links this
// package, and parsing the template took a third of a millisecond and 1,400 allocations of
// its start-up.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"pct":      pct,
		"interval": interval,
		"bounds":   bounds,
		"minutes":  minutes,
		"first":    func(s string) string { s, _, _ = strings.Cut(s, ": "); return s },
	}).Parse(pageText))
})

// Write renders s into dir as index.html with its plots as PNG files beside it (one file
// per plot, named in figures), and returns the page's path. The page is self-contained
// with its PNGs: no script, no style sheet or font fetched from anywhere, so it opens
// offline and from an editor. A Summary with Started false gives a page that says how
// to start. Each file is replaced atomically, the page last, so a reader never sees a page
// whose plots are missing.
func Write(dir string, s *Summary) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	type fig struct {
		figure
		Width, Height int
	}
	var figs []fig
	if s.Started {
		for _, f := range figures {
			if !f.has(s) {
				continue
			}
			b, err := f.make(s).PNG()
			if err != nil {
				return "", fmt.Errorf("report: plot %s: %w", f.File, err)
			}
			if err := atomicfile.Write(filepath.Join(dir, f.File), b, 0o644); err != nil {
				return "", err
			}
			figs = append(figs, fig{f, plotW, plotH})
		}
	}
	var b bytes.Buffer
	if err := page().Execute(&b, map[string]any{"S": s, "Figures": figs, "HowToStart": HowToStart}); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	path := filepath.Join(dir, Index)
	return path, atomicfile.Write(path, b.Bytes(), 0o644)
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// interval is "41.2% [33.0%, 49.8%] (66 of 160 episodes, 20 tasks)".
func interval(p *PassRate) string {
	if p == nil {
		return "not measured yet"
	}
	return fmt.Sprintf("%s [%s, %s] (%d of %d episodes, %d tasks)", pct(p.Rate), pct(p.Low), pct(p.High), p.Successes, p.Attempts, p.Tasks)
}

// bounds is interval without the rate: "[33.0%, 49.8%] (66 of 160 episodes, 20 tasks)".
func bounds(p *PassRate) string {
	if p == nil {
		return "not measured yet"
	}
	_, b, _ := strings.Cut(interval(p), " ")
	return b
}

func minutes(sec float64) string {
	switch m := sec / 60; {
	case sec == 0:
		return "–"
	case m < 1:
		return fmt.Sprintf("%.0f s", sec)
	case m < 120:
		return fmt.Sprintf("%.1f min", m)
	default:
		return fmt.Sprintf("%.1f h", math.Round(m)/60)
	}
}
