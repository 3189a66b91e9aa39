package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Regression tests for issue 9 (deny by default, nobody, private mounts, caches per
// repository). Each fails on the sandbox as it was before.

// bwrapRunner is a bubblewrap Runner with opts, closed at the end of t, or t skipped (failed
// under CI) where bubblewrap does not work.
func bwrapRunner(t *testing.T, opts Options) *Runner {
	t.Helper()
	opts.Mode = ModeBwrap
	r, err := NewRunner(context.Background(), opts)
	if err != nil {
		skipOrFail(t, ModeBwrap, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// A file in a home directory that no table names, readable by all, is not readable: the
// homes are empty but for the allowlist.
func TestHomeHiddenByDefault(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil || !isDir(home) {
		t.Skipf("no home directory: %v", err)
	}
	f, err := os.CreateTemp(home, "frognano-test-secret-")
	if err != nil {
		t.Skipf("cannot write in %s: %v", home, err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	fmt.Fprintln(f, secretMark+"in-home")
	f.Close()
	os.Chmod(f.Name(), 0o644)
	r := bwrapRunner(t, Options{})
	o := run(t, r, fmt.Sprintf("cat %q; ls -a %q; echo done", f.Name(), home), 10*time.Second)
	if !strings.HasSuffix(o.Stdout, "done\n") || strings.Contains(o.Stdout, secretMark) || strings.Contains(o.Stdout, filepath.Base(f.Name())) {
		t.Errorf("a file in %s is visible: stdout %q stderr %q", home, o.Stdout, o.Stderr)
	}
	if out, _ := exec.Command("cat", f.Name()).Output(); !strings.Contains(string(out), secretMark) {
		t.Fatal("the fixture is broken: the file is not readable outside the sandbox")
	}
}

// A Unix socket under /run (PostgreSQL's, say) is unreachable: /run is empty inside.
func TestRunSocketsUnreachable(t *testing.T) {
	dir, err := os.MkdirTemp("/run", "frognano-test-")
	if err != nil {
		t.Skipf("cannot make a socket under /run (needs root): %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	sock, accepted := listenUnix(t, filepath.Join(dir, "service.sock"))
	os.Chmod(sock, 0o777) // reachable by anyone, nobody included: only the hiding stops it
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3 to connect with")
	}
	r := bwrapRunner(t, Options{})
	o := run(t, r, connectUnix(sock)+"; echo done", 10*time.Second)
	if !strings.HasSuffix(o.Stdout, "done\n") || strings.Contains(o.Stdout, "connected") || strings.Contains(o.Stdout, "is a socket") || accepted.Load() > 0 {
		t.Errorf("the command reached %s: stdout %q stderr %q", sock, o.Stdout, o.Stderr)
	}
	out, _ := exec.Command("bash", "-c", connectUnix(sock)).CombinedOutput()
	if !strings.Contains(string(out), "connected") {
		t.Fatalf("the fixture is broken: outside the sandbox the socket does not answer: %s", out)
	}
}

// A PATH entry inside a folder the secrets table hides (~/.aws/bin) keeps working under
// bubblewrap, and the folder stays hidden around it (it used to be left unmasked); unshare
// mode cannot bind the entry back, so the folder is hidden with it.
func TestPathEntryInMaskedFolder(t *testing.T) {
	for _, m := range []Mode{ModeBwrap, ModeUnshare} {
		t.Run(string(m), func(t *testing.T) {
			home, files := fakeHome(t)
			bin := filepath.Join(home, ".aws", "bin")
			os.MkdirAll(bin, 0o755)
			tool := filepath.Join(bin, "awstool")
			if err := os.WriteFile(tool, []byte("#!/bin/sh\necho awstool ran\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
			r := secretsRunner(t, m, nil)
			o := run(t, r, "awstool; "+readAll(home, files), 30*time.Second)
			checkHidden(t, o, files)
			if m == ModeBwrap && !strings.HasPrefix(o.Stdout, "awstool ran\n") {
				t.Errorf("the PATH entry inside ~/.aws does not work: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
		})
	}
}

// As root, commands run as nobody: a root-owned 0600 file that no table names is unreadable.
func TestRootFilesUnreadable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root has root-owned files to protect")
	}
	dir := varTmpDir(t)
	os.Chmod(dir, 0o755)
	secret := filepath.Join(dir, "wg0.key")
	if err := os.WriteFile(secret, []byte(secretMark+"root-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := bwrapRunner(t, Options{})
	if r.Isolation().UID != nobody {
		t.Fatalf("as root, bwrap commands must run as nobody: %s", r.Isolation().Summary())
	}
	o := run(t, r, fmt.Sprintf("id -u; cat %q; echo done", secret), 10*time.Second)
	if o.Stdout != fmt.Sprintf("%d\ndone\n", nobody) || !strings.Contains(o.Stderr, "Permission denied") {
		t.Errorf("want uid %d and the file unreadable: stdout %q stderr %q", nobody, o.Stdout, o.Stderr)
	}
}

// Something mounted on the machine while a command runs does not appear inside it. Systemd
// makes / shared, so that mounts propagate; containers often do not, so the test makes a
// shared mount of its own to mount under.
func TestHostMountsDoNotPropagate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting on the machine needs root")
	}
	for _, m := range []Mode{ModeBwrap, ModeUnshare} {
		t.Run(string(m), func(t *testing.T) { testHostMounts(t, m) })
	}
}

func testHostMounts(t *testing.T, m Mode) {
	shared := varTmpDir(t) // outside the private /tmp, so visible inside
	os.Chmod(shared, 0o755)
	target := filepath.Join(shared, "mnt")
	os.Mkdir(target, 0o755)
	if err := syscall.Mount(shared, shared, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(shared, syscall.MNT_DETACH) })
	if err := syscall.Mount("", shared, "", syscall.MS_SHARED, ""); err != nil {
		t.Skipf("cannot make a mount shared here: %v", err)
	}
	r := newRunner(t, m, nil)
	copyDir := t.TempDir()
	cmd := fmt.Sprintf(`touch started; while [ ! -e go ]; do sleep 0.02; done
cat %[1]s/planted 2>/dev/null; touch %[1]s/written 2>/dev/null && echo WROTE; echo done`, target)
	type result struct {
		o   Output
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := r.Run(context.Background(), Cmd{Dir: copyDir, Command: cmd, Timeout: 20 * time.Second})
		done <- result{o, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(copyDir, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
	}
	err := syscall.Mount("frognano-test", target, "tmpfs", 0, "size=1m,mode=0777")
	if err == nil {
		t.Cleanup(func() { syscall.Unmount(target, syscall.MNT_DETACH) })
		err = os.WriteFile(filepath.Join(target, "planted"), []byte(secretMark+"mounted\n"), 0o644)
	}
	os.WriteFile(filepath.Join(copyDir, "go"), nil, 0o644)
	res := <-done
	if err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !r.Isolation().WriteConfined && !strings.Contains(res.o.Stdout, secretMark) {
		res.o.Stdout = strings.TrimPrefix(res.o.Stdout, "WROTE\n") // the directory under the mount
	}
	if res.o.Stdout != "done\n" {
		t.Errorf("the mount made during the command reached it: stdout %q stderr %q", res.o.Stdout, res.o.Stderr)
	}
}

// Each repository gets a Go build cache of its own; one repository's commands cannot write
// another's.
func TestGoCachePerRepository(t *testing.T) {
	cache := varTmpDir(t)
	os.Chmod(cache, 0o755) // nobody must reach it
	t.Setenv("FROGNANO_CACHE", cache)
	a, b := t.TempDir(), t.TempDir()
	link := filepath.Join(t.TempDir(), "a-link")
	os.Symlink(a, link)
	if GoCacheFor(a) == GoCacheFor(b) || GoCacheFor(a) != GoCacheFor(link) || GoCacheFor(a) != GoCacheFor(a+"/") {
		t.Fatalf("GoCacheFor: a %s, b %s, a through a link %s", GoCacheFor(a), GoCacheFor(b), GoCacheFor(link))
	}
	ra := bwrapRunner(t, Options{GoCache: GoCacheFor(a)})
	rb := bwrapRunner(t, Options{GoCache: GoCacheFor(b)})
	o := run(t, ra, `go env GOCACHE; echo planted > "$(go env GOCACHE)/planted" && echo ok`, time.Minute)
	if o.Stdout != GoCacheFor(a)+"\nok\n" {
		t.Fatalf("repository a's cache: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
	o = run(t, rb, fmt.Sprintf(`go env GOCACHE; echo x > %q/other && echo WROTE; true`, GoCacheFor(a)), time.Minute)
	if o.Stdout != GoCacheFor(b)+"\n" {
		t.Errorf("repository b's commands must use their own cache and not write a's: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
}

// The toolchains still work as nobody, deny by default: go test on a module with a test, and
// Python.
func TestGoTestAndPython(t *testing.T) {
	r := bwrapRunner(t, Options{GoCache: filepath.Join(t.TempDir(), "go-build")})
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.21\n",
		"calc.go":      "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o, err := r.Run(context.Background(), Cmd{Dir: dir, Command: `go test ./... && python3 -c 'import sys, json; print("python", sys.version_info[0])' && echo new > new.txt && echo changed >> calc.go && echo ok`, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if o.ExitCode != 0 || !strings.Contains(o.Stdout, "ok  \texample.com/calc") || !strings.Contains(o.Stdout, "python 3\n") || !strings.HasSuffix(o.Stdout, "ok\n") {
		t.Errorf("exit %d stdout %q stderr %q", o.ExitCode, o.Stdout, o.Stderr)
	}
}

// In unshare mode the empty file that masks the secrets lives in the real /tmp and belongs to
// the command's user: the command cannot change it (it would show in every masked path).
func TestUnshareEmptyFileReadOnly(t *testing.T) {
	r := newRunner(t, ModeUnshare, nil)
	if !r.Isolation().SecretsHidden {
		t.Skipf("unshare mode hides nothing here: %s", r.Isolation().Why)
	}
	o := run(t, r, fmt.Sprintf(`chmod 666 %[1]q; echo planted > %[1]q; cat %[1]q; echo done`, r.empty), 10*time.Second)
	st, err := os.Stat(r.empty)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(r.empty); len(b) > 0 || st.Mode().Perm() != 0o444 || o.Stdout != "done\n" {
		t.Errorf("the empty file changed: mode %v, content %q; stdout %q stderr %q", st.Mode().Perm(), b, o.Stdout, o.Stderr)
	}
}

// fnm puts a per-shell link under XDG_RUNTIME_DIR (/run/user/UID, hidden) on PATH: the entry
// works, resolved, while the rest of /run stays hidden.
func TestPathEntryThroughRunLink(t *testing.T) {
	home, _ := fakeHome(t)
	install := filepath.Join(home, "node-versions", "v20", "installation")
	os.MkdirAll(filepath.Join(install, "bin"), 0o755)
	os.WriteFile(filepath.Join(install, "bin", "nodeish"), []byte("#!/bin/sh\necho nodeish ran\n"), 0o755)
	shells, err := os.MkdirTemp("/run", "frognano-test-")
	if err != nil {
		t.Skipf("cannot write under /run (needs root): %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shells) })
	os.WriteFile(filepath.Join(shells, "other"), []byte(secretMark+"run\n"), 0o644)
	link := filepath.Join(shells, "1234_5678")
	os.Symlink(install, link)
	t.Setenv("PATH", filepath.Join(link, "bin")+":"+os.Getenv("PATH"))
	r := bwrapRunner(t, Options{})
	o := run(t, r, fmt.Sprintf("nodeish; cat %s/other; ls %s; echo done", shells, shells), 10*time.Second)
	if o.Stdout != "nodeish ran\n1234_5678\ndone\n" {
		t.Errorf("want the PATH entry through /run to work and nothing else there: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
}

// With ~/bin on PATH (Debian's default ~/.profile) and the home under /home (hidden whole),
// the tool in ~/bin runs but the rest of the home stays hidden; so when ~/bin links into
// ~/dotfiles. The home itself used to be bound back, read-only but whole.
func TestHomeBinNotBoundWhole(t *testing.T) {
	for _, dotfiles := range []bool{false, true} {
		t.Run(fmt.Sprintf("dotfiles=%v", dotfiles), func(t *testing.T) {
			goEnvironmentCached(context.Background()) // with the real HOME, as in frognano
			home, err := os.MkdirTemp("/home", "frognano-test-")
			if err != nil {
				t.Skipf("cannot make a home under /home (needs root): %v", err)
			}
			t.Cleanup(func() { os.RemoveAll(home) })
			os.Chmod(home, 0o755)
			bin := filepath.Join(home, "bin")
			if dotfiles {
				bin = filepath.Join(home, "dotfiles", "bin")
				os.MkdirAll(bin, 0o755)
				os.Symlink("dotfiles/bin", filepath.Join(home, "bin"))
				os.WriteFile(filepath.Join(home, "dotfiles", "token"), []byte(secretMark+"dotfiles\n"), 0o644)
			}
			os.MkdirAll(bin, 0o755)
			os.WriteFile(filepath.Join(bin, "hometool"), []byte("#!/bin/sh\necho hometool ran\n"), 0o755)
			os.WriteFile(filepath.Join(home, "notes.txt"), []byte(secretMark+"home\n"), 0o644)
			t.Setenv("HOME", home)
			t.Setenv("PATH", filepath.Join(home, "bin")+":"+os.Getenv("PATH"))
			r := bwrapRunner(t, Options{})
			for _, a := range r.Allowed() {
				if holds(a.Path, []string{home}) {
					t.Errorf("the allowlist binds %s, which holds the home %s", a.Path, home)
				}
			}
			o := run(t, r, fmt.Sprintf("hometool; cat %[1]s/notes.txt %[1]s/dotfiles/token 2>/dev/null; echo done", home), 10*time.Second)
			if o.Stdout != "hometool ran\ndone\n" {
				t.Errorf("want ~/bin to work and the rest of the home hidden: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
		})
	}
}

// A Unix socket listening outside /run and the homes (/var/snap/lxd/common/lxd/unix.socket,
// /var/lib/mysql/mysql.sock) is unreachable: every listening path socket the command could
// see is masked. One in the copy, the command's own, still answers.
func TestListeningSocketsMasked(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to connect with")
	}
	dir := varTmpDir(t)
	os.Chmod(dir, 0o755)
	sock, accepted := listenUnix(t, filepath.Join(dir, "lxd.socket"))
	os.Chmod(sock, 0o777) // reachable by anyone, nobody included: only the mask stops it
	copyDir := t.TempDir()
	os.Chmod(copyDir, 0o777)
	own, _ := listenUnix(t, filepath.Join(copyDir, "own.sock"))
	os.Chmod(own, 0o777)
	r := bwrapRunner(t, Options{})
	o, err := r.Run(context.Background(), Cmd{Dir: copyDir, Command: connectUnix(sock) + "; echo own; " + connectUnix(own) + "; echo done", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(o.Stdout, "own\n") || accepted.Load() > 0 {
		t.Errorf("the command reached %s: stdout %q stderr %q", sock, o.Stdout, o.Stderr)
	}
	if !strings.HasSuffix(o.Stdout, "own\nis a socket\nconnected\ndone\n") {
		t.Errorf("the socket in the copy must stay reachable: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
	out, _ := exec.Command("bash", "-c", connectUnix(sock)).CombinedOutput()
	if !strings.Contains(string(out), "connected") {
		t.Fatalf("the fixture is broken: outside the sandbox the socket does not answer: %s", out)
	}
}
