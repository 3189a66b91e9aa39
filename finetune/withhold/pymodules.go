package withhold

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/frognano/frognano/internal/syntax"
)

// pyRun is what withholding a task's Python tests gathers across its files: the
// declarations of local helper modules and the data files the removed code used, which
// go once every test file is done (what is left of the tree decides whether they may).
type pyRun struct {
	wants map[string]map[string]bool // helper module (slash path) → names removed code used
	paths map[string]bool            // paths the removed code spelled (pyPaths)
	tests map[string]bool            // the withheld tests' files
}

// pyImportEdits are the edits to a test file that drop the imports of local modules
// only the removed code (in rs) used — left, they would fail once the module loses what
// they import — and note in run what the removed code took from each module.
func pyImportEdits(root, file string, module syntax.Node, rs [][2]int, run *pyRun) []edit {
	var ids []syntax.Node
	module.Walk(func(n syntax.Node) bool {
		if n.Kind() == "identifier" {
			ids = append(ids, n)
		}
		return true
	})
	// A binding's uses: in removed code, and elsewhere (import statements aside).
	uses := func(stmt syntax.Node, name string) (in, out int) {
		for _, id := range ids {
			if id.Text() != name || (id.Start() >= stmt.Start() && id.Start() < stmt.End()) {
				continue
			}
			if inRanges(rs, id.Start()) {
				in++
			} else if !inImport(id) {
				out++
			}
		}
		return in, out
	}
	var edits []edit
	for _, stmt := range module.NamedChildren() {
		binds := pyBindings(root, file, stmt)
		if len(binds) == 0 {
			continue
		}
		var keep []string
		dropped := false
		for _, b := range binds {
			if b.mod == "" {
				keep = append(keep, b.text)
				continue
			}
			in, out := uses(stmt, b.first())
			if in > 0 {
				want := run.want(b.mod)
				if b.name != "" {
					want[b.name] = true
				} else {
					maps.Copy(want, attributes(module, rs, b.bound))
				}
			}
			if in > 0 && out == 0 {
				dropped = true
				continue
			}
			keep = append(keep, b.text)
		}
		switch {
		case !dropped:
		case len(keep) == 0:
			r := wholeLines(module.Tree().Source(), stmt.Start(), stmt.End())
			edits = append(edits, edit{r[0], r[1], ""})
		default:
			head := "import "
			if stmt.Kind() == "import_from_statement" {
				head = "from " + stmt.Field("module_name").Text() + " import "
			}
			edits = append(edits, edit{stmt.Start(), stmt.End(), head + strings.Join(keep, ", ")})
		}
	}
	return edits
}

func (run *pyRun) want(mod string) map[string]bool {
	if run.wants[mod] == nil {
		run.wants[mod] = map[string]bool{}
	}
	return run.wants[mod]
}

// inImport: n is part of an import statement.
func inImport(n syntax.Node) bool {
	for p := n.Parent(); p.Valid(); p = p.Parent() {
		if k := p.Kind(); k == "import_statement" || k == "import_from_statement" {
			return true
		}
	}
	return false
}

// attributes are the names the removed code (rs) reads off bound (a module's name as the
// file binds it: "cases", "tests.cases"): cases.ADD gives ADD.
func attributes(module syntax.Node, rs [][2]int, bound string) map[string]bool {
	out := map[string]bool{}
	module.Walk(func(n syntax.Node) bool {
		if n.Kind() == "attribute" && inRanges(rs, n.Start()) && n.Field("object").Text() == bound {
			out[n.Field("attribute").Text()] = true
		}
		return true
	})
	return out
}

// pyBinding is one name an import statement binds: text is its source ("ADD as add"),
// mod the local module file it comes from ("" when not one), name what it takes from mod
// ("" for mod itself), bound the name code uses for it ("add", "tests.cases").
type pyBinding struct {
	text, mod, name, bound string
}

// first is the identifier the binding puts in the module's namespace.
func (b pyBinding) first() string {
	first, _, _ := strings.Cut(b.bound, ".")
	return first
}

