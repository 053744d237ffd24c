package synctest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
)

// natsServerModule is the nats-server the stock binary is built from: the version
// go.mod requires, so the hub in tests runs the code gardend embeds.
const natsServerModule = "github.com/nats-io/nats-server/v2"

var built struct {
	once sync.Once
	path string
	err  error
}

// NATSServerBinary builds the stock nats-server binary of the module's version once
// per test binary, kept in the user cache directory across runs, and returns its
// path. Without the go command the test is skipped, or fails with GARDEND_CI set.
func NATSServerBinary(tb testing.TB) string {
	tb.Helper()
	built.once.Do(func() {
		version := moduleVersion(natsServerModule)
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "gardend-test", "nats-server-"+version)
		bin := filepath.Join(dir, "nats-server")
		if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() && version != "" && version != "(devel)" {
			built.path = bin
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("building the stock nats-server needs the go command: %v", err)
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			built.err = err
			return
		}
		tmp := bin + ".tmp"
		cmd := exec.Command(goTool, "build", "-o", tmp, natsServerModule)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build %s: %v\n%s", natsServerModule, err, out)
			return
		}
		if err := os.Rename(tmp, bin); err != nil {
			built.err = err
			return
		}
		built.path = bin
	})
	if built.err != nil {
		if os.Getenv("GARDEND_CI") != "" {
			tb.Fatal(built.err)
		}
		tb.Skip(built.err)
	}
	return built.path
}

// moduleVersion is the version of a module this test binary was built with.
func moduleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range info.Deps {
		if m.Path == path {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// Process is a stock nats-server running as a process of its own.
type Process struct {
	cmd  *exec.Cmd
	logs *bytes.Buffer
	mu   sync.Mutex
}

// StartHubProcess runs the stock nats-server binary with the configuration conf
// makes, and waits until it accepts connections.
func StartHubProcess(tb testing.TB, dir string, conf HubConfig) *Hub {
	tb.Helper()
	h := writeConf(tb, dir, conf)
	h.StartProcess(tb)
	tb.Cleanup(h.Kill)
	return h
}

// StartProcess (re)starts the hub as a process.
func (h *Hub) StartProcess(tb testing.TB) {
	tb.Helper()
	bin := NATSServerBinary(tb)
	p := &Process{logs: &bytes.Buffer{}}
	p.cmd = exec.Command(bin, "-c", h.Conf)
	p.cmd.Stdout, p.cmd.Stderr = &lockedWriter{p}, &lockedWriter{p}
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	h.proc = p
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(p.Logs(), "Server is ready") {
		if time.Now().After(deadline) {
			tb.Fatalf("nats-server did not start within 20s:\n%s", p.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the hub process with SIGKILL: nothing it held in memory is written.
func (h *Hub) Kill() {
	if h.proc == nil {
		return
	}
	_ = h.proc.cmd.Process.Kill() // SIGKILL
	_ = h.proc.cmd.Wait()
	h.proc = nil
}

// Logs is what the hub process printed.
func (h *Hub) Logs() string {
	if h.proc == nil {
		return ""
	}
	return h.proc.Logs()
}

func (p *Process) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

type lockedWriter struct{ p *Process }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.logs.Write(b)
}
