package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
)

// silentBodyLadder is the declared lengths of issue 15 item 1's attack: as many
// bodies of 1 MiB, 512 KiB … 1 B as the default body budget (64 MiB) holds when each
// declared length is charged up front (plus the byte that sees the end), so that
// nothing, not even a login, fits beside them.
func silentBodyLadder() []int64 {
	var sizes []int64
	left := int64(server.DefaultBodyBufferBytes)
	for size := int64(server.DefaultMaxBodyBytes); size >= 1; size /= 2 {
		for left >= size+1 {
			sizes = append(sizes, size)
			left -= size + 1
		}
	}
	return sizes
}

// silentBodies starts one POST /login per declared length through client, each with
// Expect: 100-continue and a body that never sends a byte, and returns once the
// server has answered "100 Continue" to every one (it does when the handler starts
// reading the body: from then on each request waits on its client), with the number
// of connections they took. Cancel ctx to end them.
func silentBodies(t *testing.T, ctx context.Context, client *http.Client, base string, sizes []int64) (conns int) {
	t.Helper()
	var (
		waiting sync.WaitGroup
		mu      sync.Mutex
		used    = map[string]bool{}
	)
	gotConn := func(info httptrace.GotConnInfo) {
		mu.Lock()
		used[info.Conn.LocalAddr().String()] = true
		mu.Unlock()
	}
	failed := make(chan error, len(sizes))
	for _, size := range sizes {
		waiting.Add(1)
		var once sync.Once
		continued := func() { once.Do(waiting.Done) }
		body, _ := io.Pipe() // never written: the body never arrives
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{Got100Continue: continued, GotConn: gotConn}),
			"POST", base+"/login", body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Expect", "100-continue")
		go func() {
			res, err := client.Do(req)
			if err == nil {
				// Answered before the body came: the server gave up on it at once.
				_ = res.Body.Close()
				err = fmt.Errorf("a silent body of %d bytes was answered %s", size, res.Status)
			}
			if ctx.Err() == nil {
				failed <- err
			}
			continued()
		}()
	}
	done := make(chan struct{})
	go func() { waiting.Wait(); close(done) }()
	select {
	case <-done:
	case err := <-failed:
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return len(used)
}

