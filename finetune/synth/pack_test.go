package synth

import (
	"context"
	"reflect"
	"testing"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
)

// TestPackAgreesWithSolo confirms candidates of independent packages in one packed build
// and each alone on a fresh copy, and requires the same verdicts. The fixture's effects
// interact: a's TestReadsB reads b's source at run time, so a's untested change to Name
// would look like a task were b's patch on disk while a's tests ran (the control shows it).
// c's tests build b, so a candidate in c is never packed with one in b.
func TestPackAgreesWithSolo(t *testing.T) {
	repo := fixture.Repo(t, map[string]string{
		"go.mod":      fixture.GoMod("example.com/pack"),
		"a/a.go":      "package a\n\n// Name is the package's name.\nfunc Name() string {\n\treturn \"a\"\n}\n\n// Twice is 2x.\nfunc Twice(x int) int {\n\treturn 2 * x\n}\n",
		"a/a_test.go": "package a\n\nimport (\n\t\"os\"\n\t\"strings\"\n\t\"testing\"\n)\n\nfunc TestTwice(t *testing.T) {\n\tif Twice(3) != 6 {\n\t\tt.Fatal(Twice(3))\n\t}\n}\n\nfunc TestReadsB(t *testing.T) {\n\tsrc, err := os.ReadFile(\"../b/b.go\")\n\tif err != nil || !strings.Contains(string(src), \"x + 1\") {\n\t\tt.Fatal(\"b changed\", err)\n\t}\n}\n",
		"b/b.go":      "package b\n\n// Inc is x plus one.\nfunc Inc(x int) int {\n\treturn x + 1\n}\n",
		"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestInc(t *testing.T) {\n\tif Inc(1) != 2 {\n\t\tt.Fatal(Inc(1))\n\t}\n}\n",
		"c/c.go":      "package c\n\nimport \"example.com/pack/b\"\n\n// Three is 3.\nfunc Three() int {\n\treturn b.Inc(2) * 1\n}\n",
		"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestThree(t *testing.T) {\n\tif Three() != 3 {\n\t\tt.Fatal(Three())\n\t}\n}\n",
	})
	ctx := context.Background()
	opts := testOptions(t)
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := newRunner(s, opts)
	pick := func(pkg, file, op string, line int) Mutant {
		src := mustRead(t, s, file)
		r.sources[file] = src
		ms, err := GoMutants(pkg, file, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Operator == op && m.Line == line {
				return m
			}
		}
		t.Fatalf("no %s mutant at %s:%d", op, file, line)
		return Mutant{}
	}
	name := pick("example.com/pack/a", "a/a.go", OpChangeString, 5)     // no test sees it
	twice := pick("example.com/pack/a", "a/a.go", OpChangeConstant, 10) // TestTwice fails
	inc := pick("example.com/pack/b", "b/b.go", OpChangeConstant, 5)    // TestInc and TestThree fail
	three := pick("example.com/pack/c", "c/c.go", OpChangeConstant, 7)  // TestThree fails

	// The control: with b's patch on disk too, a's tests fail for name.
	both, err := s.Copy(ctx, map[string][]byte{name.File: name.Apply(r.sources[name.File]), inc.File: inc.Apply(r.sources[inc.File])})
	if err != nil {
		t.Fatal(err)
	}
	res, err := both.Run(ctx, r.plainCommand(s.Env.Affected(name.Package)), opts.Env.PackageTimeout*4)
	both.Close()
	if err != nil {
		t.Fatal(err)
	}
	if f := failing(env.ParseGoTestJSON([]byte(res.Stdout)), r.passing); !reflect.DeepEqual(f, []string{"example.com/pack/a TestReadsB"}) {
		t.Fatalf("control: with both patches a's failing tests are %v", f)
	}

	order := []Mutant{name, inc, three, twice}
	var solo, packed []*verdict
	for _, m := range order {
		v := &verdict{m: m}
		r.confirm(ctx, v)
		solo = append(solo, v)
		packed = append(packed, &verdict{m: m})
	}
	pc := &plainCopy{r: r}
	var packs [][]string
	for todo := packed; len(todo) > 0; {
		var p []*verdict
		p, todo = r.pack(todo, 10)
		var descs []string
		for _, v := range p {
			descs = append(descs, v.m.Package)
		}
		packs = append(packs, descs)
		pc.confirmPack(ctx, p)
	}
	pc.Close(ctx)
	wantPacks := [][]string{{"example.com/pack/a", "example.com/pack/b"}, {"example.com/pack/c", "example.com/pack/a"}}
	if !reflect.DeepEqual(packs, wantPacks) {
		t.Errorf("packs %v, want %v", packs, wantPacks)
	}
	if r.packed != 4 || r.packs != 2 || r.redone != 0 {
		t.Errorf("%d candidates in %d packed builds, %d confirmed again: want 4 in 2, none again", r.packed, r.packs, r.redone)
	}
	wantReason := []string{RejectUnconfirm, "", "", ""}
	for i := range order {
		sv, pv := solo[i], packed[i]
		if sv.reason != wantReason[i] {
			t.Errorf("%s alone: %q, want %q", sv.m.Desc, sv.reason, wantReason[i])
		}
		if pv.reason != sv.reason || !reflect.DeepEqual(pv.failToPass, sv.failToPass) || !reflect.DeepEqual(pv.passToPass, sv.passToPass) || pv.patch != sv.patch {
			t.Errorf("%s: packed %q %v %v, alone %q %v %v", sv.m.Desc, pv.reason, pv.failToPass, pv.passToPass, sv.reason, sv.failToPass, sv.passToPass)
		}
	}
	if !reflect.DeepEqual(packed[1].failToPass, []string{"example.com/pack/b TestInc", "example.com/pack/c TestThree"}) {
		t.Errorf("b's change: %v fail", packed[1].failToPass)
	}
}
