package sandbox

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// As root without a usable pids cgroup (cgroup v2 often refuses +pids to a busy cgroup),
// commands still have a process cap: they run as nobody, whom RLIMIT_NPROC binds.
func TestProcessCapWithoutCgroupAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("this is about root")
	}
	old := findPids
	findPids = func() (string, string, error) { return "", "", errors.New("no pids cgroup (test)") }
	probeMu.Lock()
	saved := isolations
	isolations = map[Mode]Isolation{}
	probeMu.Unlock()
	defer func() {
		findPids = old
		probeMu.Lock()
		isolations = saved
		probeMu.Unlock()
	}()
	r := newRunner(t, ModeBwrap, &Limits{Processes: 64})
	if r.Isolation().UID != nobody {
		t.Skipf("commands do not run as nobody here: %s", r.Isolation().Why)
	}
	if !strings.Contains(r.Isolation().ProcessLimit, "RLIMIT_NPROC of uid nobody") {
		t.Fatalf("process limit %q (%s)", r.Isolation().ProcessLimit, r.Isolation().Why)
	}
	o := run(t, r, `timeout 5 bash -c 'b(){ b | b & }; b; sleep 2'; echo contained`, 30*time.Second)
	if !strings.Contains(o.Stdout, "contained") || !strings.Contains(o.Stderr, "fork") {
		t.Errorf("the bomb was not capped: stdout %q stderr %.300q", o.Stdout, o.Stderr)
	}
}
