package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/internal/procgroup"
)

// The sandbox caps each file (RLIMIT_FSIZE) and the private /tmp, but the copy and the Go
// build cache live on the user's disk and a command could fill it with many files. A disk
// guard watches the free space of the copy's file system while each command runs (a statfs
// every 50 ms); when it has shrunk by more than the budget, it measures what the copy and the
// cache really hold (others' writes do not count) and kills the command once the episode's
// commands have added more than their budget: by default 8 GiB, and never more than half of
// what was free when the episode began, so the machine keeps working.
//
// The episode's own folders (the copy, its home and /tmp) are measured whole when it begins
// and again at each closer look. The Go build cache is shared with every episode on the
// repository and grows to tens of thousands of files, so walking it at every episode's start
// cost more than the rest of the episode's setup (a 93,000-file cache: 0.3 s of system time
// natively, half of the `lsp` tests' CPU under the race detector). What counts there is only
// what changed since the episode began, by each file's inode change time (ctime), read
// against the file system's own clock (a file created at the start): a command can set a
// file's modification time back, never its ctime, so a file it grew or wrote counts whole.
// Only on the disk file systems (blocksNeedAChange); on others the cache is walked.
// That over-counts only (a cache entry Go merely touched counts as written), and only at the
// closer look, which a command must first trigger by the free space.
//
// Files the command removed but still holds open count too (heldOpen). The closer look
// holds the command's processes stopped while it walks (sandbox.Procs.Hold; see look), and
// gives up, as unmeasurable, after holdWalk or once the command's processes wrote
// holdGrowth meanwhile. A look forgives what it cannot find (others' writes), so
// what hid from it (a file whose only reference is a descriptor in flight in a Unix socket)
// could be linked back in unseen: when a command ends, the free space its file systems lost
// while it ran is looked at once more, with nothing left running to hide anything. And
// whatever the looks find, a command is stopped when it takes a file system below half of
// the free space or of the free inodes it had when the episode began (its floor).
//
// A known limit: only drops of free space add up (fsFree), but a command that removes files
// of the shared cache that were there before the episode and writes as much again between
// two readings nets the two (found in review). The disk then holds no more than at the
// start plus the budget.

// DefaultDiskBudget is Options.DiskBudget's default.
const DefaultDiskBudget = 8 << 30

// diskSlack is how far past its budget an episode may go in all: a command that took it
// past the budget, or one the looks only judged at its end, leaves it there. It also keeps
// a free-space floor below where the command began.
const diskSlack = 64 << 20

// overSlack is what a command may add when the episode is already past budget+diskSlack:
// enough to run `rm` and `git status`, so that the model can clean up. It is per command,
// not per episode: a fixed cap would stop even those.
const overSlack = 1 << 20

// holdWalk is how long a closer look may walk while it holds the command stopped: a tree of
// millions of entries, which take little space, would otherwise hold the command, and its
// timeout and cancel, for minutes. Past it, what the commands wrote is unmeasurable.
const holdWalk = 15 * time.Second

// holdGrowth is how much the command's processes may write while a look waits for them to
// stop, and while it walks them held, before it gives up as unmeasurable (the command is
// killed): SIGSTOP stops a thread only when its system call returns (see look).
const holdGrowth = 16 << 20

// holdShrink is how far the disk may shrink during a look, whoever writes, before the look
// gives up all the same: a bound on what writers it cannot see add. Others' writes pass it
// only on a disk written at hundreds of MiB/s for all the seconds a look waits (256 MiB
// was passed in a loaded test run).
const holdShrink = 1 << 30

// inodeSlack is how many inodes a command may still take when its file system is already
// below the inode floor as it begins.
const inodeSlack = 10000

// diskPoll is how often a running command's disk use is looked at; a command writing at
// disk speed overshoots the budget by about this much time's worth.
const diskPoll = 50 * time.Millisecond

var errDiskBudget = errors.New("disk budget exceeded")

type diskGuard struct {
	dirs   []string // the episode's own, measured whole: the copy, the private home and /tmp
	shared []sinceDir
	budget int64

	devs map[uint64]bool // the file systems the folders are on

	mu         sync.Mutex
	fss        []fsFree       // each file system the folders are on, the copy's first; guarded by mu
	base       int64          // bytes the dirs held when the episode began
	unmeasured string         // what the last closer look could not measure, if anything; guarded by mu
	procs      *sandbox.Procs // the running command's, nil between commands; guarded by mu
	floored    string         // the file system whose floor the command went below; guarded by mu
}

