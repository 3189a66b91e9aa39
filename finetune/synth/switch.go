package synth

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"
)

// Mutation switching: every mutant of a package is compiled into one test binary, and an
// environment variable picks the one that runs, so N mutants cost one build instead of N
// (compiling, not testing, dominates: pflag's test binary takes 1.2 s to build and 0.01 s
// to run). Each function with mutants keeps its original body and gains a dispatch at its
// top; each mutant is a whole copy of the function, renamed, with the change applied:
//
//	func Max(a, b int) int {
//		switch frognanoMutant {
//		case 7:
//			return Max_frognanoMutant7(a, b)
//		}
//		if a > b { ...
//	}
//	func Max_frognanoMutant7(a, b int) int { if a >= b { ...
//
// Copying whole functions keeps every mutant's semantics exact (no closures or double
// evaluation around a changed expression); the switch only adds one call frame. The files
// are laid over the package with `go test -overlay`, never written into the tree, and every
// task is confirmed afterwards as a plain patch on a fresh copy.

// switchVar is the package-level variable the dispatches read.
const switchVar = "frognanoMutant"

// EnvMutant is the environment variable that selects a mutant (0 or unset: none).
const EnvMutant = "FROGNANO_MUTANT"

// switchDecl is the extra file of a package under switching.
func switchDecl(pkgName string) string {
	return "package " + pkgName + `

import (
	frognanoOS "os"
	frognanoStrconv "strconv"
)

var ` + switchVar + `, _ = frognanoStrconv.Atoi(frognanoOS.Getenv("` + EnvMutant + `"))
`
}

// lineRange is where one mutant's copy lies in a switched file (1-based, inclusive).
type lineRange struct{ first, last int }

type edit struct {
	at, end int
	text    string
}

// switchFile is src with the dispatches added and ms's copies appended, and where each
// copy lies. Every mutant in ms must belong to this file.
func switchFile(file string, src []byte, ms []Mutant) ([]byte, map[int]lineRange, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	decls := map[int]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			decls[off(fd.Pos())] = fd
		}
	}
	byFunc := map[int][]Mutant{}
	for _, m := range ms {
		if decls[m.FuncStart] == nil {
			return nil, nil, fmt.Errorf("%s: no function at offset %d", file, m.FuncStart)
		}
		byFunc[m.FuncStart] = append(byFunc[m.FuncStart], m)
	}
	var edits []edit
	var copies []string
	var copyIDs []int
	starts := make([]int, 0, len(byFunc))
	for s := range byFunc {
		starts = append(starts, s)
	}
	sort.Ints(starts)
	for _, start := range starts {
		fd := decls[start]
		call, sigEdits := callOf(fd, off)
		edits = append(edits, sigEdits...)
		var d strings.Builder
		d.WriteString("\n\tswitch " + switchVar + " {\n")
		results := fd.Type.Results != nil && len(fd.Type.Results.List) > 0
		for _, m := range byFunc[start] {
			c := fmt.Sprintf(call, copyName(fd.Name.Name, m.ID))
			if results {
				fmt.Fprintf(&d, "\tcase %d:\n\t\treturn %s\n", m.ID, c)
			} else {
				fmt.Fprintf(&d, "\tcase %d:\n\t\t%s\n\t\treturn\n", m.ID, c)
			}
			// The copy: the declaration with the change applied and the name replaced.
			text := string(m.Apply(src)[start : off(fd.End())+len(m.Repl)-(m.End-m.Start)])
			nameAt := off(fd.Name.Pos()) - start
			text = text[:nameAt] + copyName(fd.Name.Name, m.ID) + text[nameAt+len(fd.Name.Name):]
			copies = append(copies, text)
			copyIDs = append(copyIDs, m.ID)
		}
		d.WriteString("\t}\n")
		lb := off(fd.Body.Lbrace) + 1
		edits = append(edits, edit{at: lb, end: lb, text: d.String()})
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].at > edits[j].at })
	out := append([]byte(nil), src...)
	for _, e := range edits {
		out = append(out[:e.at], append([]byte(e.text), out[e.end:]...)...)
	}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	lines := map[int]lineRange{}
	line := strings.Count(string(out), "\n") + 1 // the line the next text starts on
	for i, c := range copies {
		out = append(out, '\n')
		line++
		n := strings.Count(c, "\n")
		lines[copyIDs[i]] = lineRange{line, line + n}
		out = append(out, c...)
		out = append(out, '\n')
		line += n + 1
	}
	return out, lines, nil
}

func copyName(name string, id int) string { return fmt.Sprintf("%s_frognanoMutant%d", name, id) }

// callOf is the call of a copy of fd (a format with %s for the copy's name) with fd's own
// receiver and parameters, and the edits that name the unnamed or blank ones so that the
// dispatch can pass them on.
func callOf(fd *ast.FuncDecl, off func(token.Pos) int) (string, []edit) {
	var edits []edit
	n := 0
	name := func(f *ast.Field) []string {
		if len(f.Names) == 0 {
			n++
			v := fmt.Sprintf("frognanoP%d", n)
			edits = append(edits, edit{at: off(f.Type.Pos()), end: off(f.Type.Pos()), text: v + " "})
			return []string{v}
		}
		var out []string
		for _, id := range f.Names {
			if id.Name == "_" {
				n++
				v := fmt.Sprintf("frognanoP%d", n)
				edits = append(edits, edit{at: off(id.Pos()), end: off(id.End()), text: v})
				out = append(out, v)
			} else {
				out = append(out, id.Name)
			}
		}
		return out
	}
	fun := "%s"
	if fd.Recv != nil && len(fd.Recv.List) == 1 {
		fun = name(fd.Recv.List[0])[0] + ".%s"
	} else if fd.Type.TypeParams != nil && len(fd.Type.TypeParams.List) > 0 {
		var tps []string
		for _, f := range fd.Type.TypeParams.List {
			for _, id := range f.Names {
				tps = append(tps, id.Name)
			}
		}
		fun = "%s[" + strings.Join(tps, ", ") + "]"
	}
	var args []string
	if fd.Type.Params != nil {
		for i, f := range fd.Type.Params.List {
			names := name(f)
			if _, variadic := f.Type.(*ast.Ellipsis); variadic && i == len(fd.Type.Params.List)-1 {
				names[len(names)-1] += "..."
			}
			args = append(args, names...)
		}
	}
	return fun + "(" + strings.Join(args, ", ") + ")", edits
}
