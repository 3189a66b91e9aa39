package sandbox

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unixTable is a /proc/net/unix of n lines like a desktop's: most unnamed or connected,
// abstract or under /run, plus the lines given.
func unixTable(n int, extra ...string) []byte {
	var b strings.Builder
	b.WriteString("Num       RefCount Protocol Flags    Type St Inode Path\n")
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "0000000000000000: 00000003 00000000 00000000 0001 03 %d\n", 1000+i)
		case 1:
			fmt.Fprintf(&b, "0000000000000000: 00000002 00000000 00010000 0001 01 %d @/tmp/.X11-unix/X%d\n", 1000+i, i)
		case 2:
			fmt.Fprintf(&b, "0000000000000000: 00000002 00000000 00010000 0001 01 %d /run/user/1000/s%d\n", 1000+i, i)
		default:
			fmt.Fprintf(&b, "0000000000000000: 00000003 00000000 00000000 0001 03 %d /run/systemd/journal/stdout\n", 1000+i)
		}
	}
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	return []byte(b.String())
}

// Which lines of /proc/net/unix become masks.
func TestListeningSockets(t *testing.T) {
	dir := t.TempDir()
	listen := func(name string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return p
	}
	daemon, own, bound, hidden := listen("srv/daemon.sock"), listen("copy/own.sock"), listen("hidden/tool/s.sock"), listen("hidden/other.sock")
	file := filepath.Join(dir, "srv", "file")
	os.WriteFile(file, nil, 0o644)
	os.Symlink("srv", filepath.Join(dir, "link"))
	line := func(flags, path string) string {
		return "0000000000000000: 00000002 00000000 " + flags + " 0001 01 4242 " + path
	}
	table := unixTable(40,
		line("00010000", daemon), line("00010000", daemon), // once
		line("00000000", daemon+"x"),                                // not listening
		line("00010000", own),                                       // in the copy
		line("00010000", bound),                                     // bound back into a hidden place
		line("00010000", hidden),                                    // hidden already
		line("00010000", file),                                      // no longer a socket there
		line("00010000", filepath.Join(dir, "gone.sock")),           // gone
		line("00010000", filepath.Join(dir, "link", "daemon.sock")), // through a link: the real path, once
		line("00010000", "relative.sock"),
	)
	var got []string
	for _, m := range listeningSockets(table, []string{filepath.Join(dir, "copy")}, []string{filepath.Join(dir, "hidden")}, []string{filepath.Join(dir, "hidden/tool")}) {
		if m.dir {
			t.Errorf("%s masked as a directory", m.path)
		}
		got = append(got, m.path)
	}
	if want := []string{daemon, bound}; !slices.Equal(got, want) {
		t.Errorf("masks:\n got %q\nwant %q", got, want)
	}
}

// BenchmarkListeningSockets is the per-command cost on a desktop's 2,000 sockets.
func BenchmarkListeningSockets(b *testing.B) {
	table := unixTable(2000)
	for b.Loop() {
		listeningSockets(table, []string{"/tmp/copy"}, append(slices.Clone(bwrapPrivate), "/home", "/run"), nil)
	}
}
