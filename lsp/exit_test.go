package lsp

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestExitWithStdinHeldOpen: a client may keep the server's stdin open after `exit`; the
// process must still end at once with the spec's exit code (0 after shutdown, 1 without).
func TestExitWithStdinHeldOpen(t *testing.T) {
	t.Parallel()
	bin := frognanoBinary(t)
	for _, c := range []struct {
		name     string
		shutdown bool
		want     int
	}{{"shutdown then exit", true, 0}, {"exit alone", false, 1}} {
		t.Run(c.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close() // held open until the test ends, as a client may
			cmd := exec.Command(bin, "lsp", "--log", t.TempDir()+"/lsp.log")
			cmd.Env = append(passthroughEnv(), "FROGNANO_CACHE="+t.TempDir())
			cmd.Stdin = r
			cmd.Stdout = io.Discard
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			send := func(id int, method, params string) {
				var body string
				if id > 0 {
					body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
				} else {
					body = fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, method, params)
				}
				fmt.Fprintf(w, "Content-Length: %d\r\n\r\n%s", len(body), body)
			}
			send(1, "initialize", `{"processId":null,"rootUri":null,"capabilities":{}}`)
			send(0, "initialized", `{}`)
			if c.shutdown {
				send(2, "shutdown", `null`)
			}
			send(0, "exit", `null`)
			select {
			case <-exited:
				if got := cmd.ProcessState.ExitCode(); got != c.want {
					t.Errorf("exit code %d, want %d", got, c.want)
				}
			case <-time.After(60 * time.Second): // it would wait for stdin to close: forever
				cmd.Process.Kill()
				t.Fatal("frognano lsp did not end within 60s of exit while its stdin stayed open")
			}
		})
	}
}
