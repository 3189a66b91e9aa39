package withhold

import (
	"bytes"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/internal/syntax"
)

// pyTests withholds the pytest tests ids ("<file> <Class::test_name[param]>") under
// root, file by file.
func pyTests(root string, ids []string, res *Result) error {
	byFile := map[string][]string{}
	for _, id := range ids {
		file, _ := env.SplitID(id)
		byFile[file] = append(byFile[file], id)
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	used := map[string]map[string]bool{} // test file → the names its withheld code used
	run := &pyRun{wants: map[string]map[string]bool{}, paths: map[string]bool{}, tests: map[string]bool{}}
	for _, file := range files {
		used[file] = map[string]bool{}
		run.tests[file] = true
		if err := pyFile(root, file, byFile[file], res, used[file], run); err != nil {
			return err
		}
	}
	if err := pyConftests(root, used, res); err != nil {
		return err
	}
	// With the test files and conftests done, what is left decides what else may go.
	if err := pyModules(root, run, res); err != nil {
		return err
	}
	return pyDataFiles(root, run, res)
}

func pyFile(root, file string, ids []string, res *Result, used map[string]bool, run *pyRun) error {
	src, mode, err := regular(root, file)
	if err != nil {
		res.keep(ids, "its file: "+err.Error())
		return nil
	}
	tree, err := syntax.Parse(syntax.Python, src)
	if err != nil {
		return err
	}
	defer tree.Close()
	if tree.HasError() {
		res.keep(ids, "its file does not parse cleanly")
		return nil
	}
	defs := map[int]syntax.Node{} // by start: one function for all of a parametrized test's ids
	var found []string
	for _, id := range ids {
		_, name := env.SplitID(id)
		segs := strings.Split(name, "::")
		last := len(segs) - 1
		if i := strings.IndexByte(segs[last], '['); i >= 0 {
			segs[last] = segs[last][:i]
		}
		nodes := pyFind(tree.Root(), segs)
		if len(nodes) == 0 {
			res.keep([]string{id}, "no function of that name in "+file)
			continue
		}
		for _, n := range nodes {
			defs[n.Start()] = n
		}
		found = append(found, id)
	}
	if len(defs) == 0 {
		return nil
	}
	shared := pyHelpers(tree.Root(), defs)
	var rs [][2]int
	for _, n := range defs {
		rs = append(rs, blanksAfter(src, withComments(src, wholeLines(src, n.Start(), n.End()))))
	}
	rs = sortRanges(rs)
	edits := removals(rs)
	emptied(tree.Root(), rs, edits, src)
	imports := &pyRun{wants: map[string]map[string]bool{}}
	edits = append(edits, pyImportEdits(root, file, tree.Root(), rs, imports)...)
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	out := apply(src, edits)
	check, err := syntax.Parse(syntax.Python, out)
	if err != nil {
		return err
	}
	defer check.Close()
	if check.HasError() {
		res.keep(found, "the file would not parse without it")
		return nil
	}
	if err := write(root, file, out, mode); err != nil {
		return err
	}
	res.Withheld = append(res.Withheld, found...)
	for mod, names := range imports.wants {
		maps.Copy(run.want(mod), names)
	}
	for _, n := range defs {
		res.pyLiterals(n)
		pyPaths(n, run.paths)
		n.Walk(func(c syntax.Node) bool {
			if c.Kind() == "identifier" {
				used[c.Text()] = true
			}
			return true
		})
	}
	for _, n := range shared {
		res.Shared = append(res.Shared, file+": "+n)
	}
	return pyBytecode(root, file, res)
}

// pyBytecode removes the bytecode of file a repository committed (__pycache__/<name>.*.pyc,
// <name>.pyc): it holds the removed tests' constants.
func pyBytecode(root, file string, res *Result) error {
	dir, stem := path.Dir(file), strings.TrimSuffix(path.Base(file), ".py")
	cands := []string{path.Join(dir, stem+".pyc")}
	if entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(path.Join(dir, "__pycache__")))); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), stem+".") && strings.HasSuffix(e.Name(), ".pyc") {
				cands = append(cands, path.Join(dir, "__pycache__", e.Name()))
			}
		}
	}
	for _, rel := range cands {
		if _, _, err := regular(root, rel); err != nil {
			continue // none, or through a link
		}
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return err
		}
		res.Files = append(res.Files, rel)
	}
	return nil
}

