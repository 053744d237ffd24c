package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// The benchmarks here measure the resident memory of a server process, as an
// operator sees it: the test binary runs itself as a server with default settings
// (TestChildServer) and the benchmark, in the parent, loads it and reads its
// /proc/<pid>/status. Run them one at a time with -benchtime 1x, e.g.
//
//	go test -run - -bench 'RSS' -benchtime 1x ./server

// childServerEnv names the data directory of a child server.
const childServerEnv = "GARDEND_CHILD_SERVER_DATA"

// childServeLimitEnv, when set, gives the child the Go memory limit gardend serve
// sets by default.
const childServeLimitEnv = "GARDEND_CHILD_SERVE_LIMIT"

// TestChildServer is the child's side: it serves until its stdin closes. Without the
// environment variable it does nothing.
func TestChildServer(t *testing.T) {
	dir := os.Getenv(childServerEnv)
	if dir == "" {
		t.Skip("only as the child of an RSS benchmark")
	}
	if os.Getenv(childServeLimitEnv) != "" {
		defer server.SetMemoryLimit(server.DefaultMemoryLimit(store.DefaultArgon2, server.DefaultMaxHashing()))()
	}
	srv, err := newServer(t, server.Config{DataDir: dir, Addr: "127.0.0.1:0", Argon2: cheapArgon2, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	go func() {
		<-srv.Ready()
		fmt.Printf("listening on %s\n", srv.Addr())
	}()
	if err := srv.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// childServer starts the child and returns its pid and address.
func childServer(b *testing.B) (pid int, addr string) {
	b.Helper()
	return childServerIn(b, b.TempDir())
}

// childServerIn is childServer on the data directory dir.
func childServerIn(b *testing.B, dir string) (pid int, addr string) {
	b.Helper()
	// -test.bench turns the OpenAPI validation off, which keeps bodies (TestMain).
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildServer$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), childServerEnv+"="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			go io.Copy(io.Discard, stdout)
			return cmd.Process.Pid, a
		}
	}
	b.Fatal("the child server did not start")
	return 0, ""
}

// rss reads VmRSS and VmHWM (the peak) of pid in MiB.
func rss(b *testing.B, pid int) (now, peak float64) {
	b.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			now = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return now, peak
}

// openConns opens n connections to addr from sources loopback addresses
// (127.0.0.1, .2, …), runs start on each and gives the server settle to catch up.
func openConns(b *testing.B, addr string, n, sources int, start func(net.Conn) error, settle time.Duration) {
	b.Helper()
	conns := make([]net.Conn, 0, n)
	b.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := 0; i < n; i++ {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(i%sources/250), byte(1+i%sources%250))}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			b.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		start(c) // an error means the server closed it: that is what is measured
	}
	time.Sleep(settle)
}

func reportRSS(b *testing.B, pid int, base float64) {
	now, peak := rss(b, pid)
	b.ReportMetric(base, "MiB-rss-before")
	b.ReportMetric(now, "MiB-rss-after")
	b.ReportMetric(peak, "MiB-rss-peak")
	// The server's own count: connections the client still sees open may only wait
	// in the listen backlog.
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	b.ReportMetric(float64(len(fds)), "server-fds")
}

// connSources: 10,000 connections from 200 addresses are 50 per address, under the
// per-address cap, so the total cap is what holds.
var connSources = []int{1, 200}

// BenchmarkIdleConnectionsRSS: 10,000 keep-alive connections that made one request
// and stay idle.
func BenchmarkIdleConnectionsRSS(b *testing.B) {
	for _, sources := range connSources {
		b.Run(strconv.Itoa(sources)+"-addrs", func(b *testing.B) { idleConnections(b, sources) })
	}
}

func idleConnections(b *testing.B, sources int) {
	for b.Loop() {
		pid, addr := childServer(b)
		base, _ := rss(b, pid)
		openConns(b, addr, 10000, sources, func(c net.Conn) error {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				return err
			}
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				res.Body.Close()
			}
			c.SetDeadline(time.Time{})
			return err
		}, time.Second)
		reportRSS(b, pid, base)
	}
}

// BenchmarkUnfinishedHeadersRSS: 3,000 connections each send 60 KiB of header lines
// and never end the header block.
func BenchmarkUnfinishedHeadersRSS(b *testing.B) {
	var block bytes.Buffer
	block.WriteString("GET /healthz HTTP/1.1\r\nHost: x\r\n")
	for i := 0; block.Len() < 60<<10; i++ {
		fmt.Fprintf(&block, "X-Pad-%d: %s\r\n", i, strings.Repeat("a", 100))
	}
	for _, sources := range connSources {
		b.Run(strconv.Itoa(sources)+"-addrs", func(b *testing.B) {
			for b.Loop() {
				pid, addr := childServer(b)
				base, _ := rss(b, pid)
				openConns(b, addr, 3000, sources, func(c net.Conn) error {
					c.SetWriteDeadline(time.Now().Add(5 * time.Second))
					_, err := c.Write(block.Bytes())
					return err
				}, time.Second)
				reportRSS(b, pid, base)
			}
		})
	}
}

// BenchmarkUploadRSS: one upload of a 64 MiB body (the default --max-image), a
// 48 MiB image.
func BenchmarkUploadRSS(b *testing.B) {
	for b.Loop() {
		pid, addr := childServer(b)
		base := "http://" + addr
		client := &http.Client{}
		post := func(path, token, body string, out any) {
			req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if token != "" {
				req.Header.Set("Authorization", "Token "+token)
			}
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer res.Body.Close()
			data, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusCreated {
				b.Fatalf("POST %s: %s %s", path, res.Status, data)
			}
			if out != nil {
				*out.(*string) = string(data)
			}
		}
		var reg string
		post("/register", "", `{"username":"u","password":"pw-of-u-123","first_name":"F","last_name":"L"}`, &reg)
		token := reg[strings.Index(reg, `"token":"`)+9:]
		token = token[:strings.IndexByte(token, '"')]
		post("/companies", token, `{"name":"c"}`, nil)
		post("/companies/1/gardens", token, `{"name":"g"}`, nil)
		before, _ := rss(b, pid)
		body, length := uploadBody(b, 48<<20-4096, 1)
		req, _ := http.NewRequest("POST", base+"/companies/1/gardens/1/image", body)
		req.ContentLength = length
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Token "+token)
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			b.Fatalf("upload: %s", res.Status)
		}
		reportRSS(b, pid, before)
	}
}
