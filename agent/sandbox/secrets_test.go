package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The escape tests below make a fake home outside /tmp (the sandbox's /tmp is its own, which
// would hide the fixtures whether or not anything is masked), point HOME at it before the
// Runner starts, and try to read it from inside.

// wellKnown are the secrets every build must hide, written out rather than taken from the
// table, so that dropping one from the table fails the test.
var wellKnown = []string{
	".ssh/id_rsa", ".ssh/id_ed25519", ".gnupg/private-keys-v1.d/k.key", ".aws/credentials",
	".azure/msal_token_cache.json", ".config/gcloud/credentials.db", ".kube/config",
	".docker/config.json", ".password-store/bank.gpg", ".config/gh/hosts.yml", ".config/hub",
	".netrc", ".git-credentials", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".pgpass",
	".my.cnf", ".vault-token", ".terraform.d/credentials.tfrc.json", ".config/op/config",
	".local/share/keyrings/login.keyring", ".bash_history", ".zsh_history", ".python_history",
	".psql_history", ".mysql_history", ".lesshst", ".local/share/fish/fish_history",
	".cargo/credentials", ".cargo/credentials.toml", ".gradle/gradle.properties",
	".m2/settings.xml", ".config/git/credentials",
}

const secretMark = "frognano-secret-"

// fakeHome is a home full of secrets, set as HOME (and XDG_CONFIG_HOME a second directory with
// one more, HISTFILE one more file) for the rest of t. It returns the home and every secret
// file, each holding secretMark and its path.
func fakeHome(t *testing.T) (home string, files []string) {
	// The Go caches are asked once per process: with the real HOME, as in frognano, not with
	// this one, which is gone after t.
	goEnvironmentCached(context.Background())
	home, xdg := varTmpDir(t), varTmpDir(t)
	for _, k := range []string{"XDG_DATA_HOME", "XDG_STATE_HOME", "GNUPGHOME", "CARGO_HOME", "DOCKER_CONFIG",
		"GRADLE_USER_HOME", "KUBECONFIG", "NETRC", "SSH_AUTH_SOCK", "AZURE_CONFIG_DIR", "PASSWORD_STORE_DIR"} {
		t.Setenv(k, "") // restored at the end of t
		os.Unsetenv(k)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("HISTFILE", filepath.Join(home, "history", "custom"))
	rel := append([]string(nil), wellKnown...)
	// And one file for every other entry of the table under a home, as a file or in a folder.
	for _, s := range secrets {
		p, ok := strings.CutPrefix(s.path, "~/")
		if name, rest, _ := strings.Cut(strings.TrimPrefix(s.path, "$"), "/"); !ok && varDefaults[name] != "" {
			p, ok = filepath.Join(varDefaults[name], rest), true
		}
		if ok && !covered(p, rel) {
			rel = append(rel, p)
		}
	}
	for _, r := range rel {
		files = append(files, filepath.Join(home, r))
	}
	files = append(files, filepath.Join(xdg, "gh", "hosts.yml"), filepath.Join(home, "history", "custom"),
		filepath.Join(home, "dotfiles", "npmrc")) // what ~/.npmrc links to, below
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(secretMark+f+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A dotfiles manager's link: the target holds the secret.
	npmrc := filepath.Join(home, ".npmrc")
	os.Remove(npmrc)
	if err := os.Symlink(filepath.Join(home, "dotfiles", "npmrc"), npmrc); err != nil {
		t.Fatal(err)
	}
	return home, files
}

// covered reports whether p is one of paths, or under or above one.
func covered(p string, paths []string) bool {
	for _, q := range paths {
		if within(p, q) || within(q, p) {
			return true
		}
	}
	return false
}

// readAll tries every way a command would read the secrets: first undo the masks, then cat
// each, grep the whole home, list what is non-empty.
func readAll(home string, files []string) string {
	return `for f in ` + shellWords(files) + `; do umount -l "$f" 2>/dev/null; done
` + readCmd(home, files)
}

// readCmd is readAll without the umounts, to run outside the sandbox.
func readCmd(home string, files []string) string {
	return fmt.Sprintf(`for f in %[1]s; do cat "$f" 2>/dev/null; done
grep -rs %[3]s %[2]s %[4]q
find %[2]s %[4]q -type f -size +0c 2>/dev/null | sed 's/^/nonempty: /'
ls -A %[2]s/.ssh | sed 's/^/listed: /'
echo done`, shellWords(files), home, secretMark, os.Getenv("XDG_CONFIG_HOME"))
}

func shellWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// secretsRunner starts a Runner in mode m that hides secrets, or skips t.
func secretsRunner(t *testing.T, m Mode, writable []string) *Runner {
	t.Helper()
	r, err := NewRunner(context.Background(), Options{Mode: m, Writable: writable})
	if err != nil {
		skipOrFail(t, m, err)
	}
	t.Cleanup(func() { r.Close() })
	if !r.Isolation().SecretsHidden {
		if m == ModeBwrap {
			t.Fatalf("bwrap mode that does not hide secrets: %s", r.Isolation().Summary())
		}
		t.Skipf("%s mode does not hide secrets, as its Isolation says: %s", m, r.Isolation().Why)
	}
	return r
}

// checkHidden fails t if o shows any secret file's content or lists any as non-empty.
func checkHidden(t *testing.T, o Output, files []string) {
	t.Helper()
	if !strings.HasSuffix(o.Stdout, "done\n") {
		t.Fatalf("the reads did not run: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
	if strings.Contains(o.Stdout+o.Stderr, secretMark) {
		t.Errorf("a secret was read:\n%s%s", o.Stdout, o.Stderr)
	}
	for _, f := range files {
		if strings.Contains(o.Stdout, "nonempty: "+f+"\n") {
			t.Errorf("%s is visible and not empty", f)
		}
	}
	if strings.Contains(o.Stdout, "listed: ") {
		t.Errorf("~/.ssh is not empty:\n%s", o.Stdout)
	}
}

func TestSecretsHidden(t *testing.T) {
	for _, m := range []Mode{ModeBwrap, ModeUnshare} {
		t.Run(string(m), func(t *testing.T) {
			home, files := fakeHome(t)
			sock, accepted := listenUnix(t, filepath.Join(home, "agent.sock"))
			t.Setenv("SSH_AUTH_SOCK", sock)
			// Made after the Runner started: looked up per command.
			late := filepath.Join(home, ".vault-token")
			os.Remove(late)
			r := secretsRunner(t, m, nil)
			if err := os.WriteFile(late, []byte(secretMark+late+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			o := run(t, r, readAll(home, files)+"\n"+connectUnix(sock), 30*time.Second)
			checkHidden(t, o, files)
			if strings.Contains(o.Stdout, "connected") || strings.Contains(o.Stdout, "is a socket") || accepted.Load() > 0 {
				t.Errorf("the command reached the agent socket $SSH_AUTH_SOCK: %q", o.Stdout)
			}
			// Not vacuous: without the sandbox the same command finds them all.
			plain := exec.Command("bash", "-c", readCmd(home, files)+"\n"+connectUnix(sock))
			out, _ := plain.CombinedOutput()
			for _, f := range files {
				if st, err := os.Lstat(f); err == nil && st.Mode().IsRegular() && !strings.Contains(string(out), secretMark+f) {
					t.Errorf("the fixture is broken: outside the sandbox %s is not read", f)
				}
			}
			if !strings.Contains(string(out), "is a socket") {
				t.Errorf("the fixture is broken: outside the sandbox the agent socket is not found: %s", out)
			}
		})
	}
}

// listenUnix listens on a Unix socket at path and counts the connections.
func listenUnix(t *testing.T, path string) (string, *atomic.Int32) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return path, &n
}

// connectUnix is a command that reports whether sock is a socket, and tries to connect when
// Python is there to do it (bash cannot).
func connectUnix(sock string) string {
	return fmt.Sprintf(`test -S %[1]q && echo "is a socket"
for py in /usr/bin/python3 /usr/local/bin/python3; do
	[ -x $py ] && $py -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print("connected")' %[1]q 2>/dev/null; break
done; true`, sock)
}

// Toolchains under the real home keep working: only the secrets go.
func TestToolchainsUnderHomeStay(t *testing.T) {
	for _, m := range []Mode{ModeBwrap, ModeUnshare} {
		t.Run(string(m), func(t *testing.T) {
			home, _ := fakeHome(t)
			tools := map[string]string{
				".cargo/bin/cargo-tool":                  "cargo-tool ran",
				".nvm/versions/node/v20.0.0/bin/nodeish": "nodeish ran",
				".local/bin/localtool":                   "localtool ran",
			}
			var cmd []string
			for rel, says := range tools {
				p := filepath.Join(home, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+says+"'\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				cmd = append(cmd, p)
			}
			conf := filepath.Join(home, ".cargo", "config.toml") // beside the masked credentials
			if err := os.WriteFile(conf, []byte("[build]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("DOCKER_CONFIG", home) // too broad to hide
			// Deny by default: ~/.local/bin is reachable because it is on PATH.
			t.Setenv("PATH", filepath.Join(home, ".local", "bin")+":"+os.Getenv("PATH"))
			r := secretsRunner(t, m, nil)
			o := run(t, r, strings.Join(cmd, " && ")+" && cat "+conf+" && cat "+filepath.Join(home, ".cargo", "credentials.toml"), 10*time.Second)
			for _, says := range tools {
				if !strings.Contains(o.Stdout, says+"\n") {
					t.Errorf("%q missing: stdout %q stderr %q", says, o.Stdout, o.Stderr)
				}
			}
			if !strings.Contains(o.Stdout, "[build]") || strings.Contains(o.Stdout, secretMark) {
				t.Errorf("~/.cargo/config.toml should be read and credentials.toml not: %q", o.Stdout)
			}
		})
	}
}

// Writable directories under the fake home stay writable: a Go build cache beside the masks,
// and in bwrap mode one inside a masked directory; and a writable directory holding secrets
// (the whole home) does not bring them back.
func TestSecretsAndWritableDirs(t *testing.T) {
	for _, m := range []Mode{ModeBwrap, ModeUnshare} {
		t.Run(string(m), func(t *testing.T) {
			home, files := fakeHome(t)
			cache := filepath.Join(home, ".cache", "go-build")
			inMask := filepath.Join(home, ".config", "gcloud", "logs") // .config/gcloud is masked
			r := secretsRunner(t, m, []string{cache, inMask})
			o := run(t, r, fmt.Sprintf("echo a > %s/a && echo b > %s/b && echo written; echo c > %s/c 2>/dev/null && echo beside", cache, inMask, filepath.Dir(inMask)), 10*time.Second)
			if !strings.Contains(o.Stdout, "written\n") {
				t.Errorf("writes to the writable directories failed: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
			for _, p := range []string{filepath.Join(cache, "a"), filepath.Join(inMask, "b")} {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("the write to %s is not there: %v", p, err)
				}
			}
			if m == ModeBwrap {
				if strings.Contains(o.Stdout, "beside") {
					t.Errorf("the masked directory around a writable one is writable")
				}
				o = run(t, r, readAll(home, files), 30*time.Second)
				checkHidden(t, o, files)
			} else {
				// unshare cannot bind a directory back over a mask, so that mask is replaced
				// by masks of what lies beside the writable one (unshareMasks): all but what
				// the writable directory holds stay hidden.
				var rest []string
				for _, f := range files {
					if within(f, inMask) {
						os.Remove(f)
					} else {
						rest = append(rest, f)
					}
				}
				o = run(t, r, readAll(home, rest), 30*time.Second)
				checkHidden(t, o, rest)
			}

			r = secretsRunner(t, m, []string{home})
			o = run(t, r, fmt.Sprintf("echo x > %s/scratch && echo written; %s", home, readAll(home, files)), 30*time.Second)
			if !strings.HasPrefix(o.Stdout, "written\n") {
				t.Errorf("the writable home is not writable: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
			checkHidden(t, o, files)
		})
	}
}

// A variable that points at a device, as HISTFILE=/dev/null does to turn history off, must
// not take the device away.
func TestDevicesNotMasked(t *testing.T) {
	for _, m := range []Mode{ModeBwrap, ModeUnshare} {
		t.Run(string(m), func(t *testing.T) {
			t.Setenv("HISTFILE", "/dev/null")
			t.Setenv("NETRC", "/dev/zero")
			r := secretsRunner(t, m, nil)
			o := run(t, r, "echo x > /dev/null && head -c 3 /dev/zero | wc -c", 10*time.Second)
			if o.ExitCode != 0 || strings.TrimSpace(o.Stdout) != "3" {
				t.Errorf("/dev/null or /dev/zero is not the device: exit %d stdout %q stderr %q", o.ExitCode, o.Stdout, o.Stderr)
			}
		})
	}
}

// The order of bwrap's mounts, case by case.
func TestBwrapMountOrder(t *testing.T) {
	cases := []struct {
		name  string
		binds []string
		masks []mask
		want  string
	}{
		{"bind inside a mask comes after it", []string{"/h/.config/gcloud/logs"}, []mask{{"/h/.config/gcloud", true}},
			"--tmpfs /h/.config/gcloud --bind /h/.config/gcloud/logs /h/.config/gcloud/logs --remount-ro /h/.config/gcloud"},
		{"mask inside a bind comes after it", []string{"/h"}, []mask{{"/h/.ssh", true}, {"/h/.npmrc", false}},
			"--bind /h /h --tmpfs /h/.ssh --ro-bind E /h/.npmrc --remount-ro /h/.ssh"},
		{"a mask that is a writable directory gives way", []string{"/h/.docker"}, []mask{{"/h/.docker", true}},
			"--bind /h/.docker /h/.docker"},
		{"a mask inside a mask is dropped", nil, []mask{{"/h/.aws/credentials", false}, {"/h/.aws", true}},
			"--tmpfs /h/.aws --remount-ro /h/.aws"},
		{"but not inside a bind inside a mask", []string{"/h/.aws/w"}, []mask{{"/h/.aws/w/k", false}, {"/h/.aws", true}},
			"--tmpfs /h/.aws --bind /h/.aws/w /h/.aws/w --ro-bind E /h/.aws/w/k --remount-ro /h/.aws"},
		{"under the private /tmp there is nothing to hide", []string{"/tmp/copy"}, []mask{{"/tmp/h/.ssh", true}, {"/tmp/copy/.netrc", false}},
			"--bind /tmp/copy /tmp/copy --ro-bind E /tmp/copy/.netrc"},
	}
	for _, c := range cases {
		var binds []bind
		for _, b := range c.binds {
			binds = append(binds, rw(b))
		}
		if got := strings.Join(bwrapMounts(binds, c.masks, "E", true), " "); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	ro := []bind{{path: "/tmp/objects", src: "/tmp/objects", ro: true}, {path: "/h/.cargo", src: "/h/.cargo", ro: true},
		{path: "/c/sub", src: "/c/sub", ro: true}, rw("/c"), rw("/c/sub")}
	if got, want := strings.Join(bwrapMounts(ro, []mask{{"/h", true}, {"/h/.cargo/credentials", false}, {"/h/.ssh", true}}, "E", true), " "),
		"--bind /c /c --tmpfs /h --ro-bind /tmp/objects /tmp/objects --ro-bind /h/.cargo /h/.cargo --bind /c/sub /c/sub --ro-bind E /h/.cargo/credentials --remount-ro /h"; got != want {
		t.Errorf("read-only binds:\n got %s\nwant %s", got, want)
	}
	if got, want := unshareMasks([]string{"/h/.config/gcloud/logs"}, []mask{{"/h/.config/gcloud", true}, {"/h/.ssh", true}, {"/h/.ssh/id", false}, {"/h/.netrc", false}}),
		[]string{"d", "/h/.ssh", "f", "/h/.netrc"}; !reflect.DeepEqual(got, want) {
		t.Errorf("unshareMasks = %q, want %q", got, want)
	}
	// A masked folder that can be listed: what it holds beside the way to the needed one is
	// masked, links left alone (a mount on one would land on its target).
	h := t.TempDir()
	gc := filepath.Join(h, ".config", "gcloud")
	for _, d := range []string{"logs/today", "other", "legacy/keep/deeper", "legacy/old"} {
		os.MkdirAll(filepath.Join(gc, d), 0o755)
	}
	os.WriteFile(filepath.Join(gc, "creds.json"), nil, 0o600)
	os.WriteFile(filepath.Join(gc, "legacy", "key"), nil, 0o600)
	os.Symlink("/etc", filepath.Join(gc, "link"))
	got := unshareMasks([]string{filepath.Join(gc, "logs"), filepath.Join(gc, "legacy", "keep", "deeper")}, []mask{{gc, true}})
	want := []string{"f", filepath.Join(gc, "creds.json"), "d", filepath.Join(gc, "other"),
		"f", filepath.Join(gc, "legacy", "key"), "d", filepath.Join(gc, "legacy", "old")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unshareMasks around needed folders = %q, want %q", got, want)
	}
}
