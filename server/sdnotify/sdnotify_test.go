package sdnotify

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// listen opens a real unixgram socket, as systemd does, and returns its path.
func listen(t *testing.T, name string) (*net.UnixConn, string) {
	t.Helper()
	path := name
	if name[0] != '@' {
		path = filepath.Join(t.TempDir(), name)
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, path
}

func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestNotify(t *testing.T) {
	for _, name := range []string{"notify.sock", "@gardend-sdnotify-test-" + strconv.Itoa(os.Getpid())} {
		t.Run(name, func(t *testing.T) {
			conn, path := listen(t, name)
			t.Setenv("NOTIFY_SOCKET", path)
			n, err := FromEnv()
			if err != nil || n == nil {
				t.Fatalf("FromEnv: %v %v", n, err)
			}
			if err := n.Notify(Ready, "STATUS=listening on 127.0.0.1:8000"); err != nil {
				t.Fatal(err)
			}
			if got := receive(t, conn); got != "READY=1\nSTATUS=listening on 127.0.0.1:8000" {
				t.Fatalf("datagram %q", got)
			}
			if err := n.Notify(Watchdog); err != nil || receive(t, conn) != "WATCHDOG=1" {
				t.Fatalf("watchdog: %v", err)
			}
			if err := n.Notify("READY"); err == nil {
				t.Fatal("a state without = was sent")
			}
		})
	}
}

func TestOutsideSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n, err := FromEnv()
	if n != nil || err != nil {
		t.Fatalf("FromEnv without NOTIFY_SOCKET: %v %v", n, err)
	}
	if err := n.Notify(Ready); err != nil {
		t.Fatalf("nil Notifier: %v", err)
	}
	t.Setenv("NOTIFY_SOCKET", "vsock:2:1234")
	if _, err := FromEnv(); err == nil {
		t.Fatal("vsock address accepted")
	}
	// A socket nobody listens on is an error the caller can log.
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "gone.sock"))
	n, _ = FromEnv()
	if err := n.Notify(Ready); err == nil {
		t.Fatal("no error for a missing socket")
	}
}

func TestWatchdogInterval(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	cases := []struct {
		usec, pid string
		want      time.Duration
		on, err   bool
	}{
		{"", "", 0, false, false},
		{"30000000", "", 30 * time.Second, true, false},
		{"30000000", pid, 30 * time.Second, true, false},
		{"30000000", "1", 0, false, false}, // meant for another process
		{"soon", "", 0, false, true},
		{"0", "", 0, false, true},
	}
	for _, c := range cases {
		t.Setenv("WATCHDOG_USEC", c.usec)
		t.Setenv("WATCHDOG_PID", c.pid)
		d, on, err := WatchdogInterval()
		if d != c.want || on != c.on || (err != nil) != c.err {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: %v %v %v", c.usec, c.pid, d, on, err)
		}
	}
}
