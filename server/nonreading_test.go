package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/gardend/gardend/server"
)

// h2Stalled is an HTTP/2 connection that never lets the server send a byte of any
// response body: its initial stream window is 0 and it sends no WINDOW_UPDATE. Each
// handler that writes more than net/http's 4 KiB stream buffer waits in Write, up to
// --write-timeout.
type h2Stalled struct {
	t      *testing.T
	conn   *tls.Conn
	fr     *http2.Framer
	mu     sync.Mutex
	next   uint32
	status map[uint32]string // stream → the status its HEADERS said
	reset  map[uint32]http2.ErrCode
	got    chan struct{} // a HEADERS or RST_STREAM frame came
	// maxStreams is what the server's SETTINGS said (0 until they came).
	maxStreams uint32
}

func dialH2Stalled(t *testing.T, addr string, pool *x509.CertPool) *h2Stalled {
	t.Helper()
	return dialH2StalledFrom(t, addr, pool, net.IPv4(127, 0, 0, 1))
}

// dialH2StalledFrom is dialH2Stalled from the local address ip.
func dialH2StalledFrom(t *testing.T, addr string, pool *x509.CertPool, ip net.IP) *h2Stalled {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}, "tcp", addr,
		&tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if conn.ConnectionState().NegotiatedProtocol != "h2" {
		t.Fatalf("negotiated %q", conn.ConnectionState().NegotiatedProtocol)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c := &h2Stalled{t: t, conn: conn, fr: http2.NewFramer(conn, conn), next: 1,
		status: map[uint32]string{}, reset: map[uint32]http2.ErrCode{}, got: make(chan struct{}, 1)}
	if err := c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	go c.readLoop()
	return c
}

func (c *h2Stalled) readLoop() {
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.mu.Lock()
				if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
					c.maxStreams = v
				}
				_ = c.fr.WriteSettingsAck()
				c.mu.Unlock()
			}
		case *http2.RSTStreamFrame:
			c.mu.Lock()
			c.reset[f.StreamID] = f.ErrCode
			c.mu.Unlock()
			select {
			case c.got <- struct{}{}:
			default:
			}
		case *http2.HeadersFrame:
			fields, _ := dec.DecodeFull(f.HeaderBlockFragment())
			c.mu.Lock()
			for _, hf := range fields {
				if hf.Name == ":status" {
					c.status[f.StreamID] = hf.Value
				}
			}
			c.mu.Unlock()
			select {
			case c.got <- struct{}{}:
			default:
			}
		}
	}
}

// get opens a stream for GET path.
func (c *h2Stalled) get(authority, path, token string) {
	fields := [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", authority}, {":path", path}}
	if token != "" {
		fields = append(fields, [2]string{"authorization", "Token " + token})
	}
	c.open(fields, true)
}

// post opens a stream for POST path declaring a body of length bytes, and sends none.
func (c *h2Stalled) post(authority, path string, length int) {
	c.open([][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", authority}, {":path", path},
		{"content-type", "application/json"}, {"content-length", strconv.Itoa(length)}}, false)
}

func (c *h2Stalled) open(fields [][2]string, end bool) {
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range fields {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}) // into a bytes.Buffer
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: c.next, BlockFragment: block.Bytes(),
		EndStream: end, EndHeaders: true}); err != nil {
		c.t.Fatal(err)
	}
	c.next += 2
}

// answered waits until n streams have their response headers and counts them by
// status.
func (c *h2Stalled) answered(n int) map[string]int {
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		if len(c.status) >= n {
			by := map[string]int{}
			for _, s := range c.status {
				by[s]++
			}
			c.mu.Unlock()
			return by
		}
		c.mu.Unlock()
		select {
		case <-c.got:
		case <-deadline:
			c.t.Fatalf("fewer than %d streams answered", n)
		}
	}
}

