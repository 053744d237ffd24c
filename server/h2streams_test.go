package server_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
)

// TestHTTP2StreamsBoundedInAll: the HTTP/2 streams in handlers are bounded in all,
// not only per client address. A download that gives its request slot back (a garden
// image) holds only its stream, and a stream that reads nothing holds its handler and
// buffers up to --write-timeout: 1000 connections of 16 stalled image downloads, from
// enough addresses to stay under --max-conns-per-addr, took gardend to 940 MiB (about
// 90 KiB a stream). Streams in handlers now count against --max-conns as well, as
// many as an HTTP/1.1 server would have connections; beyond that a stream is 503.
func TestHTTP2StreamsBoundedInAll(t *testing.T) {
	certFile, keyFile, pool := fieldSelfSigned(t, time.Now().Add(time.Hour))
	const maxConns = 8
	srv, _, _ := runServer(t, server.Config{DataDir: t.TempDir(), TLSCertFile: certFile, TLSKeyFile: keyFile,
		MaxConns: maxConns, MaxConnsPerAddr: 64})
	addr := srv.Addr()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	send := jsonSender(t, client, "https://"+addr)
	var reg struct{ Token string }
	code, data := send("POST", "/register", "", map[string]string{"username": "mallory", "password": "pw-of-mallory", "first_name": "M", "last_name": "B"})
	if err := json.Unmarshal(data, &reg); err != nil || code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, data)
	}
	// An answer of 60 KiB: more than a stream's buffer, so its handler waits in Write.
	if code, data := send("POST", "/user/widgets", reg.Token, map[string]string{"pad": strings.Repeat("x", 60<<10)}); code != http.StatusCreated {
		t.Fatalf("widgets: %d %s", code, data)
	}
	client.CloseIdleConnections()

	const conns, streams = 2, server.MaxStreamsPerConn
	var stalled []*h2Stalled
	for range conns {
		c := dialH2Stalled(t, addr, pool)
		for range streams {
			c.get(addr, "/user/widgets", reg.Token)
		}
		stalled = append(stalled, c)
	}
	by := map[string]int{}
	for _, c := range stalled {
		for s, n := range c.answered(streams) {
			by[s] += n
		}
	}
	if by["200"] > maxConns || by["200"]+by["503"] != conns*streams {
		t.Fatalf("%d streams of %d stalled connections: statuses %v; want at most %d in handlers (--max-conns), the rest 503",
			conns*streams, conns, by, maxConns)
	}
	t.Logf("%d stalled streams: statuses %v", conns*streams, by)
}
