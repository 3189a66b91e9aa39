package gocache

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/frognano/frognano/agent/sandbox"
)

const nobody = 65534

// TestSeal: what a build command left in the layer becomes frognano's own and read-only;
// links and other non-files go, and a file with another name outside is copied, so the
// outside one keeps its owner and the layer no longer shares it.
func TestSeal(t *testing.T) {
	root := t.TempDir()
	layer := filepath.Join(root, "layer")
	outside := filepath.Join(root, "outside")
	writeTo(t, filepath.Join(layer, "a", "aa", "aa01"), "bb02 3 1\n")
	writeTo(t, filepath.Join(layer, "o", "bb", "bb02"), "abc")
	writeTo(t, outside, "shared")
	if err := os.Link(outside, filepath.Join(layer, "o", "bb", "hard")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(layer, "o", "bb", "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(layer, "a", "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(layer, "a"), 0o777)
	if os.Geteuid() == 0 { // as the sandbox leaves it: the commands' user's
		if err := exec.Command("chown", "-hR", "nobody", layer, outside).Run(); err != nil {
			t.Fatal(err)
		}
		if err := sealed(layer); err == nil {
			t.Fatal("a layer of nobody's counts as sealed")
		}
	}
	if err := seal(layer); err != nil {
		t.Fatal(err)
	}
	if err := sealed(layer); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"o/bb/link", "a/fifo"} {
		if _, err := os.Lstat(filepath.Join(layer, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", gone, err)
		}
	}
	err := filepath.Walk(layer, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		if int(st.Uid) != os.Geteuid() || info.Mode().Perm()&0o022 != 0 || info.Mode().IsRegular() && (info.Mode().Perm()&0o200 != 0 || st.Nlink != 1) {
			t.Errorf("%s: uid %d, mode %v, %d links", p, st.Uid, info.Mode(), st.Nlink)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(layer, "o", "bb", "hard")); string(b) != "shared" {
		t.Errorf("the hard-linked file holds %q", b)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(outside, &st); err != nil || os.Geteuid() == 0 && st.Uid != nobody {
		t.Errorf("the file outside changed owner: uid %d (%v)", st.Uid, err)
	}
	// A folder someone else may write is not sealed.
	os.Chmod(layer, 0o777)
	if err := sealed(layer); err == nil {
		t.Error("a layer others may write counts as sealed")
	}
}

// TestBuildReplacesUnsealed: a folder at the trusted layer's path that Build did not seal
// (one a command made first, where it could write) is never served: Build removes it, and
// Layers.Sandbox refuses it.
func TestBuildReplacesUnsealed(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "trusted")
	writeTo(t, filepath.Join(dst, "a", "aa", "aa01"), "bb02 3 1\n")
	os.Chmod(dst, 0o777)
	opts := sandbox.Options{}
	if err := (Layers{Trusted: dst, Scratch: filepath.Join(t.TempDir(), "s")}).Sandbox(&opts, executable(t)); err == nil {
		t.Error("Sandbox took an unsealed trusted layer")
	}
	// Not a checkout: the build fails, after the planted folder is gone.
	if err := Build(context.Background(), t.TempDir(), dst, executable(t)); err == nil {
		t.Error("Build of an empty folder succeeded")
	}
	if _, err := os.Lstat(dst); !os.IsNotExist(err) {
		t.Errorf("the planted layer is still there (%v)", err)
	}
}

// TestBuildReplacesOutdated: a sealed layer without this format's file (an older
// frognano's, which held the repository's compiled tests) is not served: Layers.Sandbox
// refuses it, Build removes it to build it again.
func TestBuildReplacesOutdated(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "trusted")
	writeTo(t, filepath.Join(dst, "a", "aa", "aa01"), "bb02 3 1\n")
	if err := seal(dst); err != nil {
		t.Fatal(err)
	}
	opts := sandbox.Options{}
	if err := (Layers{Trusted: dst, Scratch: filepath.Join(t.TempDir(), "s")}).Sandbox(&opts, executable(t)); err == nil || !errors.Is(err, errOutdated) {
		t.Errorf("Sandbox of an outdated layer: %v", err)
	}
	if err := Build(context.Background(), t.TempDir(), dst, executable(t)); err == nil {
		t.Error("Build of an empty folder succeeded")
	}
	if _, err := os.Lstat(dst); !os.IsNotExist(err) {
		t.Errorf("the outdated layer is still there (%v)", err)
	}
}

// TestScratchMustBeNew: a scratch layer that holds something (the episode's, given to the
// reward run by mistake) is refused.
func TestScratchMustBeNew(t *testing.T) {
	scratch := t.TempDir()
	writeTo(t, filepath.Join(scratch, "a", "aa", "aa01"), "bb02 3 1\n")
	opts := sandbox.Options{}
	err := (Layers{Scratch: scratch}).Sandbox(&opts, executable(t))
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a used scratch layer: %v", err)
	}
	if err := (Layers{Scratch: filepath.Join(t.TempDir(), "new")}).Sandbox(&opts, executable(t)); err != nil {
		t.Errorf("a new scratch layer: %v", err)
	}
}