// pyBindings are the names a module-level import statement binds, each with the local
// module it names when there is one; nil for another statement or a star import.
func pyBindings(root, file string, stmt syntax.Node) []pyBinding {
	var out []pyBinding
	switch stmt.Kind() {
	case "import_statement":
		for _, n := range stmt.FieldAll("name") {
			dotted, bound := n.Text(), n.Text()
			if n.Kind() == "aliased_import" {
				dotted, bound = n.Field("name").Text(), n.Field("alias").Text()
			}
			out = append(out, pyBinding{text: n.Text(), mod: pyResolve(root, file, "", dotted), bound: bound})
		}
	case "import_from_statement":
		from := stmt.Field("module_name")
		prefix, dotted := "", from.Text()
		if from.Kind() == "relative_import" {
			dotted = strings.TrimLeft(from.Text(), ".")
			prefix = from.Text()[:len(from.Text())-len(dotted)]
		}
		mod := pyResolve(root, file, prefix, dotted)
		for _, n := range stmt.FieldAll("name") {
			name, bound := n.Text(), n.Text()
			if n.Kind() == "aliased_import" {
				name, bound = n.Field("name").Text(), n.Field("alias").Text()
			}
			b := pyBinding{text: n.Text(), bound: bound}
			sub := dotted + "." + name
			if dotted == "" {
				sub = name
			}
			if m := pyResolve(root, file, prefix, sub); m != "" {
				b.mod = m // from tests import cases: the module itself
			} else if mod != "" {
				b.mod, b.name = mod, name
			}
			out = append(out, b)
		}
	}
	return out
}

// pyResolve is the local module file (slash path) that a test file's import of dotted
// (with relative prefix "." or "..", or none) loads, "" when none is a regular .py file of
// the tree: a relative import from the test's folder; an absolute one from the first
// folder above the test without an __init__.py (what pytest puts on sys.path) and then
// the repository root. A package's __init__.py is not followed, nor a module outside the
// folders of the tests (inTestFolder).
func pyResolve(root, file, prefix, dotted string) string {
	if dotted == "" {
		return ""
	}
	rel := strings.ReplaceAll(dotted, ".", "/") + ".py"
	var dirs []string
	if prefix != "" {
		dir := path.Dir(file)
		for range len(prefix) - 1 {
			dir = path.Dir(dir)
		}
		dirs = []string{dir}
	} else {
		dir := path.Dir(file)
		for dir != "." {
			if _, _, err := regular(root, path.Join(dir, "__init__.py")); err != nil {
				break
			}
			dir = path.Dir(dir)
		}
		dirs = []string{dir, "."}
	}
	for _, d := range dirs {
		p := path.Join(d, rel)
		if _, _, err := regular(root, p); err == nil {
			if !inTestFolder(p) {
				return "" // the code under test (from calc import add), not a helper
			}
			return p
		}
	}
	return ""
}

// pyModules takes out of each helper module what only the removed code took from it:
// its module-level declarations of those names (and the ones only they use) that no other
// Python file of the tree mentions (an identifier, a string's whole value), or the whole
// module when no other file mentions its name and it is not a test file, a conftest.py or
// an __init__.py. What the removed code took and stays is named in Result.Shared.
func pyModules(root string, run *pyRun, res *Result) error {
	if len(run.wants) == 0 {
		return nil
	}
	mentions, err := pyMentions(root)
	if err != nil {
		return err
	}
	for _, mod := range slices.Sorted(maps.Keys(run.wants)) {
		if len(run.wants[mod]) == 0 || run.tests[mod] {
			continue
		}
		others := map[string]bool{}
		for f, m := range mentions {
			if f != mod {
				maps.Copy(others, m)
			}
		}
		if err := pyModule(root, mod, run.wants[mod], others, res); err != nil {
			return err
		}
	}
	return nil
}

func pyModule(root, mod string, want, others map[string]bool, res *Result) error {
	src, mode, err := regular(root, mod)
	if err != nil {
		return nil
	}
	tree, err := syntax.Parse(syntax.Python, src)
	if err != nil {
		return err
	}
	defer tree.Close()
	if tree.HasError() {
		return nil
	}
	base, stem := path.Base(mod), strings.TrimSuffix(path.Base(mod), ".py")
	whole := !namesModule(others, stem) && base != "conftest.py" && base != "__init__.py" &&
		!strings.HasPrefix(base, "test_") && !strings.HasSuffix(stem, "_test")
	if whole {
		res.pyLiterals(tree.Root())
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(mod))); err != nil {
			return err
		}
		res.Files = append(res.Files, mod)
		return pyBytecode(root, mod, res)
	}
	gone, shared := pyModuleDecls(tree.Root(), want, others)
	for _, s := range shared {
		res.Shared = append(res.Shared, mod+": "+s)
	}
	if len(gone) == 0 {
		return nil
	}
	var rs [][2]int
	for _, n := range gone {
		rs = append(rs, blanksAfter(src, withComments(src, wholeLines(src, n.Start(), n.End()))))
	}
	done, err := pyRemove(root, mod, src, mode, rs, gone, res)
	if err == nil && !done { // it would not parse: all it gave stays
		res.Shared = append(res.Shared, mod+": "+strings.Join(slices.Sorted(maps.Keys(want)), ", "))
	}
	return err
}

