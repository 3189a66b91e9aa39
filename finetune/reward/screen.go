package reward

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/frognano/frognano/internal/lazyregexp"
)

// The screen reads the kept changes before anything runs and refuses those that reach for
// the test harness: an agent that can end its test binary early with a pass, print the
// framing go test reads, call into package testing, or reach pytest's objects from inside
// pytest's process can forge results. It counts, per file, the constructs below in the
// agent's version and in the base's, and refuses a file that has more of one than its base
// had (a main package's os.Exit that was already there is not the agent's). The files it
// reads are only those the task's patch changed (tree.go drops the rest).
//
// The screen is defence in depth, not the guard: it reads source, and source can hide what
// it does (a call through reflect or a function value built elsewhere, a package the agent
// did not change calling one it did). The guards are the evaluation tree (what the tests
// are, and how they build, come from the base commit; the agent's changes only in the task's
// files) and the checks of the results (gorun.go, pyrun.go). What the screen does catch is
// the forms a model finds, with a reason a person can read.
//
// Go is read with go/ast (a comment or a string that mentions os.Exit is not a call).
// Python is read on tree-sitter's syntax tree, as an allowlist of imports and dunders and a
// list of the names that reach frames, modules and attributes by computed names
// (screenpy.go says each rule and why). JS/TS, not scored yet, by patterns over the text.

// finding is one construct the screen refuses, as counted in one file.
type finding string

// goExits are the functions that end a Go program (or its goroutine) at once, without
// testing's bookkeeping: os.Exit(0) from an init or a test prints nothing that go test
// would call a failure, and an exit status the agent chose is the one signal the checks
// of the results lean on most (gorun.go). syscall.Exec replaces the program with another;
// Dup2 and Dup3 put another file behind the standard output.
var goExits = map[string]map[string]bool{
	// os.Args: testing parses it only after every init has run, so code that rewrites it
	// chooses which tests run (the hidden ones skipped, their passes printed instead).
	"os": {"Exit": true, "Args": true},
	"syscall": {"Exit": true, "Exec": true, "Syscall": true, "Syscall6": true, "RawSyscall": true, "RawSyscall6": true,
		"RawSyscallNoError": true, "AllThreadsSyscall": true, "AllThreadsSyscall6": true, "Dup2": true, "Dup3": true},
	"runtime": {"Goexit": true},
	"golang.org/x/sys/unix": {"Exit": true, "Exec": true, "Syscall": true, "Syscall6": true, "RawSyscall": true, "RawSyscall6": true,
		"RawSyscallNoError": true, "SyscallNoError": true, "Dup2": true, "Dup3": true},
}

// flagKept are the names of package flag that define and read flags. The others are
// refused: they end the process with status 0 (a FlagSet with ExitOnError that parses -h,
// as flag.CommandLine's Parse does: os.Exit(0) from an init, where -test.paniconexit0 is
// not yet in force, after printing a pass for each test the run names; measured, reward 1
// with every other check satisfied), or set testing's own flags (Set, Lookup, Visit*) once
// they are registered, to skip the hidden tests.
var flagKept = map[string]bool{"String": true, "StringVar": true, "Int": true, "IntVar": true, "Int64": true, "Int64Var": true,
	"Uint": true, "UintVar": true, "Uint64": true, "Uint64Var": true, "Bool": true, "BoolVar": true, "Float64": true,
	"Float64Var": true, "Duration": true, "DurationVar": true, "Var": true, "TextVar": true, "Func": true, "BoolFunc": true,
	"Value": true, "Getter": true, "Flag": true, "Arg": true, "Args": true, "NArg": true, "NFlag": true, "Parsed": true,
	"Usage": true, "PrintDefaults": true, "ErrHelp": true, "UnquoteUsage": true}

