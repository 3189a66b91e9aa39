package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func owner(t testing.TB, p string) int {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid)
}

// adopt gives a tree to nobody, but never what a link points to, nor a file with another
// hard link (which lies outside, perhaps in the user's repository).
func TestAdoptTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can give files away")
	}
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, []byte("x"), 0o644)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "b", "f"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "link"))
	os.Symlink(filepath.Dir(outside), filepath.Join(dir, "dirlink"))
	os.Link(outside, filepath.Join(dir, "hard"))
	if err := adopt(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "a"), filepath.Join(dir, "a", "b", "f"), filepath.Join(dir, "link")} {
		if owner(t, p) != nobody {
			t.Errorf("%s is not nobody's", p)
		}
	}
	for _, p := range []string{outside, filepath.Dir(outside)} {
		if owner(t, p) != 0 {
			t.Errorf("%s, outside, was given away", p)
		}
	}
}

// BenchmarkAdopt10k gives a 10,000-file copy (100 folders) to nobody: the cost of Run's first
// command in a fresh copy when frognano is root. "again" walks a copy adopted already.
func BenchmarkAdopt10k(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("only root can give files away")
	}
	dir := b.TempDir()
	for d := 0; d < 100; d++ {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%02d", d))
		os.Mkdir(sub, 0o755)
		for f := 0; f < 100; f++ {
			os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%02d.go", f)), []byte("package p\n"), 0o644)
		}
	}
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if err := adopt(dir, 0, 0); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := adopt(dir, nobody, nobody); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("again", func(b *testing.B) {
		for b.Loop() {
			if err := adopt(dir, nobody, nobody); err != nil {
				b.Fatal(err)
			}
		}
	})
}