// TestSealedOutOfReach: in a sandbox that leaves the trusted layer writable (unshare mode,
// or a layer under a writable folder) but runs commands as nobody (frognano root), the
// sealed layer still refuses a command's writes. Here bubblewrap with the layers' folder
// writable stands for it. The same layer as the sandbox leaves it (its commands' user's,
// as Build left it before it sealed) takes the plant: the control.
func TestSealedOutOfReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("commands run as frognano's own user: only a confining sandbox protects the layer")
	}
	ctx := context.Background()
	parent := t.TempDir()
	sealedLayer, unsealed := filepath.Join(parent, "sealed"), filepath.Join(parent, "unsealed")
	for _, l := range []string{sealedLayer, unsealed} {
		writeTo(t, filepath.Join(l, "a", "aa", "aa01"), "bb02 3 1\n")
		writeTo(t, filepath.Join(l, "o", "bb", "bb02"), "abc")
		if err := exec.Command("chown", "-R", "nobody:nogroup", l).Run(); err != nil {
			t.Fatal(err)
		}
	}
	if err := seal(sealedLayer); err != nil {
		t.Fatal(err)
	}
	// The top only: the sandbox adopts (chowns) a writable folder whose top is not nobody's.
	if err := os.Chown(parent, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	r, err := sandbox.NewRunner(ctx, sandbox.Options{Writable: []string{parent}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if uid := r.Isolation().UID; uid != nobody {
		t.Skipf("commands run as %d here, not nobody", uid)
	}
	before := tree(t, sealedLayer)
	const plant = `for l in "$0" "$1"; do
  if printf 'x\n' > "$l/a/aa/aa01" 2>/dev/null; then echo "rewrote in $l"; else echo "refused in $l"; fi
  if mkdir "$l/a/zz" 2>/dev/null; then echo "added in $l"; else echo "refused to add in $l"; fi
done`
	out, err := r.Run(ctx, sandbox.Cmd{Dir: t.TempDir(), Command: "bash -c '" + plant + "' " + sealedLayer + " " + unsealed})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"refused in " + sealedLayer, "refused to add in " + sealedLayer, "rewrote in " + unsealed, "added in " + unsealed} {
		if !strings.Contains(out.Stdout, want) {
			t.Errorf("no %q:\n%s\n%s", want, out.Stdout, out.Stderr)
		}
	}
	if string(before) != string(tree(t, sealedLayer)) {
		t.Error("the command changed the sealed layer")
	}
}

// TestEpisodeGoSettingsStayOut: what an episode's command can do to the go command's
// settings (go env -w, a go env file in its home, GOFLAGS exported) does not reach a
// later run: each runner has a home of its own and the user's go env file is read-only.
// Only where the sandbox confines writes: elsewhere go env -w would write the user's own
// file, which this test must not touch.
func TestEpisodeGoSettingsStayOut(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	ctx := context.Background()
	run := func(command string) sandbox.Output {
		opts := sandbox.Options{}
		if err := (Layers{Scratch: filepath.Join(t.TempDir(), "scratch")}).Sandbox(&opts, executable(t)); err != nil {
			t.Fatal(err)
		}
		r, err := sandbox.NewRunner(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if !r.Isolation().WriteConfined {
			t.Skip("the sandbox does not confine writes here: go env -w would write the user's file")
		}
		out, err := r.Run(ctx, sandbox.Cmd{Dir: t.TempDir(), Command: command})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	const show = `go env GOFLAGS GOTOOLCHAIN; go env GOCACHEPROG | cut -d' ' -f2`
	clean := run(show)
	plant := run(`go env -w GOFLAGS=-toolexec=/bin/false GOCACHEPROG=/bin/false GOTOOLCHAIN=go1.99.0 2>/dev/null
mkdir -p "$HOME/.config/go" && printf 'GOFLAGS=-toolexec=/bin/false\nGOCACHEPROG=/bin/false\n' > "$HOME/.config/go/env"
export GOFLAGS=-toolexec=/bin/false
GOENV="$HOME/.config/go/env" ` + show)
	if !strings.Contains(plant.Stdout, "-toolexec=/bin/false") {
		t.Fatalf("the episode's own settings did not take, so this test proves nothing:\n%s\n%s", plant.Stdout, plant.Stderr)
	}
	if later := run(show); later.Stdout != clean.Stdout || !strings.Contains(clean.Stdout, Subcommand) {
		t.Errorf("a later run's go settings changed: %q, before the episode %q", later.Stdout, clean.Stdout)
	}
}
