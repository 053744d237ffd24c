// Package sdnotify speaks systemd's notify protocol (sd_notify(3)): newline-separated
// VAR=value assignments in one datagram to the Unix socket named by $NOTIFY_SOCKET. It
// is what a Type=notify unit needs: READY=1 once serving, STOPPING=1 when shutting
// down, WATCHDOG=1 at least every WatchdogSec. Outside systemd it does nothing.
package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Common states.
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
	Watchdog = "WATCHDOG=1"
)

// Notifier sends states to the service manager. A nil Notifier does nothing, so
// callers need not check whether they run under systemd.
type Notifier struct {
	addr *net.UnixAddr
}

// FromEnv is the Notifier of $NOTIFY_SOCKET, or nil when it is not set. An address
// starting with "@" is a Linux abstract socket.
func FromEnv() (*Notifier, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	switch {
	case path == "":
		return nil, nil
	case path[0] != '/' && path[0] != '@':
		return nil, fmt.Errorf("NOTIFY_SOCKET=%q: not a Unix socket path (vsock is not supported)", path)
	}
	return &Notifier{addr: &net.UnixAddr{Name: path, Net: "unixgram"}}, nil
}

// Notify sends the states in one datagram.
func (n *Notifier) Notify(states ...string) error {
	if n == nil {
		return nil
	}
	for _, s := range states {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("sdnotify: %q is not VAR=value", s)
		}
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	defer func() { _ = conn.Close() }() // the datagram is sent or its error returned
	if _, err := conn.Write([]byte(strings.Join(states, "\n"))); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}

// WatchdogInterval is the unit's WatchdogSec ($WATCHDOG_USEC), when its watchdog is
// on and meant for this process ($WATCHDOG_PID, when set, is our pid). Send Watchdog
// at about half of it.
func WatchdogInterval() (time.Duration, bool, error) {
	usec := os.Getenv("WATCHDOG_USEC")
	if usec == "" {
		return 0, false, nil
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 {
		return 0, false, errors.New("WATCHDOG_USEC=" + strconv.Quote(usec) + ": not a positive number of microseconds")
	}
	return time.Duration(n) * time.Microsecond, true, nil
}
