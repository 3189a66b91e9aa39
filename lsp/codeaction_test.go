package lsp

import (
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/frognano/frognano/lsp/document"
	"github.com/frognano/frognano/lsp/source"
)

// TestFuncCacheVersions checks the cache the benchmarks in bench_test.go time, across versions of a
// document edited at random: several requests at once for one version (as the background
// parse of a didChange and the code action after it) share one parse, and what they get,
// updated from earlier versions, is what a fresh parse and a fresh position conversion give.
func TestFuncCacheVersions(t *testing.T) {
	t.Parallel()
	text := bigGoFile(40)
	pieces := []string{"x", "}", "{", "\n", "\r\n", "// TODO\n", "func g() {}\n", "\tpanic(\"not implemented\")\n", ""}
	r := rand.New(rand.NewPCG(1, 2))
	var cache funcCache
	for v := int32(1); v <= 300; v++ {
		if v > 1 {
			at := r.IntN(len(text) + 1)
			end := min(len(text), at+r.IntN(3))
			text = text[:at] + pieces[r.IntN(len(pieces))] + text[end:]
			if r.IntN(30) == 0 {
				text = bigGoFile(40) // back to a file that parses
			}
		}
		snap := document.Snapshot{URI: "file:///w/calc.go", LanguageID: "go", Version: v, Text: text}
		got := make([][]source.Func, 4)
		var wg sync.WaitGroup
		for k := range got {
			wg.Go(func() {
				cache.lines(snap)
				got[k] = cache.get(snap, source.Go, "calc.go")
			})
		}
		wg.Wait()
		want, _ := source.Funcs(source.Go, "calc.go", text)
		for k := range got {
			if !reflect.DeepEqual(got[k], want) {
				t.Fatalf("version %d, request %d: functions differ from a fresh parse of\n%s", v, k, text)
			}
			if len(got[k]) > 0 && &got[k][0] != &got[0][0] {
				t.Fatalf("version %d: concurrent requests parsed it separately", v)
			}
		}
		lines := cache.lines(snap)
		for range 5 {
			p := document.Position{Line: uint32(r.IntN(450)), Character: uint32(r.IntN(30))}
			got, err1 := lines.Offset(p)
			want, err2 := document.OffsetOf(text, p)
			if got != want || (err1 == nil) != (err2 == nil) {
				t.Fatalf("version %d: offset of %v is %d, %v; want %d, %v", v, p, got, err1, want, err2)
			}
		}
	}
}