// pyHelpers adds to defs the module-level assignments, functions and classes (not tests),
// and those of a class a removed method is in and of its bases in the module, that only
// code in defs uses: parametrize's cases, a helper returning the expected value. An
// identifier of the same name anywhere else keeps one; the names of those kept that code
// in defs uses are returned.
func pyHelpers(module syntax.Node, defs map[int]syntax.Node) []string {
	var ids []syntax.Node
	module.Walk(func(n syntax.Node) bool {
		if n.Kind() == "identifier" {
			ids = append(ids, n)
		}
		return true
	})
	inside := func(off int, n syntax.Node) bool { return off >= n.Start() && off < n.End() }
	sharedNames := map[int]string{}
	// The module's statements, and those of each class a removed method is in (its
	// attributes, its helper methods).
	stmts := module.NamedChildren()
	// Module-level classes by name: a test class's bases (a class of cases it inherits
	// attributes from) are read like it.
	classes := map[string]syntax.Node{}
	for _, c := range stmts {
		def := c
		if c.Kind() == "decorated_definition" {
			def = c.Field("definition")
		}
		if def.Kind() == "class_definition" {
			classes[def.Field("name").Text()] = def
		}
	}
	seen := map[int]bool{}
	var withBases func(n syntax.Node)
	withBases = func(n syntax.Node) {
		if seen[n.Start()] {
			return
		}
		seen[n.Start()] = true
		stmts = append(stmts, n.Field("body").NamedChildren()...)
		for _, b := range n.Field("superclasses").NamedChildren() {
			if base, ok := classes[b.Text()]; ok && b.Kind() == "identifier" {
				withBases(base)
			}
		}
	}
	module.Walk(func(n syntax.Node) bool {
		if n.Kind() == "class_definition" {
			for _, c := range n.Field("body").NamedChildren() {
				if _, ok := defs[c.Start()]; ok {
					withBases(n)
					break
				}
			}
		}
		return true
	})
	for changed := true; changed; {
		changed = false
		for _, c := range stmts {
			if _, done := defs[c.Start()]; done {
				continue
			}
			names := pyDeclared(c)
			if len(names) == 0 {
				continue
			}
			in, out := 0, 0
			for _, id := range ids {
				if !slices.Contains(names, id.Text()) || inside(id.Start(), c) {
					continue
				}
				removed := false
				for _, d := range defs {
					removed = removed || inside(id.Start(), d)
				}
				if removed {
					in++
				} else {
					out++
				}
			}
			if in > 0 && out == 0 {
				defs[c.Start()] = c
				changed = true
			}
			if in > 0 && out > 0 {
				sharedNames[c.Start()] = strings.Join(names, ", ")
			}
		}
	}
	var shared []string
	for start, n := range sharedNames {
		if _, removed := defs[start]; !removed {
			shared = append(shared, n)
		}
	}
	return shared
}

// pyDeclared are the names a statement of a module or class declares that may be a test's
// helper: an assignment to names, a function not named test…, a class not named Test…;
// nil for the others.
func pyDeclared(c syntax.Node) []string {
	def := c
	if c.Kind() == "decorated_definition" {
		def = c.Field("definition")
	}
	switch def.Kind() {
	case "function_definition":
		if name := def.Field("name").Text(); !strings.HasPrefix(name, "test") {
			return append([]string{name}, fixtureNames(c)...)
		}
	case "class_definition":
		if name := def.Field("name").Text(); !strings.HasPrefix(name, "Test") {
			return []string{name}
		}
	case "expression_statement":
		a := def.NamedChild(0)
		if def.NamedChildCount() != 1 || a.Kind() != "assignment" {
			return nil
		}
		var names []string
		left := a.Field("left")
		switch left.Kind() {
		case "identifier":
			names = append(names, left.Text())
		case "pattern_list", "tuple_pattern":
			for _, n := range left.NamedChildren() {
				if n.Kind() != "identifier" {
					return nil
				}
				names = append(names, n.Text())
			}
		}
		return names
	}
	return nil
}

