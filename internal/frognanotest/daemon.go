package frognanotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartDaemon starts fine-tuning of the repository dir the way a user does, `bin finetune
// start`, with frognano's cache in cache and a schedule that begins two hours from now: the
// daemon runs (it holds its lock and writes its status file) but only waits, so it needs
// no model and no trainer. It returns once the daemon's status says it waits, with its
// pid; the test's end stops it if the test did not. The editors' tests stop it from the
// editor.
func StartDaemon(t testing.TB, bin, dir, cache string) int {
	t.Helper()
	weights := filepath.Join(t.TempDir(), "base.gguf")
	if err := os.WriteFile(weights, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := time.Now().Hour()
	hours := strconv.Itoa((h+2)%24) + "-" + strconv.Itoa((h+3)%24)
	env := append(os.Environ(), "FROGNANO_CACHE="+cache, "OLLAMA_HOST=127.0.0.1:1")
	cmd := exec.Command(bin, "finetune", "start", "--repo", dir, "--model", "m", "--weights", weights, "--hours", hours)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("frognano finetune start: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		stop := exec.Command(bin, "finetune", "stop", "--repo", dir, "--grace", "1s")
		stop.Env = env
		stop.Run()
	})
	_, rest, _ := strings.Cut(string(out), "(pid ")
	pid, err := strconv.Atoi(strings.SplitN(rest, ")", 2)[0])
	if err != nil {
		t.Fatalf("no pid in the output of frognano finetune start: %q", out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status := exec.Command(bin, "finetune", "status", "--repo", dir)
		status.Env = env
		out, _ := status.CombinedOutput()
		if strings.Contains(string(out), "waiting: ") {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon does not say it waits:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Alive says whether process pid runs: it exists and is not a zombie. A daemon started by
// `frognano finetune start` outlives that command, so its parent is whatever adopts orphans,
// which may be slow to reap it (or never, as a container's first process may): kill -0
// would still find the zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis: "pid (comm) S ...".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}
