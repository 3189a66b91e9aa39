package daemon

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/frognano/frognano/internal/gocache"
)

// The test binary is re-executed as the processes the tests start: a process that holds
// a daemon's lock like a daemon (lock_test.go), and the daemon itself (kill_test.go).
const (
	envHold = "FROGNANO_DAEMON_TEST_HOLD" // "term" or "stubborn" (ignores SIGTERM); the folder in envDir
	envDir  = "FROGNANO_DAEMON_TEST_DIR"
)

func TestMain(m *testing.M) {
	gocache.HelperMain()
	if mode := os.Getenv(envHold); mode != "" {
		os.Exit(hold(mode))
	}
	if os.Getenv(envKillChild) != "" {
		os.Exit(killChild())
	}
	os.Exit(m.Run())
}

// hold takes the daemon's lock of $envDir as Run does and keeps it until SIGTERM (never,
// when stubborn).
func hold(mode string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	d := &daemon{dir: os.Getenv(envDir)}
	if err := d.takeLock(context.Background()); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	<-ctx.Done()
	return 0
}