// pyFind are the (decorated) definitions of the function segs names in the statements
// of container: a module, or a class's body, through the classes segs names first.
func pyFind(container syntax.Node, segs []string) []syntax.Node {
	var out []syntax.Node
	for _, c := range container.NamedChildren() {
		def := c
		if c.Kind() == "decorated_definition" {
			def = c.Field("definition")
		}
		if def.Field("name").Text() != segs[0] {
			continue
		}
		switch {
		case len(segs) == 1 && def.Kind() == "function_definition":
			out = append(out, c)
		case len(segs) > 1 && def.Kind() == "class_definition":
			out = append(out, pyFind(def.Field("body"), segs[1:])...)
		}
	}
	return out
}

// withComments widens the whole lines r upward over the comment lines just above it
// indented as its first line (what says what the test checks).
func withComments(src []byte, r [2]int) [2]int {
	indent := leading(src[r[0]:])
	for r[0] > 0 {
		prev := bytes.LastIndexByte(src[:r[0]-1], '\n') + 1
		line := src[prev : r[0]-1]
		if leading(line) != indent || !bytes.HasPrefix(line[len(indent):], []byte("#")) {
			break
		}
		r[0] = prev
	}
	return r
}

// leading is the indentation that begins b.
func leading(b []byte) string {
	return string(b[:len(b)-len(bytes.TrimLeft(b, " \t"))])
}

// emptied puts a `pass` into each class whose statements the edits all remove: the
// first removal in it becomes one, indented as the statement it replaces.
func emptied(n syntax.Node, rs [][2]int, edits []edit, src []byte) {
	n.Walk(func(c syntax.Node) bool {
		if c.Kind() != "class_definition" {
			return true
		}
		if inRanges(rs, c.Start()) {
			return false // removed whole (a helper class)
		}
		first, left := -1, false
		for _, s := range c.Field("body").NamedChildren() {
			if s.Kind() == "comment" {
				continue
			}
			i := sort.Search(len(rs), func(i int) bool { return rs[i][1] > s.Start() })
			if i < len(rs) && rs[i][0] <= s.Start() {
				if first < 0 {
					first = i
				}
				continue
			}
			left = true
		}
		if first >= 0 && !left {
			edits[first].text = leading(src[rs[first][0]:]) + "pass\n"
			return false
		}
		return true
	})
}