// TestNonReadingClientsHoldNoSlots: a client that reads no response (an HTTP/2
// window of 0 here; a full TCP window over HTTP/1.1 does the same for larger
// answers) made each handler wait in Write with its request slot, up to
// --write-timeout: one connection of 8 streams for the OpenAPI document took all 8
// slots, and everyone else got 503 (the class of issue 15 item 1). Static answers
// served from memory take no slot now, and the slots an HTTP/2 connection holds
// count against its address's connections (--max-conns-per-addr), so one address
// holds at most its share.
func TestNonReadingClientsHoldNoSlots(t *testing.T) {
	certFile, keyFile, pool := fieldSelfSigned(t, time.Now().Add(time.Hour))
	srv, _, _ := runServer(t, server.Config{DataDir: t.TempDir(), TLSCertFile: certFile, TLSKeyFile: keyFile,
		MaxConcurrent: 8, MaxConnsPerAddr: 4})
	addr := srv.Addr()
	base := "https://" + addr

	// Everyone else comes from 127.0.0.2, the stalled client from 127.0.0.1.
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	others := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, DialContext: dialer.DialContext}}
	send := jsonSender(t, others, base)
	var reg struct{ Token string }
	code, data := send("POST", "/register", "", map[string]string{"username": "mallory", "password": "pw-of-mallory", "first_name": "M", "last_name": "B"})
	if err := json.Unmarshal(data, &reg); err != nil || code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, data)
	}
	// Mallory's own data makes an answer of 60 KiB.
	if code, data := send("POST", "/user/widgets", reg.Token, map[string]string{"pad": strings.Repeat("x", 60<<10)}); code != http.StatusCreated {
		t.Fatalf("widgets: %d %s", code, data)
	}

	stalled := dialH2Stalled(t, addr, pool)
	const streams = 8
	for range streams {
		stalled.get(addr, "/openapi.yaml", "")
		stalled.get(addr, "/user/widgets", reg.Token)
	}
	statuses := stalled.answered(2 * streams)

	var ok, total int
	for range 5 {
		for _, rq := range []struct {
			method, path string
			body         any
			want         int
		}{
			{"POST", "/login", map[string]string{"username": "mallory", "password": "pw-of-mallory"}, http.StatusOK},
			{"GET", "/user", nil, http.StatusOK},
			{"GET", "/companies", nil, http.StatusOK},
		} {
			total++
			if code, data := send(rq.method, rq.path, reg.Token, rq.body); code == rq.want {
				ok++
			} else {
				t.Errorf("%s %s beside the stalled streams: %d %s", rq.method, rq.path, code, data)
			}
		}
	}
	t.Logf("%d streams of a connection reading nothing (statuses %v); others' requests: %d of %d answered",
		2*streams, statuses, ok, total)
}

// TestHTTP2StreamsPerConnection: an HTTP/2 connection may have MaxStreamsPerConn
// requests open at once, not net/http's 250: each waiting stream costs about 15 KiB
// that no other cap bounds (the class of issue 15 item 1: 1024 connections of 250
// silent streams each would pin 3.6 GiB).
func TestHTTP2StreamsPerConnection(t *testing.T) {
	certFile, keyFile, pool := fieldSelfSigned(t, time.Now().Add(time.Hour))
	srv, _, _ := runServer(t, server.Config{DataDir: t.TempDir(), TLSCertFile: certFile, TLSKeyFile: keyFile, BodyTimeout: time.Minute})
	c := dialH2Stalled(t, srv.Addr(), pool)
	const extra = 4
	for range server.MaxStreamsPerConn + extra {
		c.post(srv.Addr(), "/login", 1000)
	}
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		maxStreams, refused := c.maxStreams, len(c.reset)
		c.mu.Unlock()
		if refused >= extra {
			if maxStreams != server.MaxStreamsPerConn || refused != extra {
				t.Fatalf("SETTINGS_MAX_CONCURRENT_STREAMS %d, %d streams refused", maxStreams, refused)
			}
			return
		}
		select {
		case <-c.got:
		case <-deadline:
			t.Fatalf("%d of %d silent streams refused (SETTINGS_MAX_CONCURRENT_STREAMS %d)",
				refused, server.MaxStreamsPerConn+extra, maxStreams)
		}
	}
}

// jsonSender sends JSON requests to base through client, with a token when one is
// given, and answers the status and body.
func jsonSender(t *testing.T, client *http.Client, base string) func(method, path, token string, body any) (int, []byte) {
	return func(method, path, token string, body any) (int, []byte) {
		t.Helper()
		doc, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(context.Background(), method, base+path, bytes.NewReader(doc))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Token "+token)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Body.Close() }()
		data, _ := io.ReadAll(res.Body)
		return res.StatusCode, data
	}
}
