package withhold

import (
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
)

// goTests withholds the Go tests ids ("<import path> <TestName>") under root, package by
// package, and then what only the removed code used of the fixtures packages it imported
// (patch, the task's diff, says which packages are under test).
func goTests(root string, spec task.TestSpec, ids []string, patch string, res *Result) error {
	fx := &goFixtures{dirs: map[string]bool{}}
	byPkg := map[string]map[string][]string{} // import path → name → ids (one, but kept general)
	for _, id := range ids {
		pkg, name := env.SplitID(id)
		if byPkg[pkg] == nil {
			byPkg[pkg] = map[string][]string{}
		}
		byPkg[pkg][name] = append(byPkg[pkg][name], id)
	}
	pkgs := make([]string, 0, len(byPkg))
	for p := range byPkg {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		names := byPkg[pkg]
		all := func() []string {
			var out []string
			for _, ids := range names {
				out = append(out, ids...)
			}
			return out
		}
		dir, why := goPackageDir(root, spec, pkg)
		if why != "" {
			res.keep(all(), why)
			continue
		}
		fx.dirs[dir] = true
		if err := goPackage(root, dir, names, res, fx); err != nil {
			return err
		}
	}
	return fx.withhold(root, patchedDirs(patch), res)
}

// goPackageDir is the folder (slash path under root) of the package pkg, or why not.
func goPackageDir(root string, spec task.TestSpec, pkg string) (string, string) {
	mod := spec.ModuleDir(pkg)
	b, _, err := regular(root, path.Join(mod, "go.mod"))
	if err != nil {
		return "", "no go.mod for its package: " + err.Error()
	}
	mp := env.ModulePath(b)
	switch {
	case mp == "":
		return "", "its module's go.mod names no module"
	case pkg == mp:
		return mod, ""
	case strings.HasPrefix(pkg, mp+"/"):
		return path.Join(mod, strings.TrimPrefix(pkg, mp+"/")), ""
	}
	return "", "its package is not in module " + mp
}

// goFile is one _test.go file of a package being withheld.
type goFile struct {
	rel  string // slash path under root
	src  []byte
	mode os.FileMode
	fset *token.FileSet
	f    *ast.File
}

// goPackage removes the functions names (test name → ids) from the _test.go files in dir,
// noting in fx what the removed code selected from its imports.
func goPackage(root, dir string, names map[string][]string, res *Result, fx *goFixtures) error {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
	if err != nil {
		for _, ids := range names {
			res.keep(ids, "its package's folder: "+err.Error())
		}
		return nil
	}
	var files []*goFile
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		rel := path.Join(dir, e.Name())
		src, mode, err := regular(root, rel)
		if err != nil { // a folder on the way is a link: nothing here is touched
			for _, ids := range names {
				res.keep(ids, err.Error())
			}
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			continue // go test could not have run it either; a test declared here is "not found"
		}
		files = append(files, &goFile{rel: rel, src: src, mode: mode, fset: fset, f: f})
	}
	want := map[string]bool{}
	for n := range names {
		want[n] = true
	}
	// A test that other code names (a test calling another, a table of test functions)
	// stays, or what names it would not compile; and so on until nothing changes.
	for {
		refs := referenced(files, want)
		if len(refs) == 0 {
			break
		}
		for n, where := range refs {
			delete(want, n)
			res.keep(names[n], "other code refers to it ("+where+")")
		}
	}
	// The tests, and the helpers only they use, out of every file; a file where that cannot
	// be done safely keeps its tests, and the helpers are worked out again without them (a
	// test kept must keep what it uses, in any file).
	type edit struct {
		gf      *goFile
		out     []byte
		removed []string
	}
	var edits []edit
	var all map[string]bool
	// pinned are the helpers and types that must stay: declared in a file that keeps its
	// code, or the type of a method such a file keeps. What they use stays with them (a
	// helper removed elsewhere would leave a call to nothing, a type its methods).
	pinned := map[string]bool{}
	for {
		all = maps.Clone(want)
		helpers(files, all, pinned)
		edits = edits[:0]
		failed := false
		for _, gf := range files {
			out, removed, why := gf.without(all)
			if why != "" {
				for _, n := range removed {
					if want[n] {
						delete(want, n)
						res.keep(names[n], why)
						failed = true
					} else if !pinned[n] {
						pinned[n], failed = true, true
					}
				}
				for _, d := range gf.f.Decls {
					if fd, ok := d.(*ast.FuncDecl); ok && isTarget(fd, all) && !pinned[recvType(fd)] {
						pinned[recvType(fd)], failed = true, true
					}
				}
				continue
			}
			if out != nil { // something goes (perhaps only methods, whose type is elsewhere)
				edits = append(edits, edit{gf, out, removed})
			}
		}
		if !failed {
			break
		}
	}
	found := map[string]bool{}
	for _, e := range edits {
		if err := write(root, e.gf.rel, e.out, e.gf.mode); err != nil {
			return err
		}
		res.goLiterals(e.gf, e.gf.ranges(all))
		fx.note(e.gf, e.gf.ranges(all))
		for _, n := range e.removed {
			found[n] = true
			res.Withheld = append(res.Withheld, names[n]...)
		}
	}
	for n := range want {
		if !found[n] {
			res.keep(names[n], "no top-level function of that name in a _test.go file of "+dir)
		}
	}
	if len(found) > 0 {
		res.Shared = append(res.Shared, shared(files, all)...)
	}
	return goldenFiles(root, dir, files, all, res)
}

