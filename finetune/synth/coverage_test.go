package synth

import (
	"testing"

	"github.com/frognano/frognano/finetune/env"
)

// TestCoverage reads a profile and sets aside the mutants outside every block that ran.
func TestCoverage(t *testing.T) {
	t.Parallel()
	src := []byte("package p\n\nfunc A(x int) int {\n\tif x > 0 {\n\t\treturn 1\n\t}\n\treturn 2\n}\n\nfunc B(x int) int {\n\tif x < 0 {\n\t\treturn 3\n\t}\n\treturn 4\n}\n")
	// A's first block (up to the if's brace) and its return 1 ran; B's blocks did not.
	prof := "mode: set\nexample.com/m/p/p.go:3.19,4.11 1 1\nexample.com/m/p/p.go:4.11,6.3 1 1\nexample.com/m/p/p.go:7.2,7.10 1 0\n" +
		"example.com/m/p/p.go:10.19,11.11 1 0\nexample.com/m/p/p.go:11.11,13.3 1 0\nexample.com/m/p/p.go:14.2,14.10 1 0\nexample.com/other/q.go:1.1,2.2 1 1\n"
	cv := parseCoverProfile([]byte(prof), []env.Module{{Path: "example.com/m", Dir: "."}}, "c0ffee")
	if _, ok := cv.Files["p/p.go"]; !ok || len(cv.Files) != 1 {
		t.Fatalf("files %v", cv.Files)
	}
	ms, err := GoMutants("example.com/m/p", "p/p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range ms {
		got[m.Func+" "+m.Desc] = cv.covers(m, src)
	}
	for desc, want := range map[string]bool{
		"A > became >=": true, "A the constant 1 became 0": true, "A the constant 2 became 3": false,
		"B < became >=": false, "B the constant 3 became 4": false,
	} {
		if c, ok := got[desc]; !ok || c != want {
			t.Errorf("%s: covered %v (found %v), want %v; all: %v", desc, c, ok, want, got)
		}
	}
	other := Mutant{File: "q/q.go", Start: 0, End: 1}
	if !cv.covers(other, src) || !(*coverage)(nil).covers(ms[0], src) {
		t.Error("a file the profile does not name, or no profile, must count as covered")
	}
}

// TestCoverageModules: profiles of several modules' runs are merged, each file put under
// the folder of the module with the longest matching path (tools/ is nested under the
// top's path), and a block ran when it ran in any module's tests.
func TestCoverageModules(t *testing.T) {
	t.Parallel()
	mods := []env.Module{{Path: "example.com/app", Dir: "."}, {Path: "example.com/app/tools", Dir: "tools"}, {Path: "example.com/lib", Dir: "lib"}}
	cv := parseCoverProfile([]byte("mode: set\nexample.com/app/tools/count/count.go:1.1,2.2 1 1\nexample.com/lib/calc/calc.go:3.1,4.2 1 0\n"), mods, "c0ffee")
	cv.add([]byte("mode: set\nexample.com/lib/calc/calc.go:3.1,4.2 1 1\nexample.com/app/report/report.go:1.1,2.2 1 0\n"), mods)
	for file, ran := range map[string]int{"tools/count/count.go": 1, "lib/calc/calc.go": 1, "report/report.go": 0} {
		blocks, ok := cv.Files[file]
		if !ok || len(blocks) != ran {
			t.Errorf("%s: %v (listed %v), want %d ran blocks; files %v", file, blocks, ok, ran, cv.Files)
		}
	}
	if len(cv.Files) != 3 {
		t.Errorf("files %v", cv.Files)
	}
}
