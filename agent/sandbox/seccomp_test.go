package sandbox

import (
	"context"
	"encoding/binary"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// keyctlPy searches the session keyring for a key by description and prints what it reads,
// or the errno: keyctl(2) through ctypes, since the keyctl tool may not be installed.
const keyctlPy = `import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
kid = libc.syscall(L(250), L(10), L(-3), b"user", sys.argv[1].encode(), L(0))  # KEYCTL_SEARCH @s
if kid < 0:
    print("search errno", ctypes.get_errno())
else:
    buf = ctypes.create_string_buffer(256)
    n = libc.syscall(L(250), L(11), L(kid), buf, L(256))  # KEYCTL_READ
    print("read", buf.raw[:n].decode() if n > 0 else "errno %d" % ctypes.get_errno())
k = libc.syscall(L(248), b"user", b"planted", b"x", L(1), L(-3))  # add_key to @s
print("add_key", "errno %d" % ctypes.get_errno() if k < 0 else "ok")`

// A key added to the session keyring before the command (a Kerberos ticket, say) can be
// neither found nor read inside, and nothing can be added there; the syscall filter denies
// keyctl and add_key.
func TestSessionKeyringUnreachable(t *testing.T) {
	if !seccompSupported() {
		t.Skip("the syscall filter is x86-64 only")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 to call keyctl with")
	}
	r := bwrapRunner(t, Options{})
	desc := "frognano-test-" + marker()
	type result struct {
		o, outside Output
		err        error
	}
	done := make(chan result, 1)
	go func() {
		// A session keyring of this thread's own, the key in it, then the command started from
		// this thread (Run locks it), which inherits it. The thread is not reused: the
		// goroutine ends locked.
		runtime.LockOSThread()
		if _, err := unix.KeyctlJoinSessionKeyring("frognano-test"); err != nil {
			done <- result{err: fmt.Errorf("no session keyring here: %w", err)}
			return
		}
		if _, err := unix.AddKey("user", desc, []byte(secretMark+"keyring"), unix.KEY_SPEC_SESSION_KEYRING); err != nil {
			done <- result{err: fmt.Errorf("cannot add a key: %w", err)}
			return
		}
		out, _ := exec.Command("python3", "-c", keyctlPy, desc).CombinedOutput()
		o, err := r.Run(context.Background(), Cmd{Dir: t.TempDir(), Command: fmt.Sprintf("python3 -c %s %s", shellWords([]string{keyctlPy}), desc), Timeout: 20 * time.Second})
		done <- result{o: o, outside: Output{Stdout: string(out)}, err: err}
	}()
	res := <-done
	if res.err != nil {
		t.Skip(res.err)
	}
	if !strings.Contains(res.outside.Stdout, "read "+secretMark) {
		t.Fatalf("the fixture is broken: outside the sandbox the key is not readable: %s", res.outside.Stdout)
	}
	if !r.Isolation().SyscallFilter {
		t.Fatalf("no syscall filter: %s", r.Isolation().Summary())
	}
	if strings.Contains(res.o.Stdout, secretMark) || !strings.Contains(res.o.Stdout, "search errno 1\n") || !strings.Contains(res.o.Stdout, "add_key errno 1\n") {
		t.Errorf("the session keyring is reachable inside: stdout %q stderr %q", res.o.Stdout, res.o.Stderr)
	}
}

// Commands cannot make user namespaces (unshare -U, clone with CLONE_NEWUSER), which would
// give them capabilities over new namespaces and much of the kernel's attack surface; threads
// and processes still start (glibc falls back from clone3 to clone), and Python's io_uring-less
// world is unaffected.
func TestUserNamespacesDenied(t *testing.T) {
	if !seccompSupported() {
		t.Skip("the syscall filter is x86-64 only")
	}
	r := bwrapRunner(t, Options{})
	o := run(t, r, `unshare -U true 2>/dev/null && echo USERNS; unshare -Ur true 2>/dev/null && echo USERNS-ROOT; python3 -c 'import threading, subprocess; t = threading.Thread(target=print, args=("thread",), kwargs={"flush": True}); t.start(); t.join(); subprocess.run(["echo", "child"])'; echo done`, 20*time.Second)
	if o.Stdout != "thread\nchild\ndone\n" {
		t.Errorf("want no user namespace, threads and children working: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
}

// A file in no folder (O_TMPFILE) cannot be made, and programs fall back: Python's
// tempfile.TemporaryFile, which tries O_TMPFILE first, still works.
func TestTmpfileDenied(t *testing.T) {
	r := filteredPythonRunner(t)
	o := run(t, r, `python3 -c '
import os, tempfile
try:
    os.open(".", os.O_TMPFILE | os.O_RDWR, 0o600); print("O_TMPFILE made")
except OSError as e:
    print("O_TMPFILE errno", e.errno)
with tempfile.TemporaryFile() as f:
    f.write(b"x"); f.seek(0); print("TemporaryFile", f.read().decode())
'`, 20*time.Second)
	if o.Stdout != "O_TMPFILE errno 95\nTemporaryFile x\n" {
		t.Errorf("want O_TMPFILE refused (EOPNOTSUPP) and TemporaryFile working: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
}

// fallocate cannot take space (it took gigabytes between two looks of the disk guard), nor
// can the ioctls that preallocate, and what falls back to writing still works: coreutils'
// fallocate fails, Python's posix_fallocate (glibc's, which writes instead) makes the file,
// holes still punch.
func TestFallocateDenied(t *testing.T) {
	r := filteredPythonRunner(t)
	o := run(t, r, `fallocate -l 100M big 2>/dev/null && echo ALLOCATED; python3 -c '
import ctypes, fcntl, os, struct
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("p", os.O_RDWR | os.O_CREAT, 0o644)
space = struct.pack("hhxxxxqqii16x", 0, 0, 0, 10 << 20, 0, 0)  # struct space_resv
for name, cmd in (("RESVSP", 0x40305828), ("RESVSP64", 0x4030582a), ("ZERO_RANGE", 0x40305839)):
    try:
        fcntl.ioctl(fd, cmd, space)
        print(name, "allocated", os.fstat(fd).st_blocks * 512)
    except OSError as e:
        if e.errno != 95:
            print(name, "errno", e.errno)
os.posix_fallocate(fd, 0, 1 << 20)
print("posix_fallocate", os.fstat(fd).st_size)
# FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE
if libc.fallocate(fd, 3, ctypes.c_long(0), ctypes.c_long(4096)) == 0:
    print("punched")
else:
    print("punch errno", ctypes.get_errno())
'`, 20*time.Second)
	if o.Stdout != "posix_fallocate 1048576\npunched\n" {
		t.Errorf("want fallocate refused, posix_fallocate falling back, holes punched: stdout %q stderr %q", o.Stdout, o.Stderr)
	}
}

// filteredPythonRunner is a bwrap runner with the syscall filter, for a test whose commands
// run python3; it skips where there is no filter or no python3.
func filteredPythonRunner(t *testing.T) *Runner {
	t.Helper()
	if !seccompSupported() {
		t.Skip("the syscall filter is x86-64 only")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	return bwrapRunner(t, Options{})
}

// The program itself, interpreted: another architecture is killed, x32 calls and the denied
// calls fail with their errno, CLONE_NEWUSER only is refused to clone and unshare.
func TestSeccompProgram(t *testing.T) {
	p := seccompProgram()
	run := func(arch, nr, arg0 uint32) uint32 {
		// The same value in every argument: each rule reads only the one it checks.
		data := map[uint32]uint32{seccompDataArch: arch, seccompDataNr: nr, seccompDataArg0: arg0, seccompDataArg1: arg0, seccompDataArg2: arg0}
		var acc uint32
		for pc := 0; pc < len(p)/8; pc++ {
			code := binary.NativeEndian.Uint16(p[8*pc:])
			jt, jf, k := p[8*pc+2], p[8*pc+3], binary.NativeEndian.Uint32(p[8*pc+4:])
			cond := false
			switch code {
			case bpfLD | bpfW | bpfABS:
				acc = data[k]
				continue
			case bpfRET | bpfK:
				return k
			case bpfJMP | bpfJEQ | bpfK:
				cond = acc == k
			case bpfJMP | bpfJGE | bpfK:
				cond = acc >= k
			case bpfJMP | bpfJSET | bpfK:
				cond = acc&k != 0
			default:
				t.Fatalf("unknown instruction %#x at %d", code, pc)
			}
			if cond {
				pc += int(jt)
			} else {
				pc += int(jf)
			}
		}
		t.Fatal("the program falls off its end")
		return 0
	}
	for _, c := range []struct {
		name           string
		arch, nr, arg0 uint32
		want           uint32
	}{
		{"read", auditArchX86_64, 0, 0, retAllow},
		{"i386", 0x40000003, 3, 0, retKillProcess},
		{"x32 keyctl", auditArchX86_64, x32SyscallBit | sysKeyctl, 0, retErrno | errEPERM},
		{"keyctl", auditArchX86_64, sysKeyctl, 0, retErrno | errEPERM},
		{"add_key", auditArchX86_64, sysAddKey, 0, retErrno | errEPERM},
		{"io_uring_setup", auditArchX86_64, sysIOUringSetup, 0, retErrno | errENOSYS},
		{"bpf", auditArchX86_64, sysBPF, 0, retErrno | errEPERM},
		{"clone3", auditArchX86_64, sysClone3, 0, retErrno | errENOSYS},
		{"clone thread", auditArchX86_64, sysClone, 0x3d0f00, retAllow},
		{"clone newuser", auditArchX86_64, sysClone, cloneNewUser | 0x11, retErrno | errEPERM},
		{"unshare newns", auditArchX86_64, sysUnshare, 0x20000, retAllow},
		{"unshare newuser", auditArchX86_64, sysUnshare, cloneNewUser, retErrno | errEPERM},
		{"open", auditArchX86_64, sysOpen, 0o2 | 0o100, retAllow},
		{"open directory", auditArchX86_64, sysOpen, 0o200000, retAllow},
		{"open tmpfile", auditArchX86_64, sysOpen, 0o20200002, retErrno | errEOPNOTSUPP},
		{"openat", auditArchX86_64, sysOpenat, 0o2 | 0o100, retAllow},
		{"openat tmpfile", auditArchX86_64, sysOpenat, 0o20200002, retErrno | errEOPNOTSUPP},
		{"openat2", auditArchX86_64, sysOpenat2, 0, retErrno | errENOSYS},
		{"unshare after open's rule", auditArchX86_64, sysUnshare, cloneNewUser, retErrno | errEPERM},
		{"fallocate", auditArchX86_64, sysFallocate, 0, retErrno | errEOPNOTSUPP},
		{"fallocate keep size", auditArchX86_64, sysFallocate, 0x01, retErrno | errEOPNOTSUPP},
		{"fallocate zero range", auditArchX86_64, sysFallocate, 0x10, retErrno | errEOPNOTSUPP},
		{"fallocate punch hole", auditArchX86_64, sysFallocate, 0x01 | 0x02, retAllow},
		{"fallocate collapse range", auditArchX86_64, sysFallocate, 0x08, retAllow},
		{"clone newuser after fallocate's rule", auditArchX86_64, sysClone, cloneNewUser, retErrno | errEPERM},
		{"ioctl TCGETS", auditArchX86_64, sysIoctl, 0x5401, retAllow},
		{"ioctl FS_IOC_RESVSP", auditArchX86_64, sysIoctl, 0x40305828, retErrno | errEOPNOTSUPP},
		{"ioctl FS_IOC_RESVSP64", auditArchX86_64, sysIoctl, 0x4030582a, retErrno | errEOPNOTSUPP},
		{"ioctl FS_IOC_ZERO_RANGE", auditArchX86_64, sysIoctl, 0x40305839, retErrno | errEOPNOTSUPP},
		{"ioctl FS_IOC_UNRESVSP64", auditArchX86_64, sysIoctl, 0x4030582b, retAllow},
		{"unshare after ioctl's rule", auditArchX86_64, sysUnshare, cloneNewUser, retErrno | errEPERM},
	} {
		if got := run(c.arch, c.nr, c.arg0); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
}