// fsFree is one file system's free space as the guard follows it: the drops it saw since
// the last closer look (with what that look found) and since the command began. Only drops
// add up: space anyone frees never lowers the figures, or a delete elsewhere hid as much of
// the episode's writes (it did in a loaded test run, and a truncate by another program let a
// command take the episode past its budget untold, in CI's load).
type fsFree struct {
	dir     string
	last    int64 // the free space at the last reading
	acc     int64 // drops since the last closer look, plus what it found (the copy's only)
	cmdLost int64 // drops since the running command began
	// floor is the free space a command may not take the file system below, whoever
	// wrote: half of what was free when the episode began, or, when a command begins
	// below that already, diskSlack less than was free then. inodeFloor is the same for
	// free inodes (none on file systems that report no inode count).
	floor, half           int64
	inodeFloor, inodeHalf int64
}

// sinceDir is a shared folder and the file system's clock when the episode began there.
type sinceDir struct {
	dir   string
	since syscall.Timespec
	top   int64 // the folder's own blocks then: making the clock's file changed its time
}

// newDiskGuard measures the free space of the first dir's file system and what dirs hold,
// and reads the clock of shared's file systems. A shared folder whose clock cannot be read
// (no file can be made there) is measured whole, as dirs are.
func newDiskGuard(limit int64, dirs, shared []string) (*diskGuard, error) {
	first, err := statFS(dirs[0])
	if err != nil {
		return nil, fmt.Errorf("agent: free space of %s: %w", dirs[0], err)
	}
	g := &diskGuard{dirs: slices.Clone(dirs), budget: min(limit, first.last/2), fss: []fsFree{first}, devs: map[uint64]bool{}}
	// The cache may be on another file system than the copy (a tmpfs /tmp, the home on
	// disk): the free space of each is watched, or filling the other would never trigger a
	// closer look (found in review).
	for i, d := range append(slices.Clone(dirs), shared...) {
		var st syscall.Stat_t
		if syscall.Stat(d, &st) != nil || g.devs[st.Dev] {
			continue
		}
		g.devs[st.Dev] = true
		if i == 0 {
			continue
		}
		if f, err := statFS(d); err == nil {
			g.fss = append(g.fss, f)
		}
	}
	for _, d := range shared {
		if !blocksNeedAChange(d) {
			g.dirs = append(g.dirs, d)
		} else if since, err := fsNow(d); err == nil {
			g.shared = append(g.shared, sinceDir{d, since, dirBlocks(d)})
		} else {
			g.dirs = append(g.dirs, d)
		}
	}
	// The shared folders' part is nothing yet, by their clock: walking them is what this saves.
	for _, d := range g.dirs {
		n, _ := blocksUnder(d, nil, nil) // frognano's copy and a new home: all readable
		g.base += n
	}
	return g, nil
}

// blocksNeedAChange says whether dir is on a file system where a file cannot gain blocks
// without a new change time: the disk file systems, checked there (write, append, every
// fallocate mode, copy_file_range, mmap writes; Linux 6.18). Not tmpfs: a read fault of a
// mapped hole allocates its page and changes no time, so an old sparse file of the cache
// fills memory and swap unseen (found in review). Elsewhere (tmpfs, overlay, FUSE, network
// file systems) the folder is walked whole, as before.
func blocksNeedAChange(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	switch st.Type {
	case 0xEF53, 0x58465342, 0x9123683E: // ext2/3/4, xfs, btrfs
		return true
	}
	return false
}

