// Package procgroup finds and ends the live processes of a process group, the unit in
// which frognano starts servers and sandboxed commands so that nothing outlives them.
package procgroup

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Members returns the live (not zombie) processes whose process group is pgid, read from
// /proc. Zombies are left out: a killed orphan stays one until init reaps it, and it holds
// no resources but its process table entry.
func Members(pgid int) []int {
	var pids []int
	scan(func(pid, _, pgrp int) {
		if pgrp == pgid {
			pids = append(pids, pid)
		}
	})
	return pids
}

// Descendants returns root, when it is alive, and its live descendants, read from /proc.
func Descendants(root int) []int {
	children := map[int][]int{}
	alive := false
	scan(func(pid, ppid, _ int) {
		children[ppid] = append(children[ppid], pid)
		alive = alive || pid == root
	})
	if !alive {
		return nil
	}
	pids := []int{root}
	for i := 0; i < len(pids); i++ {
		pids = append(pids, children[pids[i]]...)
	}
	return pids
}

// Stopped reports whether every thread of pid is stopped (by a signal, or for its tracer),
// gone, or waiting in the kernel uninterruptibly (D: a vfork parent whose child is stopped
// stays so; Threads tells whether it ran after). Each thread is looked at: /proc/PID/stat
// is the leader's alone, and a leader that exited (pthread_exit) is a zombie there while
// its other threads run on.
func Stopped(pid int) bool { return threadsIn(pid, "TtZXD") }

// SignalStopped reports whether every thread of pid is stopped by a signal or for its
// tracer, and the process is not gone.
func SignalStopped(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/task")
	return err == nil && threadsIn(pid, "Tt")
}

// threadsIn reports whether every thread of pid is in one of states (true when it is gone).
func threadsIn(pid int, states string) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return true // gone
	}
	for _, t := range tasks {
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/stat"); err == nil {
			if state, _, _, ok := parseStat(st); ok && !strings.Contains(states, state) {
				return false
			}
		}
	}
	return true
}

// Thread is what Threads reads of one thread.
type Thread struct {
	State    byte   // as in /proc/PID/task/TID/stat: R, S, D, T, t, Z...
	Switches uint64 // times it was switched off a CPU: changes whenever it has run
}

// Threads adds to into each thread of pid, by thread id: two readings around a wait tell
// whether a stopped process was woken meanwhile.
func Threads(pid int, into map[int]Thread) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, _ := os.ReadDir(dir)
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(dir + t.Name() + "/status")
		if err != nil {
			continue // gone
		}
		var th Thread
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "State:"); ok {
				if v = strings.TrimSpace(v); v != "" {
					th.State = v[0]
				}
			} else if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				c, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				th.Switches += c
			} else if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
				c, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				th.Switches += c
			}
		}
		into[tid] = th
	}
}

// WriteBytes is how many bytes pid (all its threads) has dirtied in the page cache or sent
// to storage: /proc/PID/io's write_bytes, which grows as pages are dirtied, during a long
// system call too (a write(2) of 1 GiB, a fault of a shared mapping). ok is false where it
// cannot be read (a kernel without I/O accounting, or the process gone).
func WriteBytes(pid int) (n int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "write_bytes:"); found {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// parseStat reads the state, parent and process group from a /proc stat file.
func parseStat(stat []byte) (state string, ppid, pgrp int, ok bool) {
	// Fields after the command name, which is in parentheses and may hold spaces and
	// parentheses: state ppid pgrp ...
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0, 0, false
	}
	fs := strings.Fields(s[i+1:])
	if len(fs) < 3 || len(fs[0]) != 1 {
		return "", 0, 0, false
	}
	ppid, _ = strconv.Atoi(fs[1])
	pgrp, _ = strconv.Atoi(fs[2])
	return fs[0], ppid, pgrp, true
}

// scan calls f with each live process's pid, parent and process group. A process whose
// leader thread exited while others run is live.
func scan(f func(pid, ppid, pgrp int)) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		state, ppid, pgrp, ok := parseStat(stat)
		// A zombie leader with a thread that is not (threadsIn's "ZX" false) runs on.
		if !ok || (state == "Z" || state == "X") && threadsIn(pid, "ZX") {
			continue
		}
		f(pid, ppid, pgrp)
	}
}

// Kill sends SIGKILL to the whole group and waits up to timeout for it to be empty. It
// reports whether the group is empty.
func Kill(pgid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		syscall.Kill(-pgid, syscall.SIGKILL)
		if len(Members(pgid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
