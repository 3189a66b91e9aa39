package env

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/internal/fixture"
)

func testOptions(t *testing.T) Options {
	return Options{PackageTimeout: 2 * time.Second, GoCache: fixture.GoCache(), CacheDir: t.TempDir()}
}

// mixed has a good package, a flaky test, a failing one and one that hangs.
var mixed = map[string]string{
	"go.mod":            fixture.GoMod("example.com/mixed"),
	"calc/calc.go":      fixture.Calc,
	"calc/calc_test.go": fixture.CalcTest,
	"flaky/flaky.go":    "package flaky\n",
	"flaky/flaky_test.go": `package flaky

import (
	"os"
	"testing"
)

// TestFlaky fails the first time it runs in a copy, and passes after.
func TestFlaky(t *testing.T) {
	b, _ := os.ReadFile("count")
	os.WriteFile("count", append(b, 'x'), 0o644)
	if len(b) == 0 {
		t.Fatal("first run")
	}
}

func TestSteady(t *testing.T) {}
`,
	"broken/broken_test.go": `package broken

import "testing"

func TestAlwaysFails(t *testing.T) { t.Fatal("always") }
func TestFine(t *testing.T)        {}
`,
	"hang/hang_test.go": `package hang

import (
	"testing"
	"time"
)

func TestHang(t *testing.T)  { time.Sleep(time.Hour) }
func TestAfter(t *testing.T) {}
`,
}

func TestOpenRecordsOutcomes(t *testing.T) {
	repo := fixture.Repo(t, mixed)
	opts := testOptions(t)
	ctx := context.Background()
	s, err := Open(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := s.Env
	want := map[string]string{
		"example.com/mixed/calc TestAbs":           Pass,
		"example.com/mixed/flaky TestFlaky":        Flaky,
		"example.com/mixed/flaky TestSteady":       Pass,
		"example.com/mixed/broken TestAlwaysFails": Fail,
		"example.com/mixed/broken TestFine":        Pass,
		"example.com/mixed/hang TestHang":          Hung,
		"example.com/mixed/hang TestAfter":         Pass,
	}
	for id, st := range want {
		if got := e.Tests[id].Status; got != st {
			t.Errorf("%s: %q, want %q", id, got, st)
		}
	}
	if e.Module != "example.com/mixed" || e.Packages["example.com/mixed/calc"].Dir != "calc" {
		t.Errorf("module %q, packages %+v", e.Module, e.Packages)
	}
	if got := e.Affected("example.com/mixed/calc"); len(got) != 1 {
		t.Errorf("Affected(calc) = %v", got)
	}
	if e.Cached {
		t.Error("the first environment came from the cache")
	}

	// The same commit again: from the cache, at no cost.
	start := time.Now()
	s2, err := Open(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !s2.Env.Cached || len(s2.Env.Tests) != len(e.Tests) {
		t.Errorf("second Open: cached %v, %d tests", s2.Env.Cached, len(s2.Env.Tests))
	}
	t.Logf("environment: %.1f s to make, %.0f ms from the cache", e.Seconds, time.Since(start).Seconds()*1000)
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  error
		words string
	}{
		{"no tests", map[string]string{"go.mod": fixture.GoMod("example.com/none"), "a/a.go": "package a\n"}, ErrNoTests, ""},
		{"all failing", map[string]string{"go.mod": fixture.GoMod("example.com/bad"),
			"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestNo(t *testing.T) { t.Fatal(1) }\n"}, ErrNonePass, ""},
		{"nothing", map[string]string{"README": "hi"}, ErrUnsupported, "no test suite"},
		{"config format", map[string]string{"go.mod": fixture.GoMod("example.com/c"),
			ConfigFile: `{"version":1,"command":"make test","format":"tap"}`}, ErrUnsupported, "tap"},
		{"config python format on go", map[string]string{"go.mod": fixture.GoMod("example.com/c"),
			ConfigFile: `{"version":1,"command":"make test","format":"junit-xml"}`}, ErrUnsupported, "Python"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(ctx, fixture.Repo(t, tc.files), testOptions(t))
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("err = %v, want %v with %q", err, tc.want, tc.words)
			}
		})
	}
}

func TestConfigCommandOverrides(t *testing.T) {
	repo := fixture.Repo(t, map[string]string{
		"go.mod":              fixture.GoMod("example.com/cfg"),
		"calc/calc.go":        fixture.Calc,
		"calc/calc_test.go":   fixture.CalcTest,
		"other/other_test.go": "package other\n\nimport \"testing\"\n\nfunc TestOther(t *testing.T) {}\n",
		ConfigFile:            `{"version":1,"command":"go test -json -count=1 ./calc"}`,
	})
	s, err := Open(context.Background(), repo, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Env.Kind != KindCommand {
		t.Errorf("kind %q", s.Env.Kind)
	}
	if _, ok := s.Env.Tests["example.com/cfg/other TestOther"]; ok {
		t.Error("the configured command was not the one run")
	}
	if s.Env.Tests["example.com/cfg/calc TestAbs"].Status != Pass {
		t.Errorf("tests %v", s.Env.Tests)
	}
}

func TestNotARepository(t *testing.T) {
	_, err := Open(context.Background(), t.TempDir(), testOptions(t))
	if !errors.Is(err, ErrNotRepository) {
		t.Fatalf("err = %v", err)
	}
}
