package ollama

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/internal/cachedir"
	"github.com/frognano/frognano/internal/procgroup"
)

// Version is the Ollama release frognano builds, tests against and documents.
const Version = "0.17.4"

// ErrNoBinary means no Ollama server binary was found; the message says how to get one.
var ErrNoBinary = errors.New("no ollama binary: set OLLAMA_BIN, run scripts/build-ollama.sh, or install Ollama " + Version)

// CacheDir is where frognano keeps what it builds or downloads outside the repository:
// $FROGNANO_CACHE, else $XDG_CACHE_HOME/frognano, else ~/.cache/frognano.
func CacheDir() string { return cachedir.Dir() }

// FindBinary returns the Ollama server binary to run: $OLLAMA_BIN, else the one
// scripts/build-ollama.sh left in the cache, else `ollama` on PATH.
func FindBinary() (string, error) {
	if b := os.Getenv("OLLAMA_BIN"); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Errorf("OLLAMA_BIN=%s: %w", b, err)
		}
		return b, nil
	}
	cached := filepath.Join(CacheDir(), "ollama-v"+Version, "ollama")
	if _, err := os.Stat(cached); err == nil {
		return cached, nil
	}
	if b, err := exec.LookPath("ollama"); err == nil {
		return b, nil
	}
	return "", ErrNoBinary
}

// Server is an `ollama serve` that frognano started for itself (tests, the demo), with
// its own HOME and model store, on a free loopback port.
type Server struct {
	// Host is host:port, the value for OLLAMA_HOST.
	Host   string
	Client *api.Client
	// Dir holds the server's HOME, model store and log.
	Dir string

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	log  *lockedBuffer

	stopOnce sync.Once
}

// StartServer starts bin as `ollama serve` with its state in dir and waits until it
// answers. extraEnv entries (KEY=VALUE) are added to its environment.
func StartServer(ctx context.Context, bin, dir string, extraEnv ...string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	host := fmt.Sprintf("127.0.0.1:%d", port)
	home := filepath.Join(dir, "home")
	models := filepath.Join(dir, "models")
	for _, d := range []string{home, models} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}

	cmd := exec.Command(bin, "serve")
	cmd.Env = append([]string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"OLLAMA_HOST=" + host,
		"OLLAMA_MODELS=" + models,
		"OLLAMA_NOPRUNE=1",
	}, extraEnv...)
	s := &Server{Host: host, Dir: dir, cmd: cmd, done: make(chan struct{}), log: &lockedBuffer{}}
	cmd.Stdout = io.MultiWriter(logFile, s.log)
	cmd.Stderr = cmd.Stdout
	// Its own process group, so Stop can kill the runner subprocesses with it; and killed
	// with us if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		cmd.Wait()
		logFile.Close()
		close(s.done)
	}()

	s.Client = api.NewClient(&url.URL{Scheme: "http", Host: host}, http.DefaultClient)
	deadline := time.Now().Add(60 * time.Second)
	for {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		err := s.Client.Heartbeat(hctx)
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("ollama serve exited at start: %s", s.LogTail(2000))
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("ollama serve did not answer within 60s: %s", s.LogTail(2000))
		}
	}
}

// Stop kills the server and every process in its group (the model runners), and waits
// for the server to exit.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		procgroup.Kill(s.cmd.Process.Pid, 5*time.Second)
		<-s.done
	})
}

// Pgid is the process group of the server and its runners.
func (s *Server) Pgid() int { return s.cmd.Process.Pid }

// LogTail returns the last n bytes the server printed.
func (s *Server) LogTail(n int) string { return s.log.tail(n) }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer keeps the server's output for error messages; mu guards b.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Keep memory bounded on chatty servers: only the tail is ever read.
	if l.b.Len() > 1<<20 {
		rest := l.b.Bytes()[l.b.Len()-(64<<10):]
		l.b = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.b.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
