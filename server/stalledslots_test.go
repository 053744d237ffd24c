package server_test

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
)

// TestStalledAnswersGiveTheirSlots: clients from several addresses that read none of
// their answers (HTTP/2 windows of 0), each within its address's share of
// connections, together had a handler waiting in Write in every request slot, and
// everyone else got 503 for --write-timeout (2 minutes), renewably (issue 15, D2). A
// write that waits on its client now gives the slot back after a second, so the
// others are served within seconds; the stalled answers still get their headers.
func TestStalledAnswersGiveTheirSlots(t *testing.T) {
	certFile, keyFile, pool := fieldSelfSigned(t, time.Now().Add(time.Hour))
	srv, _, _ := runServer(t, server.Config{DataDir: t.TempDir(), TLSCertFile: certFile, TLSKeyFile: keyFile,
		MaxConcurrent: 4, MaxConnsPerAddr: 4})
	addr := srv.Addr()
	base := "https://" + addr

	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	others := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, DialContext: dialer.DialContext}}
	send := jsonSender(t, others, base)
	var reg struct{ Token string }
	code, data := send("POST", "/register", "", map[string]string{"username": "mallory", "password": "pw-of-mallory", "first_name": "M", "last_name": "B"})
	if err := json.Unmarshal(data, &reg); err != nil || code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, data)
	}
	// An answer of 60 KiB: far beyond what a stream sends with a window of 0.
	if code, data := send("POST", "/user/widgets", reg.Token, map[string]string{"pad": strings.Repeat("x", 60<<10)}); code != http.StatusCreated {
		t.Fatalf("widgets: %d %s", code, data)
	}

	// Two addresses, two stalled answers each: every slot has a handler in Write.
	for _, ip := range []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 3)} {
		c := dialH2StalledFrom(t, addr, pool, ip)
		c.get(addr, "/user/widgets", reg.Token)
		c.get(addr, "/user/widgets", reg.Token)
		if got := c.answered(2); got["200"] != 2 {
			t.Fatalf("stalled streams from %v: %v", ip, got)
		}
	}

	deadline := time.Now().Add(8 * time.Second)
	var codes []int
	for {
		code, data := send("GET", "/user", reg.Token, nil)
		if code == http.StatusOK {
			break
		}
		codes = append(codes, code)
		if time.Now().After(deadline) {
			t.Fatalf("GET /user beside four stalled answers: still %d %s after %d tries %v", code, data, len(codes), codes)
		}
		time.Sleep(100 * time.Millisecond) // a client retrying; not ordering anything
	}
	// Once the slots went back, everything else is served at once.
	for _, path := range []string{"/user", "/companies", "/gardens"} {
		if code, data := send("GET", path, reg.Token, nil); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, data)
		}
	}
	t.Logf("others served after %d refusals %v", len(codes), codes)
}
