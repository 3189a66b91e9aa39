package synth

import (
	"context"
	"testing"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
)

// TestPlainCopy confirms candidates one after another on one copy, and proves them again,
// each on a fresh copy, when a test changed the shared tree: here a test that, when the
// code is wrong, leaves a file behind in its package's folder.
func TestPlainCopy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		test  string
		redos int
	}{
		{"clean", "if Max(1, 2) != 2 || Max(2, 1) != 2 {\n\t\tt.Fatal(Max(1, 2))\n\t}", 0},
		{"writes", "if Max(1, 2) != 2 || Max(2, 1) != 2 {\n\t\tos.WriteFile(\"junk\", nil, 0o644)\n\t\tt.Fatal(Max(1, 2))\n\t}", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := fixture.Repo(t, map[string]string{
				"go.mod":      fixture.GoMod("example.com/plain"),
				"a/a.go":      "package a\n\n// Max is the larger of x and y.\nfunc Max(x, y int) int {\n\tif x > y {\n\t\treturn x\n\t}\n\treturn y\n}\n",
				"a/a_test.go": "package a\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nvar _ = os.Getpid\n\nfunc TestMax(t *testing.T) {\n\t" + tc.test + "\n}\n",
			})
			ctx := context.Background()
			opts := testOptions(t)
			s, err := env.Open(ctx, repo, opts.Env)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r := newRunner(s, opts)
			ms, err := GoMutants("example.com/plain/a", "a/a.go", mustRead(t, s, "a/a.go"))
			if err != nil {
				t.Fatal(err)
			}
			r.sources["a/a.go"] = mustRead(t, s, "a/a.go")
			var vs []*verdict
			pc := &plainCopy{r: r}
			for _, m := range ms {
				// x > y → x >= y survives (equal values); x > y → x <= y is caught.
				if m.Operator == OpFlipComparison || m.Operator == OpOffByOne {
					v := &verdict{m: m}
					pc.confirm(ctx, v)
					vs = append(vs, v)
				}
			}
			pc.Close(ctx)
			if len(vs) != 2 {
				t.Fatalf("%d candidates", len(vs))
			}
			for _, v := range vs {
				want := ""
				if v.m.Operator == OpOffByOne {
					want = RejectUnconfirm
				}
				if v.reason != want {
					t.Errorf("%s: %q, want %q", v.m.Desc, v.reason, want)
				}
				if want == "" && (len(v.failToPass) != 1 || v.patch == "") {
					t.Errorf("%s: %v %q", v.m.Desc, v.failToPass, v.patch)
				}
			}
			if r.redone != tc.redos {
				t.Errorf("confirmed again on fresh copies: %d, want %d", r.redone, tc.redos)
			}
		})
	}
}

func mustRead(t *testing.T, s *env.Session, file string) []byte {
	b, err := readSource(s.Checkout.Dir + "/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
