package withhold

import (
	"bytes"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/frognano/frognano/internal/syntax"
)

// pyPaths notes in paths what the removed code n spells as a relative path: a string's
// whole value ("tests/data/expected.json"), and the string parts of a path built with /
// (Path(__file__).parent / "data" / "expected.json") or os.path.join, joined with "/"
// (what the path starts from, the test's folder or a variable, is not read).
func pyPaths(n syntax.Node, paths map[string]bool) {
	add := func(parts []string) {
		if p := path.Clean(path.Join(parts...)); len(parts) > 0 && p != "." && !path.IsAbs(p) && !strings.HasPrefix(p, "..") {
			paths[p] = true
		}
	}
	n.Walk(func(c syntax.Node) bool {
		switch c.Kind() {
		case "string":
			if s, ok := pyString(c); ok {
				add([]string{s})
			}
		case "binary_operator":
			if c.Field("operator").Text() == "/" && c.Parent().Kind() != "binary_operator" {
				add(pyStringParts(c))
			}
		case "call":
			if fn := c.Field("function").Text(); strings.HasSuffix(fn, "path.join") || strings.HasSuffix(fn, "joinpath") {
				var parts []string
				for _, a := range c.Field("arguments").NamedChildren() {
					if s, ok := pyString(a); ok {
						parts = append(parts, s)
					}
				}
				add(parts)
			}
		}
		return true
	})
}

// pyString is the value of a plain string literal (no interpolation, no escapes read).
func pyString(n syntax.Node) (string, bool) {
	if n.Kind() != "string" {
		return "", false
	}
	var b strings.Builder
	for _, p := range n.NamedChildren() {
		switch p.Kind() {
		case "string_start", "string_end":
		case "string_content":
			b.WriteString(p.Text())
		default:
			return "", false // an f-string's interpolation
		}
	}
	return b.String(), b.Len() > 0
}

// pyStringParts are the string literals of a chain of / operators, left to right.
func pyStringParts(n syntax.Node) []string {
	if n.Kind() == "parenthesized_expression" && n.NamedChildCount() == 1 {
		return pyStringParts(n.NamedChild(0))
	}
	if n.Kind() == "binary_operator" && n.Field("operator").Text() == "/" {
		return append(pyStringParts(n.Field("left")), pyStringParts(n.Field("right"))...)
	}
	if s, ok := pyString(n); ok {
		return []string{s}
	}
	return nil
}

// pyDataFiles removes the data files the removed code named (run.paths) that nothing
// left in the tree mentions: a file not of Python source, in a folder of the tests
// (inTestFolder), whose path is one the removed code spelled or ends with one ("/expected.json"
// from DATA / "expected.json"). A file whose name any other file of the tree holds (kept
// code, a conftest.py, a helper, the manifest) stays, named in Result.Shared.
func pyDataFiles(root string, run *pyRun, res *Result) error {
	if len(run.paths) == 0 {
		return nil
	}
	var all []string
	if err := walkTree(root, true, func(rel string) error {
		all = append(all, rel)
		return nil
	}); err != nil {
		return err
	}
	cands := map[string]bool{}
	for _, f := range all {
		if pyDataScope(f) && pyNamed(f, run.paths) {
			cands[f] = true
		}
	}
	if len(cands) == 0 {
		return nil
	}
	named := map[string]bool{} // candidates another file names
	for _, f := range all {
		b, _, err := regular(root, f)
		if err != nil {
			continue
		}
		for c := range cands {
			if c != f && bytes.Contains(b, []byte(path.Base(c))) {
				named[c] = true
			}
		}
	}
	for _, c := range slices.Sorted(maps.Keys(cands)) {
		if named[c] {
			res.Shared = append(res.Shared, c)
			continue
		}
		b, _, err := regular(root, c)
		if err != nil {
			continue
		}
		res.fileLiterals(b)
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(c))); err != nil {
			return err
		}
		res.Files = append(res.Files, c)
	}
	return nil
}

// pyDataScope: f may be a withheld test's data file (pyDataFiles).
func pyDataScope(f string) bool {
	switch path.Ext(f) {
	case ".py", ".pyc", ".pyi", ".pyd", ".so", ".pth":
		return false
	}
	return inTestFolder(f) && !strings.Contains("/"+f, "/__pycache__/")
}

// inTestFolder: f lies under a folder named test… or …tests (tests/, testdata/,
// test_utils/, unittests/): a file of the tests, not of the code under test (calc.py, a
// package's data) or of the project (pyproject.toml), which nothing of this package removes.
func inTestFolder(f string) bool {
	segs := strings.Split(f, "/")
	for _, s := range segs[:len(segs)-1] {
		if s = strings.ToLower(s); strings.HasPrefix(s, "test") || strings.HasSuffix(s, "tests") {
			return true
		}
	}
	return false
}

// pyNamed: one of paths is f or ends it, segment by segment.
func pyNamed(f string, paths map[string]bool) bool {
	for p := range paths {
		if f == p || strings.HasSuffix(f, "/"+p) {
			return true
		}
	}
	return false
}