// shared are the package-level declarations of files ("file: name"), methods included,
// that the code of removed uses and that stay.
func shared(files []*goFile, removed map[string]bool) []string {
	var out []string
	for _, gf := range files {
		for _, d := range gf.f.Decls {
			names := declNames(d)
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
				names = []string{fd.Name.Name}
			}
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				continue // a type holds no values; its methods are reported on their own
			}
			if len(names) == 0 || isTarget(d, removed) {
				continue
			}
			if in, _ := uses(files, gf, d, names, removed); in > 0 {
				out = append(out, gf.rel+": "+strings.Join(names, ", "))
			}
		}
	}
	return out
}

// goldenFiles removes the files under dir that the removed code names in a string literal,
// a constant path (constPath) or a //go:embed line ("testdata/add.golden") and the rest of
// the package's tests do not: expected outputs. A name computed at run time
// (t.Name()+".golden") or an embed glob is not followed.
func goldenFiles(root, dir string, files []*goFile, removed map[string]bool, res *Result) error {
	named := map[string]bool{} // by the removed code
	kept := map[string]bool{}  // by the rest
	for _, gf := range files {
		rs := gf.ranges(removed)
		ast.Inspect(gf.f, func(n ast.Node) bool {
			e, ok := n.(ast.Expr)
			if !ok {
				return true
			}
			v, ok := constPath(e)
			if !ok || v == "" || path.IsAbs(v) || strings.HasPrefix(path.Clean(v), "..") {
				return true
			}
			if inRanges(rs, gf.offset(e.Pos())) {
				named[path.Clean(v)] = true
			} else {
				kept[path.Clean(v)] = true
			}
			return true
		})
		// //go:embed's patterns are files too: of the variable below, removed or not.
		for _, cg := range gf.f.Comments {
			for _, c := range cg.List {
				args, ok := strings.CutPrefix(c.Text, "//go:embed ")
				if !ok {
					continue
				}
				for _, v := range strings.Fields(args) {
					if u, err := strconv.Unquote(v); err == nil {
						v = u
					}
					if inRanges(rs, gf.offset(c.Pos())) {
						named[path.Clean(v)] = true
					} else {
						kept[path.Clean(v)] = true
					}
				}
			}
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(named)) {
		if kept[rel] || strings.HasSuffix(rel, ".go") {
			continue
		}
		p := path.Join(dir, rel)
		b, _, err := regular(root, p)
		if err != nil {
			continue // not a file of the tree (a string that only looks like a path)
		}
		res.fileLiterals(b)
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			return err
		}
		res.Files = append(res.Files, p)
	}
	return nil
}

