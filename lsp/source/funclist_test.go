package source

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestFuncList runs long chains of moves and replacements on funcLists (chunks split, and
// compacted once there are too many) and compares each version with the same operations
// on a plain slice; every version stays as it was after later ones are made from it.
func TestFuncList(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, funcChunkSize - 1, funcChunkSize, 5*funcChunkSize + 3, 1000} {
		want := make([]Func, n)
		for i := range want {
			s := 100 * i
			want[i] = Func{Name: "f", Start: s, BodyStart: s + 10, BodyEnd: s + 80, End: s + 90}
		}
		l := listOf(append([]Func(nil), want...))
		type version struct {
			l    funcList
			want []Func
		}
		var old []version
		for step := range 500 {
			if n == 0 && r.IntN(4) > 0 {
				continue
			}
			want = append([]Func(nil), want...)
			i, d := 0, r.IntN(21)-10
			switch op := r.IntN(4); {
			case op == 0:
				// Replace a few functions by others (none to dozens), as a splice does.
				i = r.IntN(len(want) + 1)
				j := min(len(want), i+r.IntN(4))
				if r.IntN(8) == 0 {
					j = min(len(want), i+r.IntN(3*funcChunkSize))
				}
				var mid []Func
				at := 0
				if i > 0 {
					at = want[i-1].End
				}
				for k := range r.IntN(5) + r.IntN(2)*r.IntN(2*funcChunkSize) {
					mid = append(mid, Func{Name: "m", Start: at + k, End: at + k})
				}
				rest := make([]Func, 0, len(want)-j)
				for _, f := range want[j:] {
					rest = append(rest, shifted(f, d))
				}
				want = append(append(want[:i:i], mid...), rest...)
				l = l.replace(i, j, mid, d)
				n = len(want)
			case r.IntN(3) == 0:
				if n == 0 {
					continue
				}
				i = r.IntN(n)
				f := want[i]
				f.Name, f.End = "g", f.End+1
				want[i] = f
				l = l.with(i, f)
			default:
				if n == 0 {
					continue
				}
				i = r.IntN(n)
				for k := i; k < n; k++ {
					want[k] = shifted(want[k], d)
				}
				l = l.moved(i, d)
			}
			if got := l.slice(); !reflect.DeepEqual(got, want) {
				t.Fatalf("n %d step %d: list differs from the slice", n, step)
			}
			if l.n != n {
				t.Fatalf("n %d step %d: length %d", n, step, l.n)
			}
			for range 5 {
				if n == 0 {
					break
				}
				k := r.IntN(n)
				if l.at(k) != want[k] {
					t.Fatalf("n %d step %d: at(%d) = %+v, want %+v", n, step, k, l.at(k), want[k])
				}
				off := want[k].Start + r.IntN(95)
				got, ok := l.innermost(off)
				var wantFn *Func
				for j := range want {
					if f := &want[j]; f.Start <= off && off <= f.End && (wantFn == nil || f.End-f.Start < wantFn.End-wantFn.Start) {
						wantFn = f
					}
				}
				if ok != (wantFn != nil) || ok && got != *wantFn {
					t.Fatalf("n %d step %d: innermost(%d) = %+v, %v", n, step, off, got, ok)
				}
			}
			if len(l.chunks) > 2*(n/funcChunkSize)+12 {
				t.Fatalf("n %d step %d: %d chunks, never compacted", n, step, len(l.chunks))
			}
			if step%50 == 0 {
				old = append(old, version{l, want})
			}
		}
		for _, v := range old {
			if !reflect.DeepEqual(v.l.slice(), v.want) {
				t.Fatalf("n %d: a later version changed an earlier one", n)
			}
		}
	}
}