// pyModuleDecls are the module-level declarations of module to remove: those declaring a
// name of want or used by one removed, that no other file (others) nor the rest of the
// module mentions; and the names of want declared by one that stays.
func pyModuleDecls(module syntax.Node, want, others map[string]bool) (gone []syntax.Node, shared []string) {
	type decl struct {
		node  syntax.Node
		names []string
	}
	var decls []decl
	for _, c := range module.NamedChildren() {
		if names := pyDeclared(c); len(names) > 0 {
			decls = append(decls, decl{c, names})
		}
	}
	removed := map[int]bool{}
	inside := func(off int) bool {
		for _, d := range decls {
			if removed[d.node.Start()] && off >= d.node.Start() && off < d.node.End() {
				return true
			}
		}
		return false
	}
	for changed := true; changed; {
		changed = false
		for _, d := range decls {
			if removed[d.node.Start()] {
				continue
			}
			in, out := false, false
			for _, n := range d.names {
				in = in || want[n]
				out = out || others[n]
			}
			module.Walk(func(n syntax.Node) bool {
				if k := n.Kind(); (k == "identifier" || k == "string") && slices.Contains(d.names, strings.Trim(n.Text(), `"'`)) &&
					(n.Start() < d.node.Start() || n.Start() >= d.node.End()) {
					if inside(n.Start()) {
						in = true
					} else {
						out = true
					}
				}
				return true
			})
			if in && !out {
				removed[d.node.Start()], changed = true, true
			}
		}
	}
	for _, d := range decls {
		if removed[d.node.Start()] {
			gone = append(gone, d.node)
		} else if slices.ContainsFunc(d.names, func(n string) bool { return want[n] }) {
			shared = append(shared, strings.Join(d.names, ", "))
		}
	}
	return gone, shared
}

// pyMentions are, by Python file of root (slash path), the names it mentions (mention);
// folders that are hidden, node_modules or __pycache__ are skipped, as are links.
func pyMentions(root string) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	err := walkPython(root, func(rel string, t *syntax.Tree) error {
		m := map[string]bool{}
		t.Root().Walk(func(n syntax.Node) bool {
			mention(m, n)
			return true
		})
		out[rel] = m
		return nil
	})
	return out, err
}

// walkPython calls f with the slash path and syntax tree of each Python file walkTree
// visits under root (caches skipped); a file that cannot be read as a regular file is
// passed over. The tree is closed when f returns.
func walkPython(root string, f func(rel string, t *syntax.Tree) error) error {
	return walkTree(root, false, func(rel string) error {
		if !strings.HasSuffix(rel, ".py") {
			return nil
		}
		b, _, err := regular(root, rel)
		if err != nil {
			return nil
		}
		t, err := syntax.Parse(syntax.Python, b)
		if err != nil {
			return err
		}
		defer t.Close()
		return f(rel, t)
	})
}

// walkTree calls f with the slash path of each regular file under root, skipping .git
// and node_modules, and (unless caches) hidden folders and __pycache__.
func walkTree(root string, caches bool, f func(rel string) error) error {
	return filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			n := d.Name()
			if p != root && (n == ".git" || n == "node_modules" || !caches && (strings.HasPrefix(n, ".") || n == "__pycache__")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		return f(filepath.ToSlash(rel))
	})
}

// namesModule: mentions hold the module stem names, as a name (import cases, from tests
// import cases) or in a string (pytest_plugins = ["tests.cases"], "tests/cases.py").
func namesModule(mentions map[string]bool, stem string) bool {
	if mentions[stem] || mentions[stem+".py"] {
		return true
	}
	for m := range mentions {
		if strings.HasSuffix(m, "."+stem) || strings.HasSuffix(m, "/"+stem+".py") || strings.HasSuffix(m, "/"+stem) {
			return true
		}
	}
	return false
}