// constPath is the string e always is: a string literal, a concatenation of them, or
// filepath.Join or path.Join of them ("testdata" + "/add.golden", filepath.Join("testdata",
// "add.golden")). Each part is seen on its own too, as a name of its own.
func constPath(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		v, err := strconv.Unquote(e.Value)
		return v, err == nil
	case *ast.ParenExpr:
		return constPath(e.X)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok := constPath(e.X)
		y, ok2 := constPath(e.Y)
		return x + y, ok && ok2
	case *ast.CallExpr:
		sel, ok := e.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Join" || e.Ellipsis.IsValid() {
			return "", false
		}
		if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "filepath" && pkg.Name != "path" {
			return "", false
		}
		parts := make([]string, len(e.Args))
		for i, a := range e.Args {
			v, ok := constPath(a)
			if !ok {
				return "", false
			}
			parts[i] = v
		}
		return path.Join(parts...), true
	}
	return "", false
}

// declNames are the names a top-level declaration removable by name declares: a function
// (not a method), a var or const declaration, or a type declaration (its methods go with
// it: see isTarget); nil for the others (imports, methods).
func declNames(d ast.Decl) []string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			return []string{d.Name.Name}
		}
	case *ast.GenDecl:
		var out []string
		switch d.Tok {
		case token.VAR, token.CONST:
			for _, s := range d.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					out = append(out, n.Name)
				}
			}
		case token.TYPE:
			for _, s := range d.Specs {
				out = append(out, s.(*ast.TypeSpec).Name.Name)
			}
		}
		return out
	}
	return nil
}

// recvType is the name of the type a method is declared on ("" for a function): T for
// (s T), (s *T), (s *T[P]).
func recvType(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) != 1 {
		return ""
	}
	e := fd.Recv.List[0].Type
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// isTarget: d declares names, all in want ("_" aside); or d is a method of a type in
// want. A type's methods go with it: a suite (a type whose Test methods a test function
// runs by reflection, as testify's suite.Run does) has them named nowhere, and they are
// what asserts.
func isTarget(d ast.Decl, want map[string]bool) bool {
	if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
		t := recvType(fd)
		return t != "" && want[t]
	}
	wanted := 0
	for _, n := range declNames(d) {
		switch {
		case want[n]:
			wanted++
		case n != "_":
			return false
		}
	}
	return wanted > 0
}

// declRange is d's whole lines, its doc comment included.
func (gf *goFile) declRange(d ast.Decl) [2]int {
	start := d.Pos()
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Doc != nil {
			start = d.Doc.Pos()
		}
	case *ast.GenDecl:
		if d.Doc != nil {
			start = d.Doc.Pos()
		}
	}
	return blanksAfter(gf.src, wholeLines(gf.src, gf.offset(start), gf.offset(d.End())))
}