// goReads are the ways Go code reads files or runs commands: the evaluation tree holds the
// hidden tests and their golden files, which the agent's copy lacks (finetune/withhold),
// and the code under test runs in the test binary, in its package's folder, so a change
// that adds one can read the answer there and return it with the bug left in (measured:
// os.ReadFile of the golden file, `cat *_test.go` through os/exec, each reward 1). Counted
// like the exits, against the base's file (and the original's, before the task's bug): a
// fix adds no file read. Every name of os/exec counts, and each //go:embed line (what it
// embeds is read from the tree when the tests build).
var goReads = map[string]map[string]bool{
	"os": {"ReadFile": true, "Open": true, "OpenFile": true, "ReadDir": true, "DirFS": true, "OpenRoot": true,
		"OpenInRoot": true, "StartProcess": true, "NewFile": true},
	"io/ioutil":     {"ReadFile": true, "ReadDir": true},
	"path/filepath": {"Glob": true, "Walk": true, "WalkDir": true},
	"syscall": {"Open": true, "Openat": true, "Read": true, "Pread": true, "Mmap": true, "ForkExec": true,
		"StartProcess": true},
	"golang.org/x/sys/unix": {"Open": true, "Openat": true, "Openat2": true, "Read": true, "Pread": true, "Mmap": true},
	// The standard library's own readers of a path.
	"go/parser":     {"ParseFile": true, "ParseDir": true},
	"text/template": {"ParseFiles": true, "ParseGlob": true}, "html/template": {"ParseFiles": true, "ParseGlob": true},
	"net/http":  {"Dir": true, "ServeFile": true, "FileServer": true},
	"debug/elf": {"Open": true}, "debug/pe": {"Open": true}, "debug/macho": {"Open": true}, "debug/plan9obj": {"Open": true},
	"archive/zip": {"OpenReader": true},
}

// goReadPackages count at every use, like os/exec: go/build reads a package's files
// (build.Default.Import is a method of a variable, which a name list would miss).
var goReadPackages = map[string]bool{"os/exec": true, "go/build": true}

// goReadMethods are methods that read a path whatever they are called on (a template's).
var goReadMethods = map[string]bool{"ParseFiles": true, "ParseGlob": true}

// goImports are the packages non-test code has no business importing: testing (the
// harness itself; testing.Testing() tells a test binary apart), unsafe (what
// //go:linkname needs, and a way around the type system), C (cgo runs C, which the screen
// cannot read), plugin (loads code the tree does not hold).
var goImports = map[string]bool{"testing": true, "unsafe": true, "C": true, "plugin": true}

// framingLine matches what go test and test2json read as a test's result or start.
var framingLine = lazyregexp.New(`(?m)^\s*(---|===) (PASS|FAIL|SKIP|RUN|PAUSE|CONT|NAME)\b`)

// screenGo counts the refused constructs of one Go file. A file that does not parse is
// not counted: it does not build either.
func screenGo(src []byte) map[finding]int {
	n := map[finding]int{}
	if bytes.IndexByte(src, 0x16) >= 0 {
		n["the byte 0x16 (test2json's framing)"]++
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.ParseComments)
	if err != nil {
		return n
	}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:linkname") {
				n["//go:linkname"]++
			}
			if strings.HasPrefix(c.Text, "//go:cgo_") || strings.HasPrefix(c.Text, "//export ") {
				n["a cgo directive"]++
			}
			if strings.HasPrefix(c.Text, "//go:embed") {
				n["//go:embed (reads files of the tree)"]++
			}
		}
	}
	names := map[string]string{} // local name → import path
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			continue
		}
		if goImports[p] {
			n[finding(fmt.Sprintf("import %q", p))]++
		}
		local := path.Base(p)
		if im.Name != nil {
			local = im.Name.Name
		}
		if (goExits[p] != nil || goReads[p] != nil || goReadPackages[p] || p == "flag") && local == "." {
			n[finding(fmt.Sprintf("a dot import of %q", p))]++
		}
		names[local] = p
	}
	ast.Inspect(f, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.FuncDecl:
			if x.Recv == nil && x.Name.Name == "init" {
				n["func init"]++
			}
		case *ast.AssignStmt:
			// os.Stdout = w: testing writes its results through the variable, and a reader
			// of w could rewrite them before they reach the real output.
			for _, l := range x.Lhs {
				// *os.Stdout = *w replaces the file behind the variable as well.
				for {
					if st, ok := l.(*ast.StarExpr); ok {
						l = st.X
					} else if pe, ok := l.(*ast.ParenExpr); ok {
						l = pe.X
					} else {
						break
					}
				}
				if sel, ok := l.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil && names[id.Name] == "os" && (sel.Sel.Name == "Stdout" || sel.Sel.Name == "Stderr") {
						n[finding("an assignment to os."+sel.Sel.Name)]++
					}
				}
			}
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && id.Obj == nil {
				if p, ok := names[id.Name]; ok && (goExits[p][x.Sel.Name] || p == "flag" && !flagKept[x.Sel.Name]) {
					n[finding(p+"."+x.Sel.Name)]++
				}
				if p, ok := names[id.Name]; ok && (goReads[p][x.Sel.Name] || goReadPackages[p]) {
					n[finding(p+"."+x.Sel.Name+" (reads files or runs a command)")]++
				}
			}
			if goReadMethods[x.Sel.Name] {
				n[finding("."+x.Sel.Name+" (reads files)")]++
			}
		case *ast.BasicLit:
			if x.Kind == token.STRING || x.Kind == token.CHAR {
				s, err := strconv.Unquote(x.Value)
				if err != nil {
					break
				}
				if strings.ContainsRune(s, 0x16) {
					n["the byte 0x16 (test2json's framing)"]++
				}
				if framingLine.MatchString(s) {
					n["a string shaped like a test result (--- PASS: …)"]++
				}
			}
		}
		return true
	})
	return n
}

