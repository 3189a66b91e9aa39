package source

import (
	"strings"
	"testing"
	"time"
)

func TestHangProbe(t *testing.T) {
	for _, s := range []string{"<a{", "<a b={", "`${", "x=/[", "(<a>{", "f'{", "<a>{<b>{"} {
		for _, n := range []int{8, 20, 200, 5000} {
			text := strings.Repeat(s, n)
			st := time.Now()
			for _, l := range []Lang{Python, JavaScript} {
				Funcs(l, "a.js", text)
			}
			if d := time.Since(st); d > 50*time.Millisecond {
				t.Logf("%q x%d: %v", s, n, d)
			}
		}
	}
}
