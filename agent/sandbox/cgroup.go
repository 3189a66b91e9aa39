package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// A pids cgroup per command is the one process limit that binds root, and it also finds
// every process of the command, wherever it moved in the process tree or sessions.

// findPidsCgroup returns the directory of this process's pids cgroup (v1 controller or v2
// hierarchy), after checking that a child with a pids.max can be made there.
func findPidsCgroup() (dir, kind string, err error) {
	dir, kind, err = ownPidsCgroup()
	if err != nil {
		return "", "", err
	}
	if kind == "cgroup v2" {
		// Children get pids.max only if the parent hands the controller down.
		ctl, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if !strings.Contains(string(ctl), "pids") {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
				return "", "", fmt.Errorf("cannot enable the pids controller in %s (%v)", dir, err)
			}
		}
	}
	removeStale(dir)
	probe, err := newCgroup(dir, 1)
	if err != nil {
		return "", "", err
	}
	probe.remove()
	return dir, kind, nil
}

// removeStale removes the empty cgroups that a frognano which died mid-command left.
func removeStale(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "frognano-*-*"))
	for _, d := range dirs {
		pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), "frognano-"), "-")
		if _, err := os.Stat("/proc/" + pid); errors.Is(err, os.ErrNotExist) {
			os.Remove(d) // fails, harmlessly, if anything still runs in it
		}
	}
}

// ownPidsCgroup reads /proc/self/mountinfo and /proc/self/cgroup: the pids controller's
// mount point plus this process's path in that hierarchy.
func ownPidsCgroup() (dir, kind string, err error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	var v1, v2 string // mount points, with the mount's root stripped from our path below
	var v1Root, v2Root string
	for _, line := range strings.Split(string(mounts), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		switch {
		case g[0] == "cgroup" && hasOption(g[2], "pids"):
			v1, v1Root = f[4], f[3]
		case g[0] == "cgroup2" && v2 == "":
			v2, v2Root = f[4], f[3]
		}
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(self), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v1 != "" && hasOption(parts[1], "pids") {
			return filepath.Join(v1, strings.TrimPrefix(parts[2], v1Root)), "cgroup v1", nil
		}
		if v1 == "" && v2 != "" && parts[0] == "0" && parts[1] == "" {
			d := filepath.Join(v2, strings.TrimPrefix(parts[2], v2Root))
			if c, _ := os.ReadFile(filepath.Join(d, "cgroup.controllers")); !hasOption(strings.ReplaceAll(strings.TrimSpace(string(c)), " ", ","), "pids") {
				return "", "", fmt.Errorf("the pids controller is not available in %s", d)
			}
			return d, "cgroup v2", nil
		}
	}
	return "", "", errors.New("no pids cgroup is mounted")
}

func hasOption(list, opt string) bool {
	for _, o := range strings.Split(list, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// cgroup is one command's pids cgroup.
type cgroup struct{ dir string }

var cgroupSeq atomic.Int64

// newCgroup makes a child of parent that allows max processes (threads count too).
func newCgroup(parent string, max int) (*cgroup, error) {
	dir := filepath.Join(parent, fmt.Sprintf("frognano-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create a pids cgroup (%v)", err)
	}
	c := &cgroup{dir}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		c.remove()
		return nil, fmt.Errorf("cannot set pids.max in a new cgroup (%v)", err)
	}
	return c, nil
}

// procs is the file a process writes its pid to, to join.
func (c *cgroup) procs() string { return filepath.Join(c.dir, "cgroup.procs") }

func (c *cgroup) members() []int {
	f, err := os.Open(c.procs())
	if err != nil {
		return nil
	}
	defer f.Close()
	var pids []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		if pid, err := strconv.Atoi(s.Text()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// kill SIGKILLs every member until none is left or timeout passes; it reports whether the
// cgroup is empty. cgroup.kill (Linux 5.14+) kills the whole cgroup at once, forks racing it
// included; without it, killing repeatedly catches processes forked while it runs.
func (c *cgroup) kill(timeout time.Duration) bool {
	os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0) // absent before 5.14: the loop does it
	deadline := time.Now().Add(timeout)
	for {
		pids := c.members()
		if len(pids) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// capHit reports whether a fork failed because of pids.max (pids.events "max N", N > 0).
func (c *cgroup) capHit() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "pids.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "max "); ok && strings.TrimSpace(n) != "0" {
			return true
		}
	}
	return false
}

// remove deletes the cgroup, retrying briefly: the kernel refuses while exiting members
// are still being torn down.
func (c *cgroup) remove() {
	for i := 0; i < 100; i++ {
		if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
