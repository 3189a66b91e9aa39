package withhold

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/frognano/frognano/finetune/env"
)

// goFixtures carries what the removed test code selected from the packages it imported,
// so that a fixtures package of the tree (internal/cases with var Add = ..., imported only
// by the withheld test) loses what only that code used: its tables hold the answer too.
type goFixtures struct {
	dirs  map[string]bool // the withheld tests' package folders: their code is under test
	noted []notedFile
}

// notedFile is a withheld test file's imports and, by the name before the dot, the names
// its removed code selected (cases.Add: "cases" → Add).
type notedFile struct {
	imports []*ast.ImportSpec
	sels    map[string]map[string]bool
}

// note records the selectors inside rs of gf.
func (fx *goFixtures) note(gf *goFile, rs [][2]int) {
	nf := notedFile{imports: gf.f.Imports, sels: map[string]map[string]bool{}}
	ast.Inspect(gf.f, func(n ast.Node) bool {
		s, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := s.X.(*ast.Ident); ok && inRanges(rs, gf.offset(s.Pos())) {
			if nf.sels[x.Name] == nil {
				nf.sels[x.Name] = map[string]bool{}
			}
			nf.sels[x.Name][s.Sel.Name] = true
		}
		return true
	})
	fx.noted = append(fx.noted, nf)
}

// treeGo is what a walk of the tree found, no link followed: the modules by path and the
// .go files (slash paths) by folder.
type treeGo struct {
	modules map[string]string
	files   map[string][]string
}

func walkGo(root string) treeGo {
	tg := treeGo{modules: map[string]string{}, files: map[string][]string{}}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			// go ignores these folders; vendor holds other modules' code
			if n := d.Name(); rel != "." && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		switch {
		case d.Name() == "go.mod":
			if b, _, err := regular(root, rel); err == nil {
				if mp := env.ModulePath(b); mp != "" {
					tg.modules[mp] = path.Dir(rel)
				}
			}
		case strings.HasSuffix(rel, ".go"):
			tg.files[path.Dir(rel)] = append(tg.files[path.Dir(rel)], rel)
		}
		return nil
	})
	return tg
}

// dirOf is the folder of the package imp of one of the tree's modules (the longest module
// path it is in), or "".
func (tg treeGo) dirOf(imp string) string {
	best, dir := "", ""
	for mp, d := range tg.modules {
		if (imp == mp || strings.HasPrefix(imp, mp+"/")) && len(mp) > len(best) {
			best, dir = mp, path.Join(d, strings.TrimPrefix(strings.TrimPrefix(imp, mp), "/"))
		}
	}
	return dir
}

// withhold removes, from each local package the noted code imported, the package-level
// declarations it selected that no other code uses, and what only those use. A package
// that non-test code imports, or whose files the task's patch changes, is code under
// test, not fixtures: it stays whole.
func (fx *goFixtures) withhold(root string, patched map[string]bool, res *Result) error {
	if len(fx.noted) == 0 {
		return nil
	}
	tg := walkGo(root)
	done := map[string]bool{}
	for _, nf := range fx.noted {
		for _, is := range nf.imports {
			imp, err := strconv.Unquote(is.Path.Value)
			if err != nil || done[imp] {
				continue
			}
			done[imp] = true
			dir := tg.dirOf(imp)
			if dir == "" || fx.dirs[dir] || patched[dir] {
				continue
			}
			if err := fx.fixturePackage(root, tg, imp, dir, res); err != nil {
				return err
			}
		}
	}
	return nil
}

// fixturePackage withholds from the package imp in dir what the noted code selected.
func (fx *goFixtures) fixturePackage(root string, tg treeGo, imp, dir string, res *Result) error {
	var files, code []*goFile // all of dir's, and its non-test ones
	for _, rel := range tg.files[dir] {
		gf, err := parseGo(root, rel)
		if err != nil {
			return nil // a file unread is uses unseen
		}
		files = append(files, gf)
		if !strings.HasSuffix(rel, "_test.go") {
			code = append(code, gf)
		}
	}
	if len(code) == 0 {
		return nil
	}
	pkgName := code[0].f.Name.Name
	roots := map[string]bool{}
	for _, nf := range fx.noted {
		for _, is := range nf.imports {
			if p, _ := strconv.Unquote(is.Path.Value); p == imp {
				for n := range nf.sels[importName(is, pkgName)] {
					roots[n] = true
				}
			}
		}
	}
	pinned, ok := outsideUses(root, tg, imp, dir, pkgName)
	if !ok || len(roots) == 0 {
		return nil
	}
	for _, gf := range files { // a test file's declarations are not the package's code
		if strings.HasSuffix(gf.rel, "_test.go") {
			for _, d := range gf.f.Decls {
				for _, n := range declNames(d) {
					pinned[n] = true
				}
			}
		}
	}
	want, outs := fixtureCut(files, code, roots, pinned)
	for _, o := range outs {
		if err := write(root, o.gf.rel, o.out, o.gf.mode); err != nil {
			return err
		}
		res.goLiterals(o.gf, o.gf.ranges(want))
	}
	res.Shared = append(res.Shared, keptRoots(code, roots, want)...)
	for _, s := range shared(code, want) {
		if !slices.Contains(res.Shared, s) {
			res.Shared = append(res.Shared, s)
		}
	}
	return nil
}

