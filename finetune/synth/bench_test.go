package synth

import (
	"context"
	"testing"

	"github.com/frognano/frognano/finetune/internal/fixture"
)

// BenchmarkValidation validates every candidate of the fixture twice, through the switch
// (then a plain confirmation of each survivor) and the naive way (the whole suite per
// candidate on a fresh copy), and reports both and their ratio, and the ratio of the
// screening alone (before the plain confirmations):
//
//	go test -run '^$' -bench Validation -benchtime 1x ./finetune/synth/
func BenchmarkValidation(b *testing.B) {
	repo := fixture.Repo(b, map[string]string{
		"go.mod":              fixture.GoMod("example.com/bench"),
		"calc/calc.go":        fixture.Calc,
		"calc/calc_test.go":   fixture.CalcTest,
		"calc/more.go":        more + half,
		"calc/more_test.go":   moreTest + halfTest,
		"stats/stats.go":      "package stats\n\nimport \"example.com/bench/calc\"\n\nfunc Range(a, b int) int { return calc.Max(a, b) - calc.Max(-a, -b)*-1 }\n",
		"stats/stats_test.go": "package stats\n\nimport \"testing\"\n\nfunc TestRange(t *testing.T) {\n\tif Range(2, 7) != 5 {\n\t\tt.Fatal(Range(2, 7))\n\t}\n}\n",
	})
	for i := 0; i < b.N; i++ {
		opts := Options{N: 1000, Seed: 1, StoreDir: b.TempDir(), CompareNaive: true}
		opts.Env.GoCache, opts.Env.CacheDir = fixture.GoCache(), b.TempDir()
		opts.Env.PackageTimeout = 1e9
		sum, err := Run(context.Background(), repo, opts)
		if err != nil {
			b.Fatal(err)
		}
		nv := sum.Naive
		if !nv.Agree {
			b.Errorf("the two ways disagree")
		}
		b.ReportMetric(float64(nv.Candidates), "candidates")
		b.ReportMetric(nv.SwitchSeconds, "switch-s")
		b.ReportMetric(nv.NaiveSeconds, "naive-s")
		b.ReportMetric(nv.Speedup, "speedup")
		b.ReportMetric(nv.ScreenSeconds, "screen-s")
		b.ReportMetric(nv.ScreenSpeedup, "screen-speedup")
		if nv.ScreenSeconds <= 0 || nv.ConfirmSeconds < 0 || nv.Confirmed > nv.Candidates {
			b.Errorf("screening %.2f s, confirmation %.2f s (%d of %d)", nv.ScreenSeconds, nv.ConfirmSeconds, nv.Confirmed, nv.Candidates)
		}
		b.ReportMetric(sum.TasksPerMinute, "tasks/min")
	}
}
