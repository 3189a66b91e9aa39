package env

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/frognano/frognano/finetune/internal/fixture"
)

func TestModulesFound(t *testing.T) {
	for _, tc := range []struct {
		name      string
		files     map[string]string
		want      []Module
		workspace bool
		err       string
	}{
		{"nested and replaced", fixture.MultiModule(), []Module{{Path: "example.com/app", Dir: "."}, {Path: "example.com/lib", Dir: "lib"}, {Path: "example.com/app/tools", Dir: "tools"}}, false, ""},
		{"go.work", fixture.Workspace(), []Module{{Path: "example.com/a", Dir: "a"}, {Path: "example.com/b", Dir: "b"}}, true, ""},
		{"one", map[string]string{"go.mod": "module \"example.com/q\" // quoted\n"}, []Module{{Path: "example.com/q", Dir: "."}}, false, ""},
		{"nested go.work", fixture.NestedWorkspace(), []Module{{Path: "example.com/top", Dir: "."},
			{Path: "example.com/a", Dir: "ws/a", Work: "ws"}, {Path: "example.com/b", Dir: "ws/b", Work: "ws"}, {Path: "example.com/c", Dir: "ws/c"}}, false, ""},
		{"use outside", map[string]string{"go.work": "go 1.22\nuse ../elsewhere\n"}, nil, true, "outside the repository"},
		{"use missing", map[string]string{"go.work": "go 1.22\nuse ./gone\n"}, nil, true, "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, content := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, p, content)
			}
			got, ws, err := Modules(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || ws != tc.workspace || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Modules = %v, workspace %v, %v; want %v, %v", got, ws, err, tc.want, tc.workspace)
			}
		})
	}
}

func TestNestedWorkspaces(t *testing.T) {
	write := func(files map[string]string) string {
		dir := t.TempDir()
		for rel, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, content)
		}
		return dir
	}
	nested := map[string]string{
		"a/go.mod":           "module example.com/a\n",
		"svc/go.work":        "go 1.22\nuse (\n\t./x\n\t./inner/z\n)\n",
		"svc/x/go.mod":       "module example.com/x\n",
		"svc/inner/go.work":  "go 1.22\nuse ./z\nuse ../x\nuse ../../a\n",
		"svc/inner/z/go.mod": "module example.com/z\n",
		"a/deep/go.work":     "go 1.22\n",
		"bad/go.work":        "go 1.22\nuse ../../outside\n",
		"vendor/v/go.work":   "", ".hidden/go.work": "", "a/testdata/go.work": "",
	}

	// Without a go.work at the top, each below it ties the modules it uses: the nearest at
	// or above a module's folder wins (x stays svc's; z goes to svc/inner, the deeper), else
	// the first that uses it (a, which only svc/inner names). The unreadable are said.
	mods, ws, ignored, err := ModulesAndIgnored(write(nested))
	want := []Module{{Path: "example.com/a", Dir: "a", Work: "svc/inner"}, {Path: "example.com/z", Dir: "svc/inner/z", Work: "svc/inner"},
		{Path: "example.com/x", Dir: "svc/x", Work: "svc"}}
	if err != nil || ws || !reflect.DeepEqual(mods, want) {
		t.Errorf("modules %+v, workspace %v, %v; want %+v", mods, ws, err, want)
	}
	if len(ignored) != 2 || ignored[0].Path != "a/deep/go.work" || !strings.Contains(ignored[0].Why, "no use directive") ||
		ignored[1].Path != "bad/go.work" || !strings.Contains(ignored[1].Why, "outside the repository") {
		t.Errorf("ignored %+v", ignored)
	}

	// With one at the top, that one ties them all and those below are said to be unused.
	nested["go.work"] = "go 1.22\nuse ./a\n"
	d, err := Detect(write(nested))
	if err != nil || !d.Workspace || len(d.Modules) != 1 || len(d.IgnoredWorkspaces) != 4 ||
		d.IgnoredWorkspaces[0].Path != "a/deep/go.work" || !strings.Contains(d.IgnoredWorkspaces[0].Why, "at the top") {
		t.Errorf("Detect: %+v, %v", d, err)
	}
}

// TestEnter: a module tied by a go.work below the top is entered through that go.work's
// folder, which sets GOWORK to its absolute path.
func TestEnter(t *testing.T) {
	for _, tc := range []struct {
		m    Module
		want string
	}{
		{Module{Dir: "lib"}, "cd 'lib'"},
		{Module{Dir: "svc/x", Work: "svc"}, `cd 'svc' && export GOWORK="$PWD/go.work" && cd 'x'`},
		{Module{Dir: "svc", Work: "svc"}, `cd 'svc' && export GOWORK="$PWD/go.work" && cd '.'`},
		{Module{Dir: "a", Work: "svc/inner"}, `cd 'svc/inner' && export GOWORK="$PWD/go.work" && cd '../../a'`},
	} {
		if got := tc.m.Enter(); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.m, got, tc.want)
		}
	}
}

