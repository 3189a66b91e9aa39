package procgroup

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leaderExits is a Python program whose main thread exits (pthread_exit) while another
// runs on: /proc/PID/stat then shows the process as a zombie.
const leaderExits = `import ctypes, os, threading, time
def work():
    for i in range(600):
        time.sleep(0.05)
threading.Thread(target=work).start()
print(os.getpid(), flush=True)
ctypes.CDLL(None).pthread_exit(None)
`

// A process whose leader thread exited is live while its other threads run: it is a member
// of its group (Kill waits for it), a descendant, and stopped only when every thread is.
func TestLeaderExitedProcess(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	cmd := exec.Command("python3", "-c", leaderExits)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("no pid: %q", buf[:n])
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, _, _, _ := readStat(pid)
		if st == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader never exited: state %q", st)
		}
	}
	if !slices.Contains(Members(pid), pid) {
		t.Errorf("not a member of its group: %v", Members(pid))
	}
	if !slices.Contains(Descendants(pid), pid) {
		t.Errorf("not among its own descendants: %v", Descendants(pid))
	}
	if Stopped(pid) {
		t.Errorf("reported stopped while its thread runs")
	}
	syscall.Kill(pid, syscall.SIGSTOP)
	for deadline := time.Now().Add(10 * time.Second); !Stopped(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("never reported stopped after SIGSTOP")
		}
	}
	if !Kill(pid, 5*time.Second) {
		t.Errorf("Kill did not end it")
	}
}

func readStat(pid int) (string, int, int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, 0, false
	}
	return parseStat(b)
}
