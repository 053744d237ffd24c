package synctest

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// gardendPackage is the command built for tests that kill gardend processes.
const gardendPackage = "github.com/gardend/gardend"

var gardendBuilt struct {
	once sync.Once
	path string
	err  error
}

// GardendBinary builds this module's gardend once per test binary (the go command's
// cache makes a rebuild cheap) into the user cache directory and returns its path.
// Without the go command the test is skipped, or fails with GARDEND_CI set.
func GardendBinary(tb testing.TB) string {
	tb.Helper()
	gardendBuilt.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			gardendBuilt.err = fmt.Errorf("building gardend needs the go command: %v", err)
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "gardend-test")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			gardendBuilt.err = err
			return
		}
		// Built under a name of this process's, then renamed: test binaries of
		// several packages may build at once.
		bin := filepath.Join(dir, "gardend")
		tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
		cmd := exec.Command(goTool, "build", "-o", tmp, gardendPackage)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			gardendBuilt.err = fmt.Errorf("go build %s: %v\n%s", gardendPackage, err, out)
			return
		}
		if err := os.Rename(tmp, bin); err != nil {
			gardendBuilt.err = err
			return
		}
		gardendBuilt.path = bin
	})
	if gardendBuilt.err != nil {
		if os.Getenv("GARDEND_CI") != "" {
			tb.Fatal(gardendBuilt.err)
		}
		tb.Skip(gardendBuilt.err)
	}
	return gardendBuilt.path
}

// Gardend is `gardend serve` running as a process of its own, listening on Addr.
type Gardend struct {
	Addr string
	args []string
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs bytes.Buffer
}

// StartGardend runs `gardend serve --addr 127.0.0.1:PORT args...` and waits until it
// answers /readyz with 200.
func StartGardend(tb testing.TB, args ...string) *Gardend {
	tb.Helper()
	g := &Gardend{Addr: fmt.Sprintf("127.0.0.1:%d", FreePort(tb))}
	g.args = append([]string{"serve", "--addr", g.Addr}, args...)
	g.Start(tb)
	tb.Cleanup(g.Kill)
	return g
}

// Start (re)starts the process with the same arguments.
func (g *Gardend) Start(tb testing.TB) {
	tb.Helper()
	g.cmd = exec.Command(GardendBinary(tb), g.args...)
	g.cmd.Stdout, g.cmd.Stderr = g, g
	if err := g.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + g.Addr + "/readyz")
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("gardend did not become ready within 30s:\n%s", g.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill stops the process with SIGKILL: nothing it held in memory is written.
func (g *Gardend) Kill() {
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Kill()
	_ = g.cmd.Wait()
	g.cmd = nil
}

// Stop stops the process with SIGTERM, as systemd does, and waits for it.
func (g *Gardend) Stop() {
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	_ = g.cmd.Wait()
	g.cmd = nil
}

// Write collects the process's output.
func (g *Gardend) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.logs.Write(p)
}

// Logs is what the process printed.
func (g *Gardend) Logs() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.logs.String()
}