// fsNow is the change time the file system in dir gives a file made now.
func fsNow(dir string) (syscall.Timespec, error) {
	f, err := os.CreateTemp(dir, ".frognano-clock-*")
	if err != nil {
		return syscall.Timespec{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return syscall.Timespec{}, err
	}
	return st.Ctim, nil
}

// statFS is dir's file system as an episode begins there: its free space and inodes.
func statFS(dir string) (fsFree, error) {
	free, inodes, err := freeSpace(dir)
	if err != nil {
		return fsFree{}, err
	}
	f := fsFree{dir: dir, last: free, half: free / 2, inodeHalf: -1}
	if inodes >= 0 {
		f.inodeHalf = inodes / 2
	}
	return f, nil
}

// freeSpace is the free space and free inodes of dir's file system, one statfs for both;
// inodes is -1 where the file system reports no inode count (btrfs and others).
func freeSpace(dir string) (bytes, inodes int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	inodes = -1
	if st.Files > 0 {
		inodes = int64(st.Ffree)
	}
	return int64(st.Bavail) * int64(st.Bsize), inodes, nil
}

// used is the episode's figure by the free space: what the last closer look found and all
// the drops since. Cheap, but other programs' writes count too, so it only triggers a
// closer look (grown); over-counting costs only that.
func (g *diskGuard) used() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	var n int64
	for i := range g.fss {
		f := &g.fss[i]
		free, inodes, err := freeSpace(f.dir)
		if err != nil {
			n += f.acc
			continue
		}
		if d := f.last - free; d > 0 {
			f.acc += d
			f.cmdLost += d
		}
		f.last = free
		n += f.acc
		if g.floored == "" && (free < f.floor || f.inodeFloor > 0 && inodes < f.inodeFloor) {
			g.floored = f.dir
		}
	}
	return n
}

// floorHit reports whether a file system went below its floor during the command. It is
// the backstop for what the closer look cannot attribute (heldOpen): it holds whoever
// filled the disk, so that the machine keeps working; a command is cheap to run again.
func (g *diskGuard) floorHit() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.floored != ""
}

// setProcs is the sandbox's Cmd.Started: the running command's processes.
func (g *diskGuard) setProcs(procs *sandbox.Procs) {
	g.mu.Lock()
	g.procs = procs
	g.mu.Unlock()
}

// held is the disk space the dirs take, the files of the shared folders changed since the
// episode began (blocks, so sparse files count for what they use), and the removed files
// the running command holds, and the first path it could not measure, if any.
func (g *diskGuard) held(quit func() string) (int64, string) {
	var n int64
	var bad string
	for _, d := range g.dirs {
		m, b := blocksUnder(d, nil, quit)
		n, bad = n+m, cmp.Or(bad, b)
	}
	for _, s := range g.shared {
		m, b := blocksUnder(s.dir, &s.since, quit)
		n, bad = n+m+max(dirBlocks(s.dir)-s.top, 0), cmp.Or(bad, b)
	}
	g.mu.Lock()
	procs := g.procs
	g.mu.Unlock()
	if procs != nil {
		m, b := heldOpen(procs.List(), g.devs, quit)
		n, bad = n+m, cmp.Or(bad, b)
	}
	return n, bad
}

// dirBlocks is the disk space of dir itself.
func dirBlocks(dir string) int64 {
	var st syscall.Stat_t
	if syscall.Lstat(dir, &st) != nil {
		return 0
	}
	return st.Blocks * 512
}

// blocksUnder adds up the blocks of the files and folders under dir, only those changed at
// or after since when it is set (the same clock tick counts: over-counting is the safe
// side). Folders count: 40,000 empty ones took 160 MiB on ext4 (found in review). It
// returns the first path it could not measure: a folder its commands made unreadable to
// frognano, a path longer than the system takes (both hid writes from the walk; found in
// review). What vanished while it walked is not missed. When quit (if set, asked every
// 256 entries) says why it must, it stops and says so.
func blocksUnder(dir string, since *syscall.Timespec, quit func() string) (int64, string) {
	var n int64
	var bad string
	seen := 0
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if seen++; quit != nil && seen%256 == 1 {
			if why := quit(); why != "" {
				bad = cmp.Or(bad, dir+": "+why)
				return fs.SkipAll
			}
		}
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && bad == "" {
				bad = p + ": " + err.Error()
			}
			return nil
		}
		if since != nil && p == dir { // a shared folder's own blocks: held
			return nil
		}
		info, err := e.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && bad == "" {
				bad = p + ": " + err.Error()
			}
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if since != nil && (st.Ctim.Sec < since.Sec || st.Ctim.Sec == since.Sec && st.Ctim.Nsec < since.Nsec) {
			return nil
		}
		n += st.Blocks * 512
		return nil
	})
	return n, bad
}

// unmeasurable is what grown says when part of what the commands can write could not be
// measured: over any budget, since what is hidden there is unknown.
const unmeasurable = math.MaxInt64 / 4

