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
	// Work is the folder (slash path from the top) of the go.work below the top that ties
	// this module to others; "" when none does. go runs with it (GOWORK) in this module's
	// folder. With a go.work at the top (Env.Workspace) it is empty: that one ties all.
	Work string `json:"work,omitempty"`
}

// IgnoredWorkspace is a go.work below the top that Modules could not use, and why.
type IgnoredWorkspace struct {
	Path string // slash path of the go.work from the top
	Why  string
}

// Modules are the Go modules of the tree at dir, the top's first, then by folder, and
// whether a go.work at the top ties them. With a go.work at the top its use list is the
// set (the modules go builds together). Without one, every go.mod found, except under
// vendor/, testdata/, node_modules/ and hidden folders (copies of other modules, fixtures,
// tools' state), and each go.work found in those folders ties the modules it uses
// (Module.Work): their tests run with it, as go would run them from their folder. Where
// two go.work files use one module, the nearest one at or above its folder wins (the one
// go would find from there), else the first by path. A go.work whose use list cannot be
// read or leaves the repository is not used, and said so (see ModulesAndIgnored). Links
// are never followed.
func Modules(dir string) (mods []Module, workspace bool, err error) {
	mods, workspace, _, err = ModulesAndIgnored(dir)
	return mods, workspace, err
}

// ModulesAndIgnored is Modules with the go.work files below the top that it does not use.
func ModulesAndIgnored(dir string) (mods []Module, workspace bool, ignored []IgnoredWorkspace, err error) {
	found, works, werr := walkModules(dir)
	if b, err := readRegular(filepath.Join(dir, "go.work")); err == nil {
		// Its use list is the set: a go.mod elsewhere that cannot be read does not matter.
		mods, err := workModules(dir, ".", b)
		if err != nil {
			return nil, false, nil, fmt.Errorf("go.work: %w", err)
		}
		for _, w := range works {
			ignored = append(ignored, IgnoredWorkspace{Path: path.Join(w, "go.work"),
				Why: "the go.work at the top ties the modules, and every test runs with that one"})
		}
		return sortModules(mods), true, ignored, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil, err
	}
	if werr != nil {
		return nil, false, nil, werr
	}
	mods = found
	for _, w := range works {
		b, err := readRegular(filepath.Join(dir, filepath.FromSlash(w), "go.work"))
		var used []Module
		if err == nil {
			used, err = workModules(dir, w, b)
		}
		if err != nil {
			ignored = append(ignored, IgnoredWorkspace{Path: path.Join(w, "go.work"), Why: err.Error() +
				"; the modules it names run without it, so one that builds only with it fails its tests and gives no tasks"})
			continue
		}
		for _, u := range used {
			i := indexModule(mods, u.Dir)
			if i < 0 { // in a folder the walk skips, yet the go.work builds it
				mods, i = append(mods, u), len(mods)
			}
			if nearer(u.Dir, w, mods[i].Work) {
				mods[i].Work = w
			}
		}
	}
	return sortModules(mods), false, ignored, nil
}

// walkModules finds the go.mod files of the tree at dir (as modules) and the folders of
// its go.work files below the top (sorted), outside vendor/, testdata/, node_modules/ and
// hidden folders.
func walkModules(dir string) (mods []Module, works []string, err error) {
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
		if (d.Name() != "go.mod" && d.Name() != "go.work") || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(p))
		if err != nil {
			return err
		}
		switch {
		case d.Name() == "go.mod":
			m, err := readModule(dir, filepath.ToSlash(rel))
			if err != nil {
				return err
			}
			mods = append(mods, m)
		case rel != ".":
			works = append(works, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(works)
	return mods, works, err
}

// workModules are the modules a go.work in folder work (slash, from the top of dir) uses.
func workModules(dir, work string, b []byte) ([]Module, error) {
	uses, err := workUses(b)
	if err != nil {
		return nil, err
	}
	var mods []Module
	for _, u := range uses {
		rel := path.Clean(path.Join(work, filepath.ToSlash(u)))
		if path.IsAbs(filepath.ToSlash(u)) || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("uses %s, outside the repository: the copies the tests run in hold the repository only", u)
		}
		m, err := readModule(dir, rel)
		if err != nil {
			return nil, fmt.Errorf("uses %s: %w", u, err)
		}
		mods = append(mods, m)
	}
	return mods, nil
}

// nearer says whether the go.work in folder w ties the module in folder mod rather than the
// one in cur ("" none): one at or above the module's folder beats one elsewhere, and of two
// there, the deeper (the one go finds first walking up from the module).
func nearer(mod, w, cur string) bool {
	switch {
	case cur == "":
		return true
	case !within(mod, w):
		return false
	case !within(mod, cur):
		return true
	}
	return within(w, cur) && w != cur
}

func indexModule(mods []Module, dir string) int {
	for i, m := range mods {
		if m.Dir == dir {
			return i
		}
	}
	return -1
}

// within says whether slash path p is folder top or below it.
func within(p, top string) bool {
	return top == "." || p == top || strings.HasPrefix(p, top+"/")
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

// Enter is the shell command that goes from the top of a copy into the module's folder,
// with GOWORK set to the go.work that ties it when one below the top does (go takes only
// an absolute GOWORK; the command that runs before says GOWORK for the others).
func (m Module) Enter() string {
	if m.Work == "" {
		return "cd " + shellQuote(m.Dir)
	}
	rel := m.Dir
	switch {
	case m.Dir == m.Work:
		rel = "."
	case within(m.Dir, m.Work):
		rel = strings.TrimPrefix(m.Dir, m.Work+"/")
	default:
		rel = strings.Repeat("../", strings.Count(m.Work, "/")+1) + m.Dir
	}
	return fmt.Sprintf(`cd %s && export GOWORK="$PWD/go.work" && cd %s`, shellQuote(m.Work), shellQuote(rel))
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
	if len(mods) == 1 && mods[0].Dir == "." && mods[0].Work == "" {
		return command(strings.Join(args["."], " "))
	}
	var s strings.Builder
	s.WriteString("rc=0\n")
	for _, m := range mods {
		if a, ok := args[m.Dir]; ok {
			fmt.Fprintf(&s, "(%s && %s) || rc=1\n", m.Enter(), command(strings.Join(a, " ")))
		}
	}
	s.WriteString("exit $rc")
	return s.String()
}
