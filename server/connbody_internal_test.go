package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestConnLimitSilentBodies: requests that declared a body and sent nothing filled the
// connection caps for --body-timeout at a time (the class of issue 15 item 1): every
// connection busy with a request, none could give way. A connection whose body is
// behind the pace now gives way at a cap, oldest first.
func TestConnLimitSilentBodies(t *testing.T) {
	s := newInternalServer(t, func(c *Config) { c.BodyTimeout = time.Minute })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := newConnLimiter(ln, 2, 2, zerolog.Nop())
	lim.newGrace = 50 * time.Millisecond
	lim.bodyRate = s.cfg.BodyMinRate
	hs := s.newHTTPServer(context.Background(), s.Handler()) // as Run serves
	hs.ConnState = lim.track
	go func() { _ = hs.Serve(lim) }()
	t.Cleanup(func() { _ = hs.Close() })
	addr := ln.Addr().String()

	var silent []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_, _ = io.WriteString(c, "POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n")
		silent = append(silent, c)
		waitConns(t, lim, len(silent), "waiting on a body", func(c *limitedConn) bool { return c.bodyWaiting.Load() })
	}
	time.Sleep(2 * lim.newGrace) // their grace passes

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := roundTrip(c, bufio.NewReader(c), "/healthz"); err != nil {
		t.Fatalf("a request beside two silent bodies at the cap of two: %v", err)
	}
	if !closedByServer(silent[0]) || !stillOpen(silent[1]) {
		t.Fatal("the oldest silent body's connection did not give way, or not alone")
	}
}

// TestBodyBehind: a connection gives way for its body only while a read of it waits,
// past the grace, behind the pace.
func TestBodyBehind(t *testing.T) {
	now := time.Minute // the limiter's clock
	for _, tc := range []struct {
		name     string
		age      time.Duration
		received int64
		waiting  bool
		behind   bool
	}{
		{"no body", 0, 0, false, false},
		{"silent within the grace", time.Second / 2, 0, true, false},
		{"silent past the grace", 2 * time.Second, 0, true, true},
		{"trickling", 11 * time.Second, 1000, true, true},
		{"keeping the pace", 11 * time.Second, 200 << 10, true, false},
		{"read, handler at work", 11 * time.Second, 0, false, false},
	} {
		var c limitedConn
		if tc.age > 0 {
			c.bodyStart.Store(int64(now - tc.age))
		}
		c.bodyReceived.Store(tc.received)
		c.bodyWaiting.Store(tc.waiting)
		if _, got := c.bodyBehind(now, time.Second, 16<<10); got != tc.behind {
			t.Errorf("%s: behind %v", tc.name, got)
		}
	}
}
