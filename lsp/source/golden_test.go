package source

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the .funcs golden files from the current output")

// fixture is one sample file under testdata; rel is its path relative to testdata, which
// plays the repository root.
type fixture struct {
	path, rel, text string
	lang            Lang
}

func fixtures(t *testing.T) []fixture {
	t.Helper()
	var out []fixture
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		lang := LangOf(p, "")
		if lang == "" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata", p)
		out = append(out, fixture{p, filepath.ToSlash(rel), string(b), lang})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no fixtures under testdata")
	}
	return out
}

// TestFuncsGolden lists each fixture's functions next to it, in FILE.funcs: one line per
// function with its line range, name, flags and signature. go test -update rewrites them;
// review the diff.
func TestFuncsGolden(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.rel, func(t *testing.T) {
			fs, err := Funcs(fx.lang, fx.rel, fx.text)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, f := range fs {
				b.WriteString(describe(fx.text, f) + "\n")
			}
			golden := fx.path + ".funcs"
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("Funcs(%s) changed (go test -update rewrites %s)\n--- got\n%s--- want\n%s", fx.rel, golden, got, want)
			}
		})
	}
}

// describe renders a Func on one line: "L3-7 Name [stub] [test NAME: COMMAND]: signature".
func describe(text string, f Func) string {
	line := func(off int) int { return strings.Count(text[:off], "\n") + 1 }
	s := fmt.Sprintf("L%d-%d %s", line(f.Start), line(f.End), f.Name)
	if f.Stub {
		s += " [stub]"
	}
	if f.Test != nil {
		s += fmt.Sprintf(" [test %s: %s]", f.Test.Name, f.Test.Command)
	}
	return s + ": " + strings.Join(strings.Fields(f.Signature), " ")
}