// entryPoint: a function go test calls by its name, never a helper.
func entryPoint(name string) bool {
	for _, p := range []string{"Test", "Benchmark", "Example", "Fuzz"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return name == "init"
}

// helpers adds to want the package-level functions, variables, constants and types (with
// their methods) of the test files, pinned ones aside, that only the code being removed
// uses (a table of cases, a helper returning the expected value, a suite): left behind,
// they would show what the withheld tests assert. An identifier of the same name anywhere
// else (a local variable too) keeps one.
func helpers(files []*goFile, want, pinned map[string]bool) {
	for changed := true; changed; {
		changed = false
		for _, gf := range files {
			for _, d := range gf.f.Decls {
				names := declNames(d)
				if len(names) == 0 || isTarget(d, want) {
					continue
				}
				if fd, ok := d.(*ast.FuncDecl); ok && entryPoint(fd.Name.Name) {
					continue
				}
				if slices.ContainsFunc(names, func(n string) bool { return pinned[n] }) {
					continue
				}
				if in, out := uses(files, gf, d, names, want); in > 0 && out == 0 {
					for _, n := range names {
						if n != "_" {
							want[n] = true
						}
					}
					changed = true
				}
			}
		}
	}
}

// uses counts the identifiers named as names outside d itself (and, for a type, outside
// its methods, in any file): in code being removed (want's declarations), and elsewhere.
func uses(files []*goFile, home *goFile, d ast.Decl, names []string, want map[string]bool) (in, out int) {
	isType := false
	if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
		isType = true
	}
	for _, gf := range files {
		removed := gf.ranges(want)
		var own [][2]int
		if gf == home {
			own = append(own, home.declRange(d))
		}
		if isType {
			for _, md := range gf.f.Decls {
				if fd, ok := md.(*ast.FuncDecl); ok && fd.Recv != nil && slices.Contains(names, recvType(fd)) {
					own = append(own, gf.declRange(fd))
				}
			}
		}
		ast.Inspect(gf.f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || !slices.Contains(names, id.Name) || id.Name == "_" {
				return true
			}
			off := gf.offset(id.Pos())
			switch {
			case inRanges(own, off): // its own declaration, or its methods
			case inRanges(removed, off):
				in++
			default:
				out++
			}
			return true
		})
	}
	return in, out
}

// referenced are the names in want that an identifier outside their own declarations
// uses, each with a place.
func referenced(files []*goFile, want map[string]bool) map[string]string {
	refs := map[string]string{}
	for _, gf := range files {
		inside := gf.ranges(want)
		ast.Inspect(gf.f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || !want[id.Name] {
				return true
			}
			if !inRanges(inside, gf.offset(id.Pos())) {
				refs[id.Name] = gf.fset.Position(id.Pos()).String()
			}
			return true
		})
	}
	return refs
}

// ranges are the byte ranges of the declarations of want in gf, doc comments and whole
// lines included.
func (gf *goFile) ranges(want map[string]bool) [][2]int {
	var rs [][2]int
	for _, d := range gf.f.Decls {
		if isTarget(d, want) {
			rs = append(rs, gf.declRange(d))
		}
	}
	return sortRanges(rs)
}

func (gf *goFile) offset(p token.Pos) int { return gf.fset.Position(p).Offset }

// without is gf's text with the functions of want removed and the imports that only they
// used, and the names removed; why is set (and out nil) when that cannot be done safely.
func (gf *goFile) without(want map[string]bool) (out []byte, removed []string, why string) {
	rs := gf.ranges(want)
	if len(rs) == 0 {
		return nil, nil, ""
	}
	for _, d := range gf.f.Decls {
		if isTarget(d, want) {
			for _, n := range declNames(d) {
				if n != "_" {
					removed = append(removed, n)
				}
			}
		}
	}
	in := func(p token.Pos) bool { return inRanges(rs, gf.offset(p)) }
	// Package names as selectors use them (x.Y), before and after the cut.
	before, after := map[string]bool{}, map[string]bool{}
	ast.Inspect(gf.f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := s.X.(*ast.Ident); ok {
				before[x.Name] = true
				if !in(x.Pos()) {
					after[x.Name] = true
				}
			}
		}
		return true
	})
	lost := map[string]bool{} // names only the removed code used
	for n := range before {
		if !after[n] {
			lost[n] = true
		}
	}
	for _, d := range gf.f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		for _, s := range gd.Specs {
			is := s.(*ast.ImportSpec)
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return nil, removed, "an import it cannot read"
			}
			name := assumedName(p)
			if is.Name != nil {
				name = is.Name.Name
			}
			if name == "_" || name == "." || !lost[name] {
				continue // still used, or used for its effects, or its name is not the path's
			}
			delete(lost, name)
			r, ok := gf.importRange(gd, is)
			if !ok {
				return nil, removed, "an unused import shares its line with another"
			}
			rs = append(rs, r)
		}
	}
	for n := range lost {
		// A selector base the removed code used and the rest does not: a package whose
		// name is not its path's (its import would be left unused), or a variable.
		if !declaredHere(gf.f, n) {
			return nil, removed, "the removed code used " + n + ", maybe an import named otherwise than its path"
		}
	}
	out = apply(gf.src, removals(sortRanges(rs)))
	if _, err := parser.ParseFile(token.NewFileSet(), gf.rel, out, parser.SkipObjectResolution); err != nil {
		return nil, removed, "the file would not parse without it"
	}
	if f, err := format.Source(out); err == nil {
		out = f // an import block left empty, as gofmt writes it
	}
	return out, removed, ""
}