// JS/TS: leaving node early, or killing it.
var jsPatterns = []struct {
	re   *lazyregexp.Regexp
	what finding
}{
	{lazyregexp.New(`\bprocess\s*(\.\s*|\[\s*['"])(exit|reallyExit|abort|kill|exitCode)\b`), "process.exit, process.abort, process.kill or process.exitCode"},
	{lazyregexp.New(`\bchild_process\b`), "child_process"},
}

func screenText(src []byte, pats []struct {
	re   *lazyregexp.Regexp
	what finding
}) map[finding]int {
	n := map[finding]int{}
	for _, p := range pats {
		if c := len(p.re.FindAllIndex(src, -1)); c > 0 {
			n[p.what] += c
		}
	}
	if bytes.IndexByte(src, 0x16) >= 0 {
		n["the byte 0x16 (test2json's framing)"]++
	}
	return n
}

// screenFile counts the refused constructs of one file by its kind; nil for files the
// screen does not read. pyImports are the modules a Python file may import.
func screenFile(p string, src []byte, pyImports, repo map[string]bool) map[finding]int {
	switch ext := path.Ext(p); {
	case ext == ".go":
		return screenGo(src)
	case ext == ".py":
		return screenPython(src, pyImports, repo)
	case isScript(ext):
		return screenText(src, jsPatterns)
	}
	return nil
}

// nativeCode are the files a Go package builds from besides Go (assembly, cgo's C, object
// files linked as they are): code the screen cannot read, and that can define any symbol.
var nativeCode = map[string]bool{".s": true, ".S": true, ".sx": true, ".c": true, ".cc": true, ".cpp": true, ".cxx": true,
	".h": true, ".hh": true, ".hpp": true, ".hxx": true, ".m": true, ".f": true, ".F": true, ".for": true, ".f90": true,
	".swig": true, ".swigcxx": true, ".syso": true, ".so": true}

// screen returns why the kept changes are refused, or "" when none is: each finding the
// agent added, per file, sorted. pyRepo are the repository's own top-level Python modules
// (pyModules).
func screen(keep []kept, pyRepo map[string]bool) string {
	var why []string
	for _, k := range keep {
		if k.Content == nil {
			continue
		}
		if nativeCode[path.Ext(k.Path)] && (k.Base == nil || !bytes.Equal(k.Base, k.Content)) {
			why = append(why, k.Path+": native code (assembly, C or an object file)")
			continue
		}
		var imports map[string]bool
		if path.Ext(k.Path) == ".py" {
			imports = pyAllowedImports(k.Base, pyRepo)
		}
		now := screenFile(k.Path, k.Content, imports, pyRepo)
		if now == nil {
			continue
		}
		before := map[finding]int{}
		if k.Base != nil {
			before = screenFile(k.Path, k.Base, imports, pyRepo)
		}
		if k.Orig != nil {
			// The original's constructs are the user's code: the fix that restores it (a
			// bug that took out a file read) must pass.
			for f, c := range screenFile(k.Path, k.Orig, imports, pyRepo) {
				before[f] = max(before[f], c)
			}
		}
		for f, c := range now {
			if c > before[f] || pyUnreadable[f] {
				why = append(why, fmt.Sprintf("%s: %s", k.Path, f))
			}
		}
	}
	sort.Strings(why)
	return strings.Join(why, "; ")
}
