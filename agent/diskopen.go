package agent

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A file a command removed while one of its processes holds it open (or mapped) is in no
// folder, so no walk sees it, yet it keeps its blocks until the last process lets go: at
// the latest when the command ends and the sandbox kills what is left. Writing to such
// files (`exec 3>f; rm f`, then to fd 3, 1 GiB per file under RLIMIT_FSIZE) filled the disk
// unseen while the command ran (found in review). So the closer look also adds up the
// removed files that the command's processes hold, through /proc: each task's file table
// (a thread may have its own) and each process's mappings. What it cannot read (a process
// that made itself undumpable, a mapping's file without CAP_SYS_ADMIN) is unmeasurable.
//
// What no process table shows (a descriptor in flight in a Unix socket, an io_uring's
// registered files) is left to the free-space floor (diskGuard.floorHit).

// heldOpen is the disk space of the removed files on the watched file systems (devs) that
// pids hold open or mapped, and the first thing it could not read. When quit (if set) says
// why it must, it stops and says so: hundreds of threads with many descriptors each would
// hold the command, its timeout and cancel, for as long as reading them takes.
func heldOpen(pids []int, devs map[uint64]bool, quit func() string) (int64, string) {
	seen := map[[2]uint64]bool{}
	var n int64
	var bad string
	note := func(what string, err error) {
		// A process or descriptor that ended while this looked holds nothing any more.
		if err != nil && bad == "" && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ESRCH) {
			bad = what + ": " + err.Error()
		}
	}
	// count adds the file behind a /proc link once, if it is a removed regular file there.
	count := func(link string) error {
		var st syscall.Stat_t
		if err := syscall.Stat(link, &st); err != nil {
			return err
		}
		k := [2]uint64{st.Dev, st.Ino}
		if st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Nlink == 0 && devs[st.Dev] && !seen[k] {
			seen[k] = true
			n += st.Blocks * 512
		}
		return nil
	}
	late := func() bool {
		if quit == nil {
			return false
		}
		why := quit()
		bad = cmp.Or(bad, why)
		return why != ""
	}
	for _, pid := range pids {
		if late() {
			break
		}
		proc := "/proc/" + strconv.Itoa(pid)
		tasks, err := os.ReadDir(proc + "/task")
		note("the tasks of process "+strconv.Itoa(pid), err)
		for _, t := range tasks {
			dir := proc + "/task/" + t.Name() + "/fd"
			fds, err := os.ReadDir(dir)
			note("the open files of process "+strconv.Itoa(pid), err)
			for i, fd := range fds {
				if i%256 == 0 && late() {
					return n, bad
				}
				note("open file "+dir+"/"+fd.Name(), count(dir+"/"+fd.Name()))
			}
		}
		maps, leaderGone, err := mapsOf(proc, tasks)
		if err != nil {
			note("the mappings of process "+strconv.Itoa(pid), err)
			continue
		}
		note("the mappings of process "+strconv.Itoa(pid), removedMappings(maps, devs, func(start, end uint64, dev, ino uint64) {
			k := [2]uint64{dev, ino}
			if seen[k] {
				return
			}
			if leaderGone {
				// map_files went with the leader: the mapping's length is the most that
				// writes through it can have added (an over-count where it is sparse).
				seen[k] = true
				n += int64(end - start)
				return
			}
			link := fmt.Sprintf("%s/map_files/%x-%x", proc, start, end)
			note("mapped file "+link, count(link))
		}))
	}
	return n, bad
}

// mapsOf reads what shows proc's mappings: its maps, or, when its leader thread has exited
// (pthread_exit) while others run, which leaves the process's maps empty, a live thread's
// (found in review: a thread wrote 300 MiB into a removed file it mapped).
func mapsOf(proc string, tasks []os.DirEntry) (maps []byte, leaderGone bool, err error) {
	if maps, err = os.ReadFile(proc + "/maps"); err != nil || len(maps) > 0 {
		return maps, false, err
	}
	for _, t := range tasks {
		if b, err := os.ReadFile(proc + "/task/" + t.Name() + "/maps"); err == nil && len(b) > 0 {
			return b, true, nil
		}
	}
	return maps, false, nil
}

// removedMappings calls f for each mapping of a removed file on devs in the text of a maps
// file.
func removedMappings(maps []byte, devs map[uint64]bool, f func(start, end, dev, ino uint64)) error {
	s := bufio.NewScanner(bytes.NewReader(maps))
	s.Buffer(make([]byte, 0, 64<<10), 1<<20) // a line holds a path: up to PATH_MAX and more
	for s.Scan() {
		// start-end perms offset major:minor inode path, " (deleted)" after a removed file's.
		line := s.Text()
		if !strings.HasSuffix(line, " (deleted)") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 6 {
			continue
		}
		a, b, _ := strings.Cut(fields[0], "-")
		maj, min, _ := strings.Cut(fields[3], ":")
		start, err1 := strconv.ParseUint(a, 16, 64)
		end, err2 := strconv.ParseUint(b, 16, 64)
		major, err3 := strconv.ParseUint(maj, 16, 32)
		minor, err4 := strconv.ParseUint(min, 16, 32)
		ino, err5 := strconv.ParseUint(fields[4], 10, 64)
		if errors.Join(err1, err2, err3, err4, err5) != nil || ino == 0 {
			continue
		}
		if dev := unix.Mkdev(uint32(major), uint32(minor)); devs[dev] {
			f(start, end, dev, ino)
		}
	}
	return s.Err()
}
