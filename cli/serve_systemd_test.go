package cli_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/cli"
)

// TestServeNotifiesSystemd runs serve as a Type=notify unit would, with a real
// notify socket: READY=1 once it listens, WATCHDOG=1 every half WatchdogSec while it
// runs, STOPPING=1 when it is told to stop.
func TestServeNotifiesSystemd(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	cmd := cli.NewRootCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--log-level", "error"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	next := func() string {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 1024)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	if got := next(); !strings.HasPrefix(got, "READY=1\nSTATUS=listening on 127.0.0.1:") {
		t.Fatalf("first notification %q", got)
	}
	for range 2 {
		if got := next(); got != "WATCHDOG=1" {
			t.Fatalf("notification %q, want WATCHDOG=1", got)
		}
	}
	cancel()
	for {
		got := next()
		if got == "WATCHDOG=1" {
			continue // sent before the cancellation was seen
		}
		if !strings.HasPrefix(got, "STOPPING=1") {
			t.Fatalf("notification %q, want STOPPING=1", got)
		}
		break
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
