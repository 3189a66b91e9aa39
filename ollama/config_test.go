package ollama

import "testing"

func TestSameServer(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"http://127.0.0.1:11434", "http://127.0.0.1:11434", true},
		{"localhost", "http://127.0.0.1:11434", true},
		{"http://LOCALHOST:11434/", "127.0.0.1", true},
		{"[::1]:11434", "localhost:11434", true},
		{"0.0.0.0", "http://127.0.0.1:11434", true},
		{"127.0.0.2:11434", "localhost", true},
		{"localhost:11435", "localhost:11434", false},
		{"https://localhost", "http://localhost", false},
		{"gpu-box:11434", "http://GPU-BOX:11434", true},
		{"gpu-box:11434", "localhost:11434", false},
		{"10.0.0.5", "10.0.0.6", false},
		{"http://[bad", "http://[bad", true},
		{"http://[bad", "localhost", false},
	} {
		if got := SameServer(c.a, c.b); got != c.same {
			t.Errorf("SameServer(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
		if got := SameServer(c.b, c.a); got != c.same {
			t.Errorf("SameServer(%q, %q) = %v, want %v", c.b, c.a, got, c.same)
		}
	}
}