// fixtureNames are the names a decorated definition's decorators give it as a fixture
// (@pytest.fixture(name="expected")): the tests' parameters name it so, not by its
// function's name.
func fixtureNames(c syntax.Node) []string {
	if c.Kind() != "decorated_definition" {
		return nil
	}
	var out []string
	for _, d := range c.NamedChildren() {
		if d.Kind() != "decorator" || d.NamedChildCount() != 1 || d.NamedChild(0).Kind() != "call" {
			continue
		}
		call := d.NamedChild(0)
		fn := call.Field("function")
		if fn.Kind() == "attribute" {
			fn = fn.Field("attribute")
		}
		if fn.Text() != "fixture" {
			continue
		}
		for _, a := range call.Field("arguments").NamedChildren() {
			if a.Kind() != "keyword_argument" || a.Field("name").Text() != "name" {
				continue
			}
			if v := a.Field("value"); v.Kind() == "string" {
				if n := strings.Trim(v.Text(), `"'`); n != "" && !strings.ContainsAny(n, `"' `) {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// pyConftests removes from the conftest.py files at and above each withheld test's folder
// the fixtures that its withheld code named (a parameter) and that no other Python code
// under that conftest's folder names any more, as an identifier or a string's whole value
// (@pytest.mark.usefixtures("x"), request.getfixturevalue("x")): what a fixture returns
// may be the expected value. An autouse fixture stays (it serves tests that never name
// it), and so does a conftest.py that would not parse without it.
func pyConftests(root string, used map[string]map[string]bool, res *Result) error {
	want := map[string]map[string]bool{} // conftest.py → names the withheld code used
	for file, names := range used {
		if len(names) == 0 {
			continue
		}
		for dir := path.Dir(file); ; dir = path.Dir(dir) {
			c := path.Join(dir, "conftest.py")
			if want[c] == nil {
				want[c] = map[string]bool{}
			}
			for n := range names {
				want[c][n] = true
			}
			if dir == "." || dir == "/" {
				break
			}
		}
	}
	for _, c := range slices.Sorted(maps.Keys(want)) {
		if err := pyConftest(root, c, want[c], res); err != nil {
			return err
		}
	}
	return nil
}

func pyConftest(root, rel string, names map[string]bool, res *Result) error {
	src, mode, err := regular(root, rel)
	if err != nil {
		return nil // none there (or through a link)
	}
	tree, err := syntax.Parse(syntax.Python, src)
	if err != nil {
		return err
	}
	defer tree.Close()
	if tree.HasError() {
		return nil
	}
	// The candidates: module-level fixtures, not autouse, one of whose names the withheld
	// code used.
	type cand struct {
		node  syntax.Node
		names []string
	}
	var cands []cand
	for _, c := range tree.Root().NamedChildren() {
		if c.Kind() != "decorated_definition" || c.Field("definition").Kind() != "function_definition" {
			continue
		}
		fixture, autouse := false, false
		for _, d := range c.NamedChildren() {
			if d.Kind() == "decorator" && strings.Contains(d.Text(), "fixture") {
				fixture = true
				autouse = autouse || strings.Contains(strings.ReplaceAll(d.Text(), " ", ""), "autouse=True")
			}
		}
		ns := append([]string{c.Field("definition").Field("name").Text()}, fixtureNames(c)...)
		if fixture && !autouse && slices.ContainsFunc(ns, func(n string) bool { return names[n] }) {
			cands = append(cands, cand{c, ns})
		}
	}
	if len(cands) == 0 {
		return nil
	}
	// Every other mention of their names under the conftest's folder keeps them.
	mentioned := map[string]bool{}
	own := map[int]syntax.Node{}
	for _, c := range cands {
		own[c.node.Start()] = c.node
	}
	top := filepath.Join(root, filepath.FromSlash(path.Dir(rel)))
	err = walkPython(top, func(r string, t *syntax.Tree) error {
		self := r == path.Base(rel)
		t.Root().Walk(func(n syntax.Node) bool {
			if _, ok := own[n.Start()]; self && ok && n.Kind() == "decorated_definition" {
				return false // a candidate's own mentions count only if it stays (below)
			}
			mention(mentioned, n)
			return true
		})
		return nil
	})
	if err != nil {
		return err
	}
	// A candidate that stays keeps what it mentions (a fixture it takes), and so on.
	inner := make([]map[string]bool, len(cands))
	for i, c := range cands {
		inner[i] = map[string]bool{}
		c.node.Walk(func(n syntax.Node) bool {
			mention(inner[i], n)
			return true
		})
		delete(inner[i], c.node.Field("definition").Field("name").Text())
		for _, n := range c.names[1:] {
			delete(inner[i], n) // its name= string
		}
	}
	stays := make([]bool, len(cands))
	for changed := true; changed; {
		changed = false
		for i, c := range cands {
			if !stays[i] && slices.ContainsFunc(c.names, func(n string) bool { return mentioned[n] }) {
				stays[i], changed = true, true
				maps.Copy(mentioned, inner[i])
			}
		}
	}
	var rs [][2]int
	var gone []syntax.Node
	for i, c := range cands {
		if stays[i] {
			continue
		}
		rs = append(rs, blanksAfter(src, withComments(src, wholeLines(src, c.node.Start(), c.node.End()))))
		gone = append(gone, c.node)
	}
	if len(rs) == 0 {
		return nil
	}
	_, err = pyRemove(root, rel, src, mode, rs, gone, res)
	return err
}

// pyRemove takes the ranges rs (of the declarations gone) out of the Python file rel
// (src, read with regular) and writes it, with its literals noted for the issue's
// redaction and its committed bytecode removed; unless the result would not parse, when
// nothing is written and done is false.
func pyRemove(root, rel string, src []byte, mode os.FileMode, rs [][2]int, gone []syntax.Node, res *Result) (done bool, err error) {
	out := apply(src, removals(sortRanges(rs)))
	check, err := syntax.Parse(syntax.Python, out)
	if err != nil {
		return false, err
	}
	defer check.Close()
	if check.HasError() {
		return false, nil
	}
	if err := write(root, rel, out, mode); err != nil {
		return false, err
	}
	for _, n := range gone {
		res.pyLiterals(n)
	}
	return true, pyBytecode(root, rel, res)
}

// mention notes the name n is, when it is one: an identifier, or a string's whole value.
func mention(m map[string]bool, n syntax.Node) {
	switch n.Kind() {
	case "identifier":
		m[n.Text()] = true
	case "string":
		m[strings.Trim(n.Text(), `"'`)] = true
	}
}