type cutFile struct {
	gf  *goFile
	out []byte
}

// fixtureCut works out the declarations of roots (and the helpers only they use) that can
// go, and the files without them: a root another declaration of the package uses, or one a
// file cannot lose safely, is pinned and it all is worked out again.
func fixtureCut(files, code []*goFile, roots, pinned map[string]bool) (map[string]bool, []cutFile) {
	for {
		want := map[string]bool{}
		for n := range roots {
			if !pinned[n] && declaredIn(code, n) {
				want[n] = true
			}
		}
		if len(want) == 0 {
			return want, nil
		}
		helpers(files, want, pinned)
		changed := false
		for _, gf := range code {
			for _, d := range gf.f.Decls {
				names := declNames(d)
				if !isTarget(d, want) || !slices.ContainsFunc(names, func(n string) bool { return roots[n] }) {
					continue
				}
				if _, out := uses(files, gf, d, names, want); out > 0 {
					for _, n := range names {
						pinned[n], changed = true, true
					}
				}
			}
		}
		var outs []cutFile
		for _, gf := range code {
			if changed {
				break
			}
			out, removed, why := gf.without(want)
			if why != "" {
				for _, n := range removed {
					pinned[n], changed = true, true
				}
			} else if out != nil {
				outs = append(outs, cutFile{gf, out})
			}
		}
		if !changed {
			return want, outs
		}
	}
}

// keptRoots are the declarations ("file: name") the removed test code selected that stay.
func keptRoots(code []*goFile, roots, want map[string]bool) []string {
	var out []string
	for _, gf := range code {
		for _, d := range gf.f.Decls {
			names := declNames(d)
			if !isTarget(d, want) && slices.ContainsFunc(names, func(n string) bool { return roots[n] }) {
				out = append(out, gf.rel+": "+strings.Join(names, ", "))
			}
		}
	}
	return out
}

func declaredIn(files []*goFile, n string) bool {
	for _, gf := range files {
		for _, d := range gf.f.Decls {
			if slices.Contains(declNames(d), n) {
				return true
			}
		}
	}
	return false
}

// outsideUses are the names of package imp that the tree's files outside dir select, as
// they are now (the withheld tests gone); false when the package is not fixtures only
// tests use (non-test code imports it) or a use cannot be seen (a dot import, a file
// unread).
func outsideUses(root string, tg treeGo, imp, dir, pkgName string) (map[string]bool, bool) {
	used := map[string]bool{}
	for d, rels := range tg.files {
		if d == dir {
			continue
		}
		for _, rel := range rels {
			b, _, err := regular(root, rel)
			if err != nil {
				return nil, false
			}
			f, err := parser.ParseFile(token.NewFileSet(), rel, b, parser.SkipObjectResolution)
			if err != nil {
				continue // it does not build: it uses nothing
			}
			for _, is := range f.Imports {
				if p, _ := strconv.Unquote(is.Path.Value); p != imp {
					continue
				}
				name := importName(is, pkgName)
				if name == "." || !strings.HasSuffix(rel, "_test.go") {
					return nil, false
				}
				ast.Inspect(f, func(n ast.Node) bool {
					if s, ok := n.(*ast.SelectorExpr); ok {
						if x, ok := s.X.(*ast.Ident); ok && x.Name == name {
							used[s.Sel.Name] = true
						}
					}
					return true
				})
			}
		}
	}
	return used, true
}

func importName(is *ast.ImportSpec, pkgName string) string {
	if is.Name != nil {
		return is.Name.Name
	}
	return pkgName
}

func parseGo(root, rel string) (*goFile, error) {
	src, mode, err := regular(root, rel)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	return &goFile{rel: rel, src: src, mode: mode, fset: fset, f: f}, nil
}

// patchedDirs are the folders of the files a unified diff changes.
func patchedDirs(patch string) map[string]bool {
	dirs := map[string]bool{}
	for _, l := range strings.Split(patch, "\n") {
		for _, p := range []string{"--- a/", "+++ b/"} {
			if rest, ok := strings.CutPrefix(l, p); ok {
				rest, _, _ = strings.Cut(rest, "\t")
				dirs[path.Dir(strings.TrimSpace(rest))] = true
			}
		}
	}
	return dirs
}
