package gocache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
)

func TestMain(m *testing.M) {
	HelperMain()
	os.Exit(m.Run())
}

// files are a small module whose test imports a std package that the test binary's std
// part does not (the same as agent's TestPoisonedCacheDoesNotFoolTheReward, which shares
// the trusted layer built from them).
var files = map[string]string{
	"go.mod":            "module example.com/m\n\ngo 1.24\n",
	"calc/calc.go":      "package calc\n\nimport \"hash/adler32\"\n\n// Check is the Adler-32 checksum of b.\nfunc Check(b []byte) uint32 { return adler32.Checksum(b[1:]) }\n",
	"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestCheck(t *testing.T) {\n\tif got := Check([]byte(\"Wikipedia\")); got != 0x11E60398 {\n\t\tt.Fatalf(\"Check = %#x\", got)\n\t}\n}\n",
}

func module(t *testing.T) string {
	t.Helper()
	return moduleOf(t, files)
}

func moduleOf(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		writeTo(t, filepath.Join(dir, name), content)
	}
	return dir
}

func writeTo(t testing.TB, p, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// trustedDst is where the trusted layer of files goes: kept between test runs next to the
// tests' shared Go cache (FROGNANO_SANDBOX_GOCACHE), since compiling the std packages a
// test needs takes minutes, keyed by the Go version and the files; Build skips a layer that
// exists. Without that variable, a new folder (Build builds).
func trustedDst(t testing.TB, files map[string]string) string {
	shared := os.Getenv("FROGNANO_SANDBOX_GOCACHE")
	if shared == "" {
		return filepath.Join(t.TempDir(), "trusted")
	}
	h := sha256.New()
	h.Write([]byte(runtime.Version()))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		h.Write([]byte(name + "\x00" + files[name] + "\x00"))
	}
	return filepath.Join(shared+"-trusted", hex.EncodeToString(h.Sum(nil))[:16])
}

