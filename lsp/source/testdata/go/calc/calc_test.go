package calc

import "testing"

func TestAdd(t *testing.T) {
	c := &Calc{}
	if got := c.Add(1, 2); got != 3 {
		t.Errorf("Add(1, 2) = %d, want 3", got)
	}
}

func TestDiv(t *testing.T) {
	t.Run("by zero", func(t *testing.T) {
		// TODO: a table of cases
	})
}

// Testlower is not a test: go test wants no lower-case letter after "Test".
func Testlower(t *testing.T) {}

func BenchmarkAdd(b *testing.B) {
	for range b.N {
		(&Calc{}).Add(1, 2)
	}
}

func TestMain(m *testing.M) { m.Run() }

func helper(t *testing.T) *Calc {
	t.Helper()
	return &Calc{}
}