// TestSilentBodiesHoldNoBudget is issue 15 item 1: requests that declare bodies and
// send nothing held the body budget with their declared lengths (about 100 of them
// made every other client's login, registration and write answer 503), over HTTP/1.1
// with a connection each and over HTTP/2 with one TLS connection (now one per
// MaxStreamsPerConn of them: a connection has no more streams). A body is charged
// with what arrives, so they hold nothing, and everyone else's requests succeed.
func TestSilentBodiesHoldNoBudget(t *testing.T) {
	sizes := silentBodyLadder()
	certFile, keyFile, pool := fieldSelfSigned(t, time.Now().Add(time.Hour))
	for _, tc := range []struct {
		proto string
		tls   bool
	}{{"HTTP/1.1", false}, {"HTTP/2.0", true}} {
		t.Run(tc.proto, func(t *testing.T) {
			cfg := server.Config{DataDir: t.TempDir(), BodyTimeout: time.Minute, RegisterLimit: 100}
			scheme, perClient := "http", len(sizes)
			if tc.tls {
				cfg.TLSCertFile, cfg.TLSKeyFile = certFile, keyFile
				scheme, perClient = "https", server.MaxStreamsPerConn
			}
			srv, _, _ := runServer(t, cfg)
			base := scheme + "://" + srv.Addr()
			// Attacking clients, each with one HTTP/2 connection (made first: its streams
			// then share it), or with a connection per request over HTTP/1.1.
			attacker := func() *http.Client {
				transport := &http.Transport{ExpectContinueTimeout: time.Minute}
				if tc.tls {
					transport.TLSClientConfig = &tls.Config{RootCAs: pool}
					transport.ForceAttemptHTTP2 = true
				}
				t.Cleanup(transport.CloseIdleConnections)
				c := &http.Client{Transport: transport}
				if res, err := c.Get(base + "/healthz"); err != nil || res.Proto != tc.proto {
					t.Fatalf("first request: %v %v", res, err)
				} else {
					_ = res.Body.Close()
				}
				return c
			}

			others := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
			do := func(method, path, token string, body any) int {
				doc, _ := json.Marshal(body)
				req, _ := http.NewRequest(method, base+path, bytes.NewReader(doc))
				req.Header.Set("Content-Type", "application/json")
				if token != "" {
					req.Header.Set("Authorization", "Token "+token)
				}
				res, err := others.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", method, path, err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				return res.StatusCode
			}
			account := map[string]string{"username": "olive", "password": "olive-password", "first_name": "O", "last_name": "G"}
			if code := do("POST", "/register", "", account); code != http.StatusCreated {
				t.Fatalf("register: %d", code)
			}
			token := loginToken(t, others, base, "olive", "olive-password")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			conns, clients := 0, 0
			for part := range slices.Chunk(sizes, perClient) {
				conns += silentBodies(t, ctx, attacker(), base, part)
				clients++
			}
			if tc.tls && conns != clients {
				t.Fatalf("the HTTP/2 attack took %d connections, want %d", conns, clients)
			}

			var ok, total atomic.Int32
			try := func(what string, want, code int) {
				total.Add(1)
				if code == want {
					ok.Add(1)
				} else {
					t.Errorf("%s during the attack: %d, want %d", what, code, want)
				}
			}
			for i := range 10 {
				try("login", http.StatusOK, do("POST", "/login", "", map[string]string{"username": "olive", "password": "olive-password"}))
				try("register", http.StatusCreated, do("POST", "/register", "", map[string]string{
					"username": fmt.Sprintf("user%d", i), "password": "a-good-password", "first_name": "U", "last_name": "S"}))
				try("widget", http.StatusCreated, do("POST", "/user/widgets", token, map[string]string{"notes": "n"}))
				try("user", http.StatusOK, do("PUT", "/user", token, map[string]string{"first_name": "Olivia"}))
			}
			t.Logf("%d requests on %d connections declaring %d KiB in all and sending none of it; others' logins, registrations and writes: %d of %d succeeded",
				len(sizes), conns, sum(sizes)>>10, ok.Load(), total.Load())
		})
	}
}

func sum(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

// loginToken logs in through client and returns the token.
func loginToken(t *testing.T, client *http.Client, base, username, password string) string {
	t.Helper()
	doc, _ := json.Marshal(map[string]string{"username": username, "password": password})
	res, err := client.Post(base+"/login", "application/json", bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var tok struct{ Token string }
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("login: %s, %v", res.Status, err)
	}
	return tok.Token
}

// TestSilentUploadsHoldNoSlot: image uploads that declare a body and send nothing
// took every upload slot for --body-timeout, again and again (the class of issue 15
// item 1); they now take a slot once their body begins, and others upload meanwhile.
func TestSilentUploadsHoldNoSlot(t *testing.T) {
	srv, base, _ := runServer(t, server.Config{DataDir: t.TempDir(), MaxUploads: 2, BodyTimeout: time.Minute})
	ts := &testServer{tb: t, srv: srv}
	owner := ts.register("owner")
	c := ts.createCompany(owner, "c")
	path := gardenPath(c.ID, ts.createGarden(owner, c.ID, "g").ID) + "/image"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	attacker := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	var waiting sync.WaitGroup
	for range 4 {
		waiting.Add(1)
		var once sync.Once
		body, _ := io.Pipe() // never written
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			Got100Continue: func() { once.Do(waiting.Done) }}), "POST", base+path, body)
		req.ContentLength = 1 << 20
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Token "+owner)
		req.Header.Set("Expect", "100-continue")
		go func() {
			if res, err := attacker.Do(req); err == nil {
				_ = res.Body.Close()
				t.Errorf("a silent upload was answered %s", res.Status)
				once.Do(waiting.Done)
			}
		}()
	}
	waiting.Wait() // each is being read: it waits on its client

	png := fixture(t, "garden.png")
	doc, _ := json.Marshal(map[string]any{"image": dataURL(png), "coordinates": cornersJSON})
	for i := range 3 {
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(doc))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Token "+owner)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("upload %d beside 4 silent ones: %s %s", i, res.Status, body)
		}
	}
}