// grown is what the episode's commands really added; the free-space figure is brought in
// line with it, so that others' writes stop counting.
//
// The figure is taken up to the walk's start: what is written while it walks then counts
// in the cheap figure after it. Taken after the walk, it counted nowhere: a command that
// wrote on through a slow walk and ended went unseen (found in CI).
func (g *diskGuard) grown(quit func() string) int64 {
	g.used() // the figures up to the walk's start
	g.mu.Lock()
	before := make([]int64, len(g.fss))
	for i := range g.fss {
		before[i] = g.fss[i].acc
	}
	g.mu.Unlock()
	held, bad := g.held(quit)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unmeasured = bad; bad != "" {
		return unmeasurable
	}
	grown := held - g.base
	for i := range g.fss {
		g.fss[i].acc -= before[i] // what the walk found stands for the drops before it
	}
	g.fss[0].acc += grown // so that used() is grown now, whichever file system it is on
	return grown
}

// watch cancels ctx with errDiskBudget once the episode's commands have added more than
// the budget, or, when they were already past it as the command began, more than
// budget+diskSlack, or overSlack more than they had when they were past even that. Each
// command got diskSlack more than it began with before (found in review: five commands
// of 60 MiB each against a 64 MiB budget, none stopped, the model never told). Call the
// returned function when the command is over: it says, for the model, when the episode
// ends the command over its budget without the command having been stopped.
func (g *diskGuard) watch(cancel context.CancelCauseFunc) (stop func() (note string)) {
	u := g.used()
	if u > g.budget {
		// Over by the cheap measure: look closer before holding it against the command.
		// When that cannot tell, the command still gets overSlack over the cheap figure,
		// enough to remove what hides its writes.
		if grown := g.grown(nil); grown != unmeasurable {
			u = grown
		}
	}
	limit := g.budget
	if u > g.budget {
		limit = max(g.budget+diskSlack, u+overSlack)
	}
	g.mu.Lock()
	g.floored = ""
	for i := range g.fss {
		f := &g.fss[i]
		f.floor, f.inodeFloor, f.cmdLost = f.half, f.inodeHalf, 0
		if free, inodes, err := freeSpace(f.dir); err == nil {
			f.floor = min(f.half, free-diskSlack)
			if f.inodeHalf >= 0 {
				f.inodeFloor = min(f.inodeHalf, inodes-inodeSlack)
			}
		}
	}
	g.mu.Unlock()
	done := make(chan struct{})
	tripped := false // set before wg.Done: read after wg.Wait
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(diskPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if g.over(limit) {
					tripped = true
					cancel(errDiskBudget)
					return
				}
			}
		}
	}()
	return func() string {
		close(done)
		wg.Wait()
		g.setProcs(nil)
		// A command that went over and ended before the next look is judged all the same:
		// the model is told, as for one that was killed. With its processes gone nothing
		// can hide from a look, so one is taken whenever what the episode held as the
		// command began and all the free space lost since pass the limit, even where an
		// earlier look forgave part of it (a file held only in flight in a socket, then
		// linked back in: found in review).
		if !tripped && (g.over(limit) || u+g.lostSinceStart() > limit && g.grown(nil) > limit) {
			cancel(errDiskBudget)
			return ""
		}
		if !tripped && g.used() > g.budget {
			if now := g.grown(nil); now > g.budget {
				return g.overNote(now)
			}
		}
		return ""
	}
}

// overNote tells the model that the episode is past its budget after a command that was
// not stopped, and how little the next may add.
func (g *diskGuard) overNote(now int64) string {
	if now == unmeasurable {
		return g.diskNote()
	}
	return fmt.Sprintf("\n[the episode now holds %d MiB more than when it began, past its disk budget of %d MiB: the next command may add at most %d MiB; remove large files you made before going on]",
		now>>20, g.budget>>20, max(g.budget+diskSlack-now, overSlack)>>20)
}

// lostSinceStart is all the drops of free space since the command began, whoever wrote,
// with nothing forgiven by a look.
func (g *diskGuard) lostSinceStart() int64 {
	g.used() // the drops up to now
	g.mu.Lock()
	defer g.mu.Unlock()
	var n int64
	for _, f := range g.fss {
		n += f.cmdLost
	}
	return n
}

// over reports whether the episode's commands have added more than limit, or a file system
// went below its floor. When the cheap measure says they may have, a closer look measures.
func (g *diskGuard) over(limit int64) bool {
	u := g.used()
	if g.floorHit() {
		return true
	}
	if u <= limit {
		return false
	}
	g.mu.Lock()
	procs := g.procs
	g.mu.Unlock()
	return g.look(procs, limit) > limit
}

