package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
)

// slowPost opens a connection and sends a POST's headers with Expect: 100-continue
// and the first byte of its body. It returns once net/http has answered "100
// Continue", which it does when the handler chain starts reading the body: from then
// on the request is waiting on this client.
func slowPost(t *testing.T, addr, path string, length int) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", path, length)
	br := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("waiting for 100 Continue: %q, %v", line, err)
	}
	br.ReadString('\n') // the empty line after it
	conn.Write([]byte("{"))
	return conn, br
}

// TestSlowWritersHoldNoSlots is the attack of issue 8 item 2 in small: more clients
// than request slots send headers and then a body one byte at a time. They must not
// take the slots (other requests and /readyz go on), and each is cut off with 408 once
// it falls behind the body pace, long before --read-timeout.
func TestSlowWritersHoldNoSlots(t *testing.T) {
	const slots, writers = 4, 12
	dir := t.TempDir()
	_, base, _ := runServer(t, server.Config{DataDir: dir, MaxConcurrent: slots, AdminSocket: true,
		BodyTimeout: 300 * time.Millisecond, ReadTimeout: time.Minute})
	addr := strings.TrimPrefix(base, "http://")

	type slow struct {
		conn net.Conn
		br   *bufio.Reader
	}
	var clients []slow
	for range writers {
		conn, br := slowPost(t, addr, "/login", 64)
		clients = append(clients, slow{conn, br})
	}
	start := time.Now()

	// Everyone else is served while the slow bodies are pending.
	for _, path := range []string{"/openapi.yaml", "/readyz", "/healthz"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s with %d slow writers: %d %s", path, writers, res.StatusCode, body)
		}
	}
	if body := adminReadyz(t, dir); !bytes.Contains(body, []byte(`"0 of 4 request slots in use"`)) {
		t.Errorf("readyz: %s", body)
	}

	// Trickling a byte every 100 ms is too slow: 408 after the 300 ms allowance.
	for _, c := range clients {
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	}
	for i, c := range clients {
		go func() {
			for range 50 {
				time.Sleep(100 * time.Millisecond)
				if _, err := c.conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		res, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatalf("slow writer %d: %v", i, err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("slow writer %d: %s, want 408", i, res.Status)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the slow writers were cut off after %v", d)
	} else {
		t.Logf("%d slow writers cut off with 408 within %v", writers, d.Round(time.Millisecond))
	}
}

// TestSlowButSteadyBodyPasses: a body that takes longer than BodyTimeout but keeps
// the pace (here 40 KiB/s against a floor of 16 KiB/s) is read in full.
func TestSlowButSteadyBodyPasses(t *testing.T) {
	srv, base, _ := runServer(t, server.Config{DataDir: t.TempDir(), BodyTimeout: 300 * time.Millisecond})
	ts := &testServer{tb: t, srv: srv}
	token := ts.register("steady")
	doc, _ := json.Marshal(map[string]string{"notes": strings.Repeat("n", 40<<10)})

	pr, pw := io.Pipe()
	go func() {
		for p := doc; len(p) > 0; {
			k := min(len(p), 4<<10)
			pw.Write(p[:k])
			p = p[k:]
			time.Sleep(100 * time.Millisecond)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", base+"/user/widgets", pr)
	req.ContentLength = int64(len(doc))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Token "+token)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("steady body over %v: %s %s", time.Since(start), res.Status, body)
	}
	t.Logf("a %d-byte body over %v was accepted", len(doc), time.Since(start).Round(time.Millisecond))
}

// TestRunCapsConnections: Run serves through the connection limiter. Two requests
// waiting on their bodies fill one address's cap of two; a third connection from it
// is closed unanswered, and gets in once one of them is done. The admin socket's
// /readyz counts them. (Their bodies keep --body-min-rate, 1 B/s here, with the
// 64 KiB they sent: else they would give way to the third at the cap.)
func TestRunCapsConnections(t *testing.T) {
	dir := t.TempDir()
	_, base, _ := runServer(t, server.Config{DataDir: dir, MaxConns: 3, MaxConnsPerAddr: 2, AdminSocket: true, BodyMinRate: 1})
	addr := strings.TrimPrefix(base, "http://")
	first, _ := slowPost(t, addr, "/login", 1<<20)
	second, _ := slowPost(t, addr, "/login", 1<<20)
	for _, c := range []net.Conn{first, second} {
		if _, err := io.WriteString(c, strings.Repeat(" ", 64<<10)); err != nil {
			t.Fatal(err)
		}
	}

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if res, err := client.Get(base + "/healthz"); err == nil {
		res.Body.Close()
		t.Fatalf("a third connection from one address was served: %s", res.Status)
	}
	first.Close()
	// Once in, this connection stays open (keep-alive) beside the second slow one.
	probe := &http.Client{Transport: &http.Transport{}}
	defer probe.CloseIdleConnections()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		res, err := probe.Get(base + "/healthz")
		if err == nil {
			_ = res.Body.Close()
			if body := adminReadyz(t, dir); !bytes.Contains(body, []byte(`"2 of 3 connections open"`)) {
				t.Fatalf("readyz: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection after one was freed: %v", err)
		}
	}
}

// adminReadyz is the admin socket's /readyz answer (with every check's figures) of
// the server on dir.
func adminReadyz(t *testing.T, dir string) []byte {
	t.Helper()
	res, err := unixClient(server.AdminSocketPath(dir)).Get("http://gardend/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(res.Body)
	return body
}
