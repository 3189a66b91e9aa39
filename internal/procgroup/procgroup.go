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

// Stopped reports whether pid is stopped (by a signal, or for its tracer) or gone.
func Stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the name may hold spaces and parentheses
	if i < 0 || i+2 >= len(s) {
		return false
	}
	switch s[i+2] {
	case 'T', 't', 'Z', 'X':
		return true
	}
	return false
}

// scan calls f with each live process's pid, parent and process group.
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
		// Fields after the command name, which is in parentheses and may hold spaces:
		// state ppid pgrp ...
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fs := strings.Fields(s[i+1:])
		if len(fs) < 3 || fs[0] == "Z" || fs[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(fs[1])
		pgrp, _ := strconv.Atoi(fs[2])
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
