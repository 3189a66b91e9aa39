package withhold

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
)

// TestFixtures runs each testdata/*.txtar: its files make a tree, the test ids in "ids"
// are withheld, and the ids withheld and kept must be those of "withheld" and "kept";
// each "want/<file>" is that file afterwards, each file "gone" names is removed, and every
// other file is as it was; "shared" lines are Result.Shared. A "link
// <name>" section is a symbolic link to its text; "modules" lines are a Go package's
// import path and its module's folder (task.TestSpec.Modules). Go trees must then still build and vet
// (go vet compiles the tests), Python files still compile.
func TestFixtures(t *testing.T) {
	fixtures, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, fx := range fixtures {
		t.Run(strings.TrimSuffix(filepath.Base(fx), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(fx)
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			meta, want, orig := map[string]string{}, map[string]string{}, map[string]string{}
			for _, f := range ar.Files {
				switch name := f.Name; {
				case name == "kind" || name == "ids" || name == "withheld" || name == "kept" || name == "modules" || name == "gone" || name == "shared":
					meta[name] = string(f.Data)
				case strings.HasPrefix(name, "want/"):
					want[strings.TrimPrefix(name, "want/")] = string(f.Data)
				case strings.HasPrefix(name, "link "):
					p := filepath.Join(root, strings.TrimPrefix(name, "link "))
					if err := os.Symlink(strings.TrimSpace(string(f.Data)), p); err != nil {
						t.Fatal(err)
					}
				default:
					p := filepath.Join(root, name)
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, f.Data, 0o644); err != nil {
						t.Fatal(err)
					}
					orig[name] = string(f.Data)
				}
			}
			tk := &task.Task{ID: "t", FailToPass: lines(meta["ids"]), Test: task.TestSpec{Kind: strings.TrimSpace(meta["kind"])}}
			for _, l := range lines(meta["modules"]) {
				pkg, dir, _ := strings.Cut(l, " ")
				if tk.Test.Modules == nil {
					tk.Test.Modules = map[string]string{}
				}
				tk.Test.Modules[pkg] = dir
			}
			res, err := Tests(root, tk)
			if err != nil {
				t.Fatal(err)
			}
			if got, w := res.Withheld, lines(meta["withheld"]); !slices.Equal(got, w) {
				t.Errorf("withheld %q, want %q", got, w)
			}
			var kept []string
			for id, why := range res.Kept {
				kept = append(kept, id)
				t.Logf("kept %s: %s", id, why)
			}
			sort.Strings(kept)
			if w := lines(meta["kept"]); !slices.Equal(kept, w) {
				t.Errorf("kept %q, want %q", kept, w)
			}
			if w := lines(meta["shared"]); !slices.Equal(res.Shared, w) {
				t.Errorf("shared %q, want %q", res.Shared, w)
			}
			gone := lines(meta["gone"])
			if !slices.Equal(res.Files, gone) {
				t.Errorf("files removed %q, want %q", res.Files, gone)
			}
			for name, was := range orig {
				b, err := os.ReadFile(filepath.Join(root, name))
				if slices.Contains(gone, name) {
					if err == nil {
						t.Errorf("%s is still there", name)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				w, changed := want[name]
				if !changed {
					w = was
				}
				if string(b) != w {
					t.Errorf("%s is\n%s\nwant\n%s", name, b, w)
				}
				if strings.Contains(string(b), "HIDDEN") {
					t.Errorf("%s still shows what a withheld test asserts", name)
				}
			}
			switch tk.Test.Kind {
			case env.KindGo:
				for name := range orig {
					if filepath.Base(name) == "go.mod" {
						run(t, filepath.Join(root, filepath.Dir(name)), "go", "vet", "./...")
					}
				}
			case env.KindPython:
				for name := range orig {
					if strings.HasSuffix(name, ".py") && !slices.Contains(gone, name) {
						run(t, root, "python3", "-m", "py_compile", name)
					}
				}
			}
		})
	}
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local", "PYTHONDONTWRITEBYTECODE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
