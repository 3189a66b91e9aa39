package synth

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
)

// funcRef is a function a patch changes, as the base commit has it.
type funcRef struct {
	file string // slash path
	name string // "Name" or "Recv.Name"
	line int
	doc  string
}

// changedFuncs are the functions of the base whose lines the changes touch, in file order.
func changedFuncs(changes []task.Change) []funcRef {
	var out []funcRef
	for _, c := range changes {
		lines := changedOldLines(c.Old, c.New)
		if len(lines) == 0 {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, c.Path, c.Old, parser.ParseComments)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			first, last := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
			for _, l := range lines {
				if l >= first && l <= last {
					name := fd.Name.Name
					if fd.Recv != nil && len(fd.Recv.List) == 1 {
						name = recvType(fd.Recv.List[0].Type) + "." + name
					}
					doc := ""
					if fd.Doc != nil {
						doc = strings.TrimSpace(fd.Doc.Text())
					}
					out = append(out, funcRef{file: c.Path, name: name, line: first, doc: doc})
					break
				}
			}
		}
	}
	return out
}

// changedOldLines are the 1-based lines of old that differ from new: a common prefix and
// suffix of lines are trimmed and what is left between them counts (an insertion counts
// the line it comes before). Enough to name the functions one or a few edits touch.
func changedOldLines(old, new []byte) []int {
	a, b := strings.SplitAfter(string(old), "\n"), strings.SplitAfter(string(new), "\n")
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []int
	for l := pre; l < len(a)-suf; l++ {
		out = append(out, l+1)
	}
	if len(out) == 0 && len(a) != len(b) { // a pure insertion
		out = append(out, pre+1)
	}
	return out
}

// locate is how far the failing tests are from the change: "same-file" when one is in the
// _test.go file of a changed file, "same-package" when one is in a changed file's folder,
// else "other-package"; and the call depth: 1 when a failing test calls a changed function
// by name, 2 when none does (it is reached through other code), 0 when unknown.
func (r *runner) locate(funcs []funcRef, failToPass []string) (string, int) {
	if len(funcs) == 0 || len(failToPass) == 0 {
		return "", 0
	}
	changedDirs, pairs, names := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, f := range funcs {
		changedDirs[path.Dir(f.file)] = true
		pairs[strings.TrimSuffix(f.file, ".go")+"_test.go"] = true
		n := f.name
		if i := strings.LastIndex(n, "."); i >= 0 {
			n = n[i+1:]
		}
		names[n] = true
	}
	locality, depth := "other-package", 2
	for _, id := range failToPass {
		pkg, test := env.SplitID(id)
		info, ok := r.s.Env.Packages[pkg]
		if !ok {
			continue
		}
		file, calls := r.testDecl(info.Dir, test, names)
		switch {
		case pairs[file]:
			locality = "same-file"
		case changedDirs[info.Dir] && locality != "same-file":
			locality = "same-package"
		}
		if calls {
			depth = 1
		}
	}
	return locality, depth
}

// testDecl finds test in the _test.go files of dir: its file, and whether its body names
// one of names.
func (r *runner) testDecl(dir, test string, names map[string]bool) (string, bool) {
	ents, err := os.ReadDir(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(dir)))
	if err != nil {
		return "", false
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), "_test.go") || !e.Type().IsRegular() {
			continue
		}
		rel := path.Join(dir, e.Name())
		src, err := readSource(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(rel)))
		if err != nil || !strings.Contains(string(src), "func "+test+"(") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), rel, src, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Name.Name != test || fd.Body == nil {
				continue
			}
			calls := false
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && names[id.Name] {
					calls = true
				}
				return !calls
			})
			return rel, calls
		}
	}
	return "", false
}
