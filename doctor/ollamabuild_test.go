package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckOllamaBuild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "ollama")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("OLLAMA_BIN", bin)
	if r := checkOllamaBuild(context.Background(), &state{}); r.Status != OK || !strings.Contains(r.Verdict, "not built by frognano") {
		t.Errorf("an official build: %+v", r)
	}
	os.WriteFile(filepath.Join(dir, "ollama.build"), []byte("key=k\ncflags=-O2\ncpu=Xeon\nfeatures=avx2\n"), 0o644)
	if r := checkOllamaBuild(context.Background(), &state{}); r.Status != Warn || !strings.Contains(r.Fix, "-march=native") {
		t.Errorf("a baseline build: %+v", r)
	}
	os.WriteFile(filepath.Join(dir, "ollama.build"), []byte("key=k\ncflags=-O3 -march=native\ncpu=Xeon\nfeatures=avx2 fma\n"), 0o644)
	if r := checkOllamaBuild(context.Background(), &state{}); r.Status != OK || !strings.Contains(r.Verdict, "-march=native for Xeon (avx2 fma)") {
		t.Errorf("a native build: %+v", r)
	}
}