// look is what the episode's commands added, measured with the command's processes held
// still (Procs.Hold), which it leaves stopped when that is over limit: they are killed next.
// Unheld, a command wrote on through a look that took seconds (40,000 new folders to walk,
// race build, loaded machine) and ended before it was judged (found in CI); and a look taken
// with the command running could be dodged by moving files across the walk's path, which
// the look then forgave (found in review: 2-2.9 GiB kept against a 64 MiB budget).
//
// SIGSTOP waits for a system call to return: one write(2) of 1 GiB, or one
// madvise(MADV_POPULATE_WRITE) over mapped files, took 2.6 GiB while the look waited (found
// in review). So the look gives up, as unmeasurable, once the command's own processes have
// written holdGrowth more since it began (written, not the disk's free space, which others'
// writes on a busy disk shrink too: that killed commands that wrote nothing). When a process
// ran while held (a timer of its own sending it SIGCONT, a wait in the kernel that ended),
// the hold is tried once more, and then the figure is unmeasurable.
func (g *diskGuard) look(procs *sandbox.Procs, limit int64) int64 {
	if procs == nil {
		return g.grown(nil) // nothing runs: no hold needed, no reason to quit
	}
	for range 2 {
		var n int64 = unmeasurable
		wrote := g.writesSince(procs)
		held := procs.Hold(func() bool {
			n = g.grown(g.lookQuit(wrote))
			return n > limit
		}, wrote)
		if held {
			return n
		}
		if wrote() {
			g.mu.Lock()
			g.unmeasured = "the command's processes, which kept writing while held still to be measured"
			g.mu.Unlock()
			return unmeasurable
		}
	}
	g.mu.Lock()
	g.unmeasured = "the command's processes, which kept running while held still to be measured"
	g.mu.Unlock()
	return unmeasurable
}

// writesSince is a check of whether the command's processes have written more than
// holdGrowth since it was made, by their write_bytes (a process first seen later counts
// whole). Whatever they show, it also says so once the disk shrank holdShrink meanwhile:
// that bounds what writers it cannot see add (the children of a process that ignores
// SIGCHLD are reaped by the kernel, their write_bytes with them: found in review; a process
// whose /proc/PID/io cannot be read).
func (g *diskGuard) writesSince(procs *sandbox.Procs) func() bool {
	base, last := map[int]int64{}, map[int]int64{}
	for _, pid := range procs.List() {
		base[pid], _ = procgroup.WriteBytes(pid) // one that ended meanwhile writes no more
	}
	before := g.lostSinceStart()
	return func() bool {
		for _, pid := range procs.List() {
			if w, ok := procgroup.WriteBytes(pid); ok {
				last[pid] = w
			}
		}
		var sum int64
		for pid, w := range last {
			sum += w - base[pid]
		}
		return sum > holdGrowth || g.lostSinceStart()-before > holdShrink
	}
}

// lookQuit is what a look asks as it goes: it gives up past holdWalk, or, when it holds the
// command (wrote set), once the command wrote holdGrowth since the hold began.
func (g *diskGuard) lookQuit(wrote func() bool) func() string {
	deadline := time.Now().Add(holdWalk)
	return func() string {
		if time.Now().After(deadline) {
			return fmt.Sprintf("too much to measure within %s", holdWalk)
		}
		if wrote != nil && wrote() {
			return "the command wrote on while held still to be measured"
		}
		return ""
	}
}

// diskNote tells the model why its command was stopped.
func (g *diskGuard) diskNote() string {
	g.mu.Lock()
	bad, floored := g.unmeasured, g.floored
	g.mu.Unlock()
	if floored != "" {
		free, ino, _ := freeSpace(floored)
		return fmt.Sprintf("\n[killed: the disk of %s is nearly full (%d MiB and %d inodes free: less than half of the space or of the inodes free when the episode began); remove large files and many small files you made, and end programs that hold removed files open, before going on]",
			floored, max(free, 0)>>20, max(ino, 0))
	}
	if bad != "" {
		return fmt.Sprintf("\n[killed: the disk filled by more than the episode's disk budget of %d MiB (%d MiB now), and what the episode wrote cannot be measured: %s. Make that readable or remove it, and remove large files you made, before going on]",
			g.budget>>20, max(g.used(), 0)>>20, bad)
	}
	return fmt.Sprintf("\n[killed: the episode has written more than its disk budget of %d MiB (%d MiB now); remove large files you made before going on]",
		g.budget>>20, max(g.used(), 0)>>20)
}