// TestOpenNestedWorkspace runs the modules a go.work below the top ties with it (b builds
// only so), and the top's module alone.
func TestOpenNestedWorkspace(t *testing.T) {
	s, err := Open(context.Background(), fixture.Repo(t, fixture.NestedWorkspace()), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := s.Env
	for _, id := range []string{"example.com/top TestTop", "example.com/a/calc TestSum", "example.com/b TestTotal", "example.com/c TestC"} {
		if e.Tests[id].Status != Pass {
			t.Errorf("%s: %q, want pass; tests %v, broken %v", id, e.Tests[id].Status, e.Tests, e.Broken)
		}
	}
	if m := e.ModuleOf("example.com/b"); m.Dir != "ws/b" || m.Work != "ws" {
		t.Errorf("ModuleOf(b) = %+v", m)
	}
	if got := e.Affected("example.com/a/calc"); len(got) != 2 {
		t.Errorf("Affected(a/calc) = %v", got)
	}
}

// TestOpenModules runs the suite of a repository of three modules, one required by the top
// through a replace and one nested under the top's path: every module's tests run in its
// own folder, no package is counted twice or in the wrong module, and a change to the
// required module affects the tests of the module that requires it.
func TestOpenModules(t *testing.T) {
	s, err := Open(context.Background(), fixture.Repo(t, fixture.MultiModule()), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := s.Env
	if e.Module != "example.com/app" || len(e.Modules) != 3 || e.Workspace {
		t.Errorf("module %q, modules %v, workspace %v", e.Module, e.Modules, e.Workspace)
	}
	wantPkgs := map[string]Package{
		"example.com/app/report":      {Dir: "report", Module: "."},
		"example.com/lib/calc":        {Dir: "lib/calc", Module: "lib"},
		"example.com/app/tools/count": {Dir: "tools/count", Module: "tools"},
	}
	if len(e.Packages) != len(wantPkgs) {
		t.Errorf("packages %v", e.Packages)
	}
	for pkg, want := range wantPkgs {
		if got := e.Packages[pkg]; got.Dir != want.Dir || got.Module != want.Module {
			t.Errorf("%s: dir %q module %q, want %q %q", pkg, got.Dir, got.Module, want.Dir, want.Module)
		}
	}
	for _, id := range []string{"example.com/app/report TestSpread", "example.com/lib/calc TestAbs", "example.com/app/tools/count TestPositive"} {
		if st := e.Tests[id].Status; st != Pass {
			t.Errorf("%s: %q, want pass; tests %v, broken %v", id, st, e.Tests, e.Broken)
		}
	}
	if got := e.Affected("example.com/lib/calc"); !reflect.DeepEqual(got, []string{"example.com/lib/calc", "example.com/app/report"}) {
		t.Errorf("Affected(lib/calc) = %v", got)
	}
	if m := e.ModuleOf("example.com/app/tools/count"); m.Dir != "tools" {
		t.Errorf("ModuleOf(tools/count) = %v", m)
	}
}

// TestOpenWorkspace runs a go.work's modules with the workspace (b builds only with it)
// and leaves out the module it does not use.
func TestOpenWorkspace(t *testing.T) {
	s, err := Open(context.Background(), fixture.Repo(t, fixture.Workspace()), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := s.Env
	if !e.Workspace || e.Module != "" || len(e.Modules) != 2 {
		t.Errorf("workspace %v, module %q, modules %v", e.Workspace, e.Module, e.Modules)
	}
	if e.Tests["example.com/b TestTotal"].Status != Pass || e.Tests["example.com/a/calc TestSum"].Status != Pass {
		t.Errorf("tests %v, broken %v", e.Tests, e.Broken)
	}
	if _, ok := e.Tests["example.com/c TestC"]; ok {
		t.Error("the module the go.work does not use ran")
	}
	if got := e.Affected("example.com/a/calc"); len(got) != 2 {
		t.Errorf("Affected(a/calc) = %v", got)
	}
}

// TestConfigCommandModules: a repository's own command still decides how the suite runs
// when it has several modules; the packages are still found in every module.
func TestConfigCommandModules(t *testing.T) {
	files := fixture.MultiModule()
	files[ConfigFile] = `{"version":1,"command":"cd lib && go test -json -count=1 ./..."}`
	s, err := Open(context.Background(), fixture.Repo(t, files), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := s.Env
	if e.Kind != KindCommand || len(e.Modules) != 3 {
		t.Fatalf("kind %q, modules %v", e.Kind, e.Modules)
	}
	if _, ok := e.Tests["example.com/app/report TestSpread"]; ok || e.Tests["example.com/lib/calc TestAbs"].Status != Pass {
		t.Errorf("not the configured command's tests: %v", e.Tests)
	}
	if e.Packages["example.com/app/report"].Module != "." {
		t.Errorf("packages %v", e.Packages)
	}
}

// TestInModules: one module at the top keeps the plain command; several get one run per
// module that has packages among those asked, in its folder.
func TestInModules(t *testing.T) {
	cmd := func(args string) string { return "go test " + args }
	one := &Env{Module: "example.com/m", Modules: []Module{{Path: "example.com/m", Dir: "."}}}
	if got := one.InModules(nil, cmd); got != "go test ./..." {
		t.Errorf("one module: %q", got)
	}
	e := &Env{Modules: []Module{{Path: "example.com/app", Dir: "."}, {Path: "example.com/app/tools", Dir: "tools"}, {Path: "example.com/lib", Dir: "lib"}},
		Packages: map[string]Package{"example.com/lib/calc": {Dir: "lib/calc", Module: "lib"}}}
	got := e.InModules([]string{"example.com/app/tools/count", "example.com/lib/calc"}, cmd)
	want := "rc=0\n(cd 'tools' && go test 'example.com/app/tools/count') || rc=1\n(cd 'lib' && go test 'example.com/lib/calc') || rc=1\nexit $rc"
	if got != want {
		t.Errorf("several modules:\n%s\nwant\n%s", got, want)
	}
}
