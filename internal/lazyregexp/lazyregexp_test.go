package lazyregexp

import (
	"sync"
	"testing"
)

// TestCompiledOnFirstUse: outside a test binary nothing compiles until a method is called,
// and concurrent first calls compile once and agree.
func TestCompiledOnFirstUse(t *testing.T) {
	r := &Regexp{str: `(\w+)=(\d+)`} // as New makes it outside tests
	if r.rx != nil {
		t.Fatal("compiled before use")
	}
	var wg sync.WaitGroup
	got := make([][]string, 8)
	for i := range got {
		wg.Go(func() { got[i] = r.FindStringSubmatch("a=1 b=2") })
	}
	wg.Wait()
	for _, m := range got {
		if len(m) != 3 || m[1] != "a" || m[2] != "1" {
			t.Fatalf("FindStringSubmatch = %q", m)
		}
	}
	if r.rx == nil || !r.MatchString("x=9") || r.MatchString("x=") {
		t.Fatal("MatchString after the first use")
	}
	if got := r.ReplaceAllString("a=1, b=2", "$2"); got != "1, 2" {
		t.Fatalf("ReplaceAllString = %q", got)
	}
}

// TestBadExpressionFailsInTests: in a test binary New compiles at once, so a bad
// expression panics where it is declared, when the package's tests start.
func TestBadExpressionFailsInTests(t *testing.T) {
	if !inTest {
		t.Fatal("a test binary is not recognised as one")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted a bad expression in a test")
		}
	}()
	New(`(`)
}
