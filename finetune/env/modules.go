package env

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Module is one Go module of a repository.
type Module struct {
	Path string `json:"path"` // the module path its go.mod declares
	Dir  string `json:"dir"`  // its folder, slash-separated from the top; "." for the top
}

// Modules are the Go modules of the tree at dir, the top's first, then by folder, and
// whether a go.work at the top ties them. With a go.work its use list is the set (the
// modules go builds together); without one, every go.mod found, except under vendor/,
// testdata/, node_modules/ and hidden folders (copies of other modules, fixtures, tools'
// state). Only a go.work at the top counts: one in a subfolder would make the same package
// build differently depending on where go ran, and every run here starts from a module's
// own folder (see Env.InModules); NestedWorkspaces lists those, and synthesis says in its
// summary that they are not used. Links are never followed.
func Modules(dir string) (mods []Module, workspace bool, err error) {
	if b, err := readRegular(filepath.Join(dir, "go.work")); err == nil {
		uses, err := workUses(b)
		if err != nil {
			return nil, false, fmt.Errorf("go.work: %w", err)
		}
		for _, u := range uses {
			rel := path.Clean(filepath.ToSlash(u))
			if path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
				return nil, false, fmt.Errorf("go.work uses %s, outside the repository: the copies the tests run in hold the repository only", u)
			}
			m, err := readModule(dir, rel)
			if err != nil {
				return nil, false, fmt.Errorf("go.work uses %s: %w", u, err)
			}
			mods = append(mods, m)
		}
		return sortModules(mods), true, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != dir && (strings.HasPrefix(name, ".") || name == "vendor" || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "go.mod" || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(p))
		if err != nil {
			return err
		}
		m, err := readModule(dir, filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		mods = append(mods, m)
		return nil
	})
	return sortModules(mods), false, err
}

// NestedWorkspaces are the go.work files below the top of the tree at dir (slash paths
// from the top, sorted), in the folders Modules would look in: Modules ignores them (see
// there), so a module that builds only within one of them fails its tests here. Detect
// records them (Detection.IgnoredWorkspaces) for the user to hear of.
func NestedWorkspaces(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			name := d.Name()
			if p != dir && (strings.HasPrefix(name, ".") || name == "vendor" || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "go.work" || !d.Type().IsRegular() || filepath.Dir(p) == filepath.Clean(dir) {
			return nil
		}
		if rel, err := filepath.Rel(dir, p); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func sortModules(mods []Module) []Module {
	sort.Slice(mods, func(i, j int) bool {
		if (mods[i].Dir == ".") != (mods[j].Dir == ".") {
			return mods[i].Dir == "."
		}
		return mods[i].Dir < mods[j].Dir
	})
	return mods
}

// readModule reads the module path of rel/go.mod under dir.
func readModule(dir, rel string) (Module, error) {
	b, err := readRegular(filepath.Join(dir, filepath.FromSlash(rel), "go.mod"))
	if err != nil {
		return Module{}, err
	}
	p := ModulePath(b)
	if p == "" {
		return Module{}, fmt.Errorf("%s: no module line", path.Join(rel, "go.mod"))
	}
	return Module{Path: p, Dir: rel}, nil
}

// ModulePath is the path a go.mod's module line declares ("" when none).
func ModulePath(gomod []byte) string {
	for _, l := range strings.Split(string(gomod), "\n") {
		l, _, _ = strings.Cut(l, "//") // a module path holds no "//"
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
			if s, err := strconv.Unquote(f[1]); err == nil {
				return s
			}
			return f[1]
		}
	}
	return ""
}

// workUses are the folders a go.work's use directives name, in both forms:
// `use ./a` and `use (` … `)`.
func workUses(b []byte) ([]string, error) {
	var out []string
	block := false
	for _, l := range strings.Split(string(b), "\n") {
		l, _, _ = strings.Cut(l, "//")
		f := strings.Fields(l)
		switch {
		case len(f) == 0:
		case block && f[0] == ")":
			block = false
		case block:
			out = append(out, unquote(f[0]))
		case f[0] == "use" && len(f) >= 2 && f[1] == "(":
			block = true
		case f[0] == "use" && len(f) == 2:
			out = append(out, unquote(f[1]))
		}
	}
	if block {
		return nil, errors.New("a use block is not closed")
	}
	if len(out) == 0 {
		return nil, errors.New("no use directive")
	}
	return out, nil
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// ModuleOf is the module of the package with import path pkg: the one it was listed in,
// else the module whose path is its longest prefix (go's rule), else the first.
func (e *Env) ModuleOf(pkg string) Module {
	if info, ok := e.Packages[pkg]; ok && info.Module != "" {
		for _, m := range e.Modules {
			if m.Dir == info.Module {
				return m
			}
		}
	}
	best := -1
	for i, m := range e.Modules {
		if (pkg == m.Path || strings.HasPrefix(pkg, m.Path+"/")) && (best < 0 || len(m.Path) > len(e.Modules[best].Path)) {
			best = i
		}
	}
	switch {
	case best >= 0:
		return e.Modules[best]
	case len(e.Modules) > 0:
		return e.Modules[0]
	}
	return Module{Path: e.Module, Dir: "."}
}

// InModules is a bash script that runs, in the folder of each module with packages among
// pkgs, command(args): args are those packages' quoted import paths, or ./... for all of
// the module's when pkgs is nil. go resolves an import path only from inside its module
// (without a go.work), and ./... in a module's folder is that module's packages only, a
// nested module's left out. The script's output is the commands' in turn; it fails when
// one did. A repository with one module at its top gets command alone, as before modules.
func (e *Env) InModules(pkgs []string, command func(args string) string) string {
	mods := e.Modules
	if len(mods) == 0 {
		mods = []Module{{Path: e.Module, Dir: "."}}
	}
	args := map[string][]string{}
	if pkgs == nil {
		for _, m := range mods {
			args[m.Dir] = []string{"./..."}
		}
	}
	for _, p := range pkgs {
		d := e.ModuleOf(p).Dir
		args[d] = append(args[d], shellQuote(p))
	}
	if len(mods) == 1 && mods[0].Dir == "." {
		return command(strings.Join(args["."], " "))
	}
	var s strings.Builder
	s.WriteString("rc=0\n")
	for _, m := range mods {
		if a, ok := args[m.Dir]; ok {
			fmt.Fprintf(&s, "(cd %s && %s) || rc=1\n", shellQuote(m.Dir), command(strings.Join(a, " ")))
		}
	}
	s.WriteString("exit $rc")
	return s.String()
}