func executable(t testing.TB) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// runIn runs command in the sandbox on a fresh copy of dir, building with l.
func runIn(t *testing.T, dir string, l Layers, command string) sandbox.Output {
	t.Helper()
	ctx := context.Background()
	ws, err := workspace.Prepare(ctx, dir, filepath.Join(t.TempDir(), "copy"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Remove()
	opts := sandbox.Options{ReadOnly: []string{ws.ObjectsDir()}}
	if err := l.Sandbox(&opts, executable(t)); err != nil {
		t.Fatal(err)
	}
	r, err := sandbox.NewRunner(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, err := r.Run(ctx, sandbox.Cmd{Dir: ws.Root, Command: "export GOTOOLCHAIN=local GOFLAGS=\"$GOFLAGS -buildvcs=false\"; " + command})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLayers: the trusted layer serves the standard library to a later run, whose own
// builds land in its scratch layer only.
func TestLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := module(t)
	trusted := trustedDst(t, files)
	if err := Build(context.Background(), dir, trusted, executable(t)); err != nil {
		t.Fatal(err)
	}
	before := tree(t, trusted)
	scratch := filepath.Join(t.TempDir(), "scratch")
	out := runIn(t, dir, Layers{Trusted: trusted, Scratch: scratch}, "go test -count=1 ./... ; go list -export -f '{{.ImportPath}} {{.Export}}' hash/adler32 testing ./calc")
	if !strings.Contains(out.Stdout, "--- FAIL: TestCheck") {
		t.Fatalf("go test did not run the failing test:\n%s\n%s", out.Stdout, out.Stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.Stdout), "\n") {
		pkg, export, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(export, "/") {
			continue // go test's report
		}
		layer := trusted
		if pkg == "example.com/m/calc" {
			layer = scratch // the repository's own: compiled on this copy
		}
		if !strings.HasPrefix(export, layer+string(filepath.Separator)) {
			t.Errorf("%s came from %s, want the layer %s", pkg, export, layer)
		}
	}
	if !bytes.Equal(before, tree(t, trusted)) {
		t.Error("a run changed the trusted layer")
	}
	if !hasEntries(scratch) {
		t.Error("nothing was written to the scratch layer")
	}
}

// tree lists a folder's files with their sizes and modes, to compare.
func tree(t *testing.T, dir string) []byte {
	t.Helper()
	var b bytes.Buffer
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + info.Mode().String() + " " + info.ModTime().String())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestServe: the protocol by hand. A put lands in the scratch layer only; a get prefers the
// trusted layer; an entry whose body is missing or of another size is a miss.
func TestServe(t *testing.T) {
	l := Layers{Trusted: t.TempDir(), Scratch: t.TempDir()}
	action, output := []byte{0xaa, 1}, []byte{0xbb, 2}
	// The trusted layer holds action → output with a 3-byte body.
	if err := writeFile(entryPath(l.Trusted, "o", output), []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(entryPath(l.Trusted, "a", action), []byte("bb02 3 1\n")); err != nil {
		t.Fatal(err)
	}
	in := `{"ID":1,"Command":"get","ActionID":"qgE="}
{"ID":2,"Command":"put","ActionID":"qgE=","OutputID":"zAM=","BodySize":2}
"eHk="
{"ID":3,"Command":"get","ActionID":"AAA="}
{"ID":4,"Command":"put","ActionID":"AAA=","OutputID":"zAM=","BodySize":2}
"eHk="
{"ID":5,"Command":"get","ActionID":"AAA="}
{"ID":6,"Command":"close"}
`
	var out bytes.Buffer
	if err := Serve(strings.NewReader(in), &out, l); err != nil {
		t.Fatal(err)
	}
	var got []response
	dec := json.NewDecoder(&out)
	for dec.More() {
		var r response
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 7 || len(got[0].KnownCommands) != 3 {
		t.Fatalf("responses %+v", got)
	}
	if r := got[1]; r.ID != 1 || r.Miss || r.DiskPath != entryPath(l.Trusted, "o", output) || r.Size != 3 {
		t.Errorf("get from the trusted layer: %+v", r)
	}
	if r := got[2]; r.ID != 2 || !strings.HasPrefix(r.DiskPath, l.Scratch) {
		t.Errorf("put: %+v", r)
	}
	if r := got[3]; r.ID != 3 || !r.Miss {
		t.Errorf("get of an unknown action: %+v", r)
	}
	// The put of the same action went to scratch; the trusted entry still wins.
	if b, _ := os.ReadFile(entryPath(l.Trusted, "o", output)); string(b) != "abc" {
		t.Errorf("the trusted body changed: %q", b)
	}
	if r := got[5]; r.ID != 5 || r.Miss || r.DiskPath != entryPath(l.Scratch, "o", []byte{0xcc, 3}) {
		t.Errorf("get of what was put: %+v", r)
	}
	if got[6].ID != 6 {
		t.Errorf("close: %+v", got[6])
	}
	// A body of another size than its entry says is a miss.
	os.WriteFile(entryPath(l.Trusted, "o", output), []byte("abcd"), 0o644)
	if r := l.get(action); !strings.HasPrefix(r.DiskPath, l.Scratch) {
		t.Errorf("a trusted entry of the wrong size was served: %+v", r)
	}
}

// The hidden test's marks: what an agent could look for in the trusted layer, which its
// commands can read (the GOCACHEPROG helper needs it). secret is what the test asserts (an
// expected value), hiddenTest its name (a FAIL_TO_PASS entry), hiddenModule the import path.
const (
	secret       = "HIDDEN-ANSWER-8841"
	hiddenTest   = "TestHiddenName8841"
	hiddenModule = "example.com/hidden8841"
	// depModule is a module in the module cache (one of frognano's own requirements, so
	// there when frognano builds) for the fixture to import: a package of a non-main module,
	// which the layer must hold as it holds the standard library.
	depModule = "github.com/bmatcuk/doublestar/v4"
)

// hiddenFiles is a module whose test asserts secret, importing the standard library and,
// when the module cache has it (dep), depModule.
func hiddenFiles(t *testing.T) (files map[string]string, dep bool) {
	t.Helper()
	calc := "package calc\n\nimport (\n\t\"hash/adler32\"\n\t\"strings\"\n)\n\n" +
		"// Check is the Adler-32 checksum of b.\nfunc Check(b []byte) uint32 { return adler32.Checksum(b) }\n\n" +
		"// Match reports whether s begins with prefix.\nfunc Match(prefix, s string) bool { return strings.HasPrefix(s, prefix) }\n"
	gomod := "module " + hiddenModule + "\n\ngo 1.24\n"
	var gosum string
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", depModule).Output()
	version, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if gomodPath, gerr := exec.Command("go", "env", "GOMOD").Output(); err == nil && gerr == nil && dir != "" {
		sum, _ := os.ReadFile(filepath.Join(filepath.Dir(strings.TrimSpace(string(gomodPath))), "go.sum"))
		for _, line := range strings.SplitAfter(string(sum), "\n") {
			if strings.HasPrefix(line, depModule+" "+version+" ") || strings.HasPrefix(line, depModule+" "+version+"/go.mod ") {
				gosum += line
			}
		}
	}
	if gosum != "" {
		dep = true
		gomod += "\nrequire " + depModule + " " + version + "\n"
		calc = "package calc\n\nimport (\n\t\"hash/adler32\"\n\n\t\"" + depModule + "\"\n)\n\n" +
			"// Check is the Adler-32 checksum of b.\nfunc Check(b []byte) uint32 { return adler32.Checksum(b) }\n\n" +
			"// Match reports whether s begins with prefix.\nfunc Match(prefix, s string) bool { ok, _ := doublestar.Match(prefix+\"*\", s); return ok }\n"
	} else {
		t.Logf("%s is not in the module cache (%v): the fixture imports the standard library only", depModule, err)
	}
	files = map[string]string{
		"go.mod":       gomod,
		"calc/calc.go": calc,
		"calc/hidden8841_test.go": "package calc\n\nimport \"testing\"\n\nconst secret = \"" + secret + "\"\n\n" +
			"func " + hiddenTest + "(t *testing.T) {\n\tif !Match(\"HIDDEN-\", secret) || Check([]byte(secret)) == 0 {\n\t\tt.Fatal(\"no match\")\n\t}\n}\n",
	}
	if gosum != "" {
		files["go.sum"] = gosum
	}
	return files, dep
}

// TestLayerHoldsNoRepositoryCode: the trusted layer of a module holds nothing of the
// module's own (its hidden test's expected value, the test's name, the module's import
// path, in any entry, action or output) and still serves every dependency a later go test
// compiles: the standard library and a package of the module cache. (Built with go test, it
// held the compiled test package, the generated test main and go's index of the files.)
func TestLayerHoldsNoRepositoryCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	files, dep := hiddenFiles(t)
	dir := moduleOf(t, files)
	trusted := trustedDst(t, files)
	if err := Build(context.Background(), dir, trusted, executable(t)); err != nil {
		t.Fatal(err)
	}
	needles := []string{secret, hiddenTest, hiddenModule, "hidden8841_test.go"}
	var n int
	err := filepath.WalkDir(trusted, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range needles {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("the trusted layer's %s holds %q", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// -x prints a compile command for each package compiled, none for one the cache served:
	// the module's own are compiled (and the test main, package main), nothing else.
	scratch := filepath.Join(t.TempDir(), "scratch")
	out := runIn(t, dir, Layers{Trusted: trusted, Scratch: scratch},
		"go test -x -count=1 ./... 2>&1 | grep -E '^(ok|FAIL|---)|/compile '; go list -export -f '{{.ImportPath}} {{.Export}}' hash/adler32 testing "+map[bool]string{true: depModule}[dep])
	if !strings.Contains(out.Stdout, "ok  \t"+hiddenModule+"/calc") {
		t.Fatalf("go test did not pass:\n%s\n%s", out.Stdout, out.Stderr)
	}
	var compiled []string
	for _, line := range strings.Split(out.Stdout, "\n") {
		if _, args, ok := strings.Cut(line, "/compile "); ok {
			_, rest, _ := strings.Cut(args, " -p ")
			pkg, _, _ := strings.Cut(rest, " ")
			compiled = append(compiled, pkg)
			if pkg != "main" && !strings.HasPrefix(pkg, hiddenModule+"/") {
				t.Errorf("go test compiled %s: the trusted layer did not serve it", pkg)
			}
		} else if pkg, export, ok := strings.Cut(line, " "); ok && strings.HasPrefix(export, "/") {
			if !strings.HasPrefix(export, trusted+string(filepath.Separator)) {
				t.Errorf("%s came from %s, want the trusted layer %s", pkg, export, trusted)
			}
		}
	}
	if !slices.Contains(compiled, hiddenModule+"/calc") {
		t.Errorf("go test -x showed no compile of the module's own package (compiled %v): the check proves nothing\n%s", compiled, out.Stdout)
	}
	t.Logf("%d files in the trusted layer; go test compiled %v; the module cache's package: %v", n, compiled, dep)
}
