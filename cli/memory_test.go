package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/gardend/gardend/cli"
)

// serveUntilListening runs serve with args until the test ends; during holds the
// checks to make while it listens, and it returns the "memory" log line.
func serveUntilListening(t *testing.T, during func(), args ...string) map[string]any {
	t.Helper()
	logs, logw := io.Pipe()
	memory := make(chan map[string]any, 1)
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch line["message"] {
			case "memory":
				memory <- line
			case "listening":
				close(listening)
			}
		}
	}()
	root := cli.NewRootCommand()
	root.SetArgs(append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--log-format", "json"}, args...))
	root.SetOut(io.Discard)
	root.SetErr(logw)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	during()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	logw.Close()
	return <-memory
}

// serve sets the Go memory limit while it runs and puts it back when it returns; it
// leaves GOMAXPROCS as it was while no hash runs.
func TestServeMemoryLimit(t *testing.T) {
	procs, limit := runtime.GOMAXPROCS(0), debug.SetMemoryLimit(-1)
	for _, tc := range []struct {
		name      string
		hashing   int
		args      []string
		env       string
		wantLimit int64
		wantFrom  string
	}{
		{"flag", 1, []string{"--memory-limit", "300MiB"}, "", 300 << 20, "--memory-limit"},
		{"default", 3, nil, "", (3*64 + 128) << 20, "default"},
		{"GOMEMLIMIT kept", 1, nil, "200MiB", limit, "GOMEMLIMIT=200MiB"},
		{"flag over GOMEMLIMIT", 1, []string{"--memory-limit", "1GiB"}, "200MiB", 1 << 30, "--memory-limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				// The runtime read GOMEMLIMIT at start; serve only has to leave it be.
				t.Setenv("GOMEMLIMIT", tc.env)
			}
			hashing := tc.hashing
			args := append([]string{"--max-hashing", strconv.Itoa(hashing)}, tc.args...)
			line := serveUntilListening(t, func() {
				if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
					t.Errorf("memory limit %d while serving, want %d", got, tc.wantLimit)
				}
				// The hashes' Ps are added only while hashes run (server/hashing.go):
				// idle, the server has one per core, as every request wants.
				if got := runtime.GOMAXPROCS(0); got != procs {
					t.Errorf("GOMAXPROCS %d while serving without hashing, want %d", got, procs)
				}
			}, args...)
			if line["memory_limit_from"] != tc.wantFrom || line["max_hashing"] != float64(hashing) || line["hashing_budget_mib"] != float64(64*hashing) {
				t.Errorf("memory log line %v", line)
			}
			if got := debug.SetMemoryLimit(-1); got != limit {
				t.Errorf("memory limit %d after serve, want %d back", got, limit)
			}
			if got := runtime.GOMAXPROCS(0); got != procs {
				t.Errorf("GOMAXPROCS %d after serve, want %d back", got, procs)
			}
		})
	}
}
