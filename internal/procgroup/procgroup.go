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
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
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
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
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