// importRange is the whole lines of is (its declaration's, when it is alone in one), or
// false when another import shares them.
func (gf *goFile) importRange(gd *ast.GenDecl, is *ast.ImportSpec) ([2]int, bool) {
	if !gd.Lparen.IsValid() {
		start := gd.Pos()
		if gd.Doc != nil {
			start = gd.Doc.Pos()
		}
		return wholeLines(gf.src, gf.offset(start), gf.offset(gd.End())), true
	}
	start, end := is.Pos(), is.End()
	if is.Doc != nil {
		start = is.Doc.Pos()
	}
	if is.Comment != nil {
		end = is.Comment.End()
	}
	line := func(p token.Pos) int { return gf.fset.Position(p).Line }
	for _, o := range gd.Specs {
		if o != is && line(o.End()) >= line(start) && line(o.Pos()) <= line(end) {
			return [2]int{}, false
		}
	}
	if line(gd.Lparen) == line(start) || line(gd.Rparen) == line(end) {
		return [2]int{}, false
	}
	return wholeLines(gf.src, gf.offset(start), gf.offset(end)), true
}

// declaredHere: n is declared somewhere in f other than as a package (a variable, a
// parameter, a type): a selector on it needs no import. Unsure means false.
func declaredHere(f *ast.File, n string) bool {
	found := false
	ast.Inspect(f, func(x ast.Node) bool {
		switch d := x.(type) {
		case *ast.ValueSpec:
			for _, id := range d.Names {
				found = found || id.Name == n
			}
		case *ast.Field:
			for _, id := range d.Names {
				found = found || id.Name == n
			}
		case *ast.AssignStmt:
			if d.Tok == token.DEFINE {
				for _, e := range d.Lhs {
					if id, ok := e.(*ast.Ident); ok && id.Name == n {
						found = true
					}
				}
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{d.Key, d.Value} {
				if id, ok := e.(*ast.Ident); ok && id.Name == n {
					found = true
				}
			}
		case *ast.TypeSpec:
			found = found || d.Name.Name == n
		}
		return !found
	})
	return found
}

// assumedName is the name a package is imported by when its import names none, as gofmt's
// tools guess it: the path's last element, a major version suffix (v2) and a "go-" prefix
// skipped, cut at the first character not allowed in an identifier. The guess is only
// used for an import whose name the removed code used and the rest does not, so a wrong
// one leaves the import (and the tests: "named otherwise than its path").
func assumedName(p string) string {
	base := path.Base(p)
	if strings.HasPrefix(base, "v") {
		if _, err := strconv.Atoi(base[1:]); err == nil && path.Dir(p) != "." {
			base = path.Base(path.Dir(p))
		}
	}
	base = strings.TrimPrefix(base, "go-")
	if i := strings.IndexFunc(base, func(r rune) bool { return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) }); i >= 0 {
		base = base[:i]
	}
	return base
}
