package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
)

const fieldRegisterBody = `{"username":"carol","password":"s3cret-garden","first_name":"Carol","last_name":"Gardener"}`

func TestRegistrationMode(t *testing.T) {
	t.Run("open by default", func(t *testing.T) {
		h := fieldNewServer(t, nil, nil).Handler()
		fieldStatus(t, fieldDo(t, h, fieldRequest{method: "POST", path: "/register", body: fieldRegisterBody}), http.StatusCreated)
	})
	t.Run("closed", func(t *testing.T) {
		srv := fieldNewServer(t, nil, func(c *server.Config) { c.Registration = server.RegistrationClosed })
		h := srv.Handler()
		p := fieldProblem(t, fieldDo(t, h, fieldRequest{method: "POST", path: "/register", body: fieldRegisterBody}), http.StatusForbidden)
		if p["detail"] != "registration is closed; ask an administrator" {
			t.Fatalf("detail %q", p["detail"])
		}
		// Closed before the body is even looked at.
		fieldProblem(t, fieldDo(t, h, fieldRequest{method: "POST", path: "/register", body: "{"}), http.StatusForbidden)
		if _, err := srv.Store().UserByUsername("carol"); err == nil {
			t.Fatal("closed registration created the user")
		}
		// Accounts made by an administrator still log in.
		fieldCreateUser(t, srv, "carol", fieldPassword)
		fieldStatus(t, fieldLogin(t, h, "carol", fieldPassword, ""), http.StatusOK)
	})
	t.Run("unknown mode", func(t *testing.T) {
		_, err := newServer(t, server.Config{DataDir: t.TempDir(), Registration: "invite-only"})
		if err == nil || !strings.Contains(err.Error(), "use open or closed") {
			t.Fatalf("error %v, want one naming the modes", err)
		}
	})
}

func TestSecurityHeaders(t *testing.T) {
	srv := fieldNewServer(t, nil, nil)
	fieldCreateUser(t, srv, "alice", fieldPassword)
	h := srv.Handler()

	want := map[string]string{
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
		"X-Frame-Options":        "DENY",
	}
	login := fieldLogin(t, h, "alice", fieldPassword, "")
	fieldStatus(t, login, http.StatusOK)
	var tok struct{ Token string }
	json.Unmarshal(login.Body.Bytes(), &tok)
	auth := map[string]string{"Authorization": "Token " + tok.Token}

	for _, tc := range []struct {
		name   string
		rec    *httptest.ResponseRecorder
		status int
		// noStore: the body is private (a token or the user's data).
		noStore bool
	}{
		{"public", fieldDo(t, h, fieldRequest{method: "GET", path: "/healthz"}), 200, false},
		{"not found", fieldDo(t, h, fieldRequest{method: "GET", path: "/nope"}), 404, false},
		{"login", login, 200, true},
		{"register", fieldDo(t, h, fieldRequest{method: "POST", path: "/register", body: fieldRegisterBody}), 201, true},
		{"authenticated", fieldDo(t, h, fieldRequest{method: "GET", path: "/user", header: auth}), 200, true},
		{"authenticated error", fieldDo(t, h, fieldRequest{method: "PUT", path: "/user", body: "{}", header: auth}), 400, true},
		{"unauthenticated", fieldDo(t, h, fieldRequest{method: "GET", path: "/user"}), 401, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fieldStatus(t, tc.rec, tc.status)
			for k, v := range want {
				if got := tc.rec.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if got := tc.rec.Header().Get("Cache-Control"); tc.noStore != (got == "no-store") {
				t.Errorf("Cache-Control %q (want no-store: %v)", got, tc.noStore)
			}
		})
	}
}

// blockingBody holds a request inside its handler (reading the body) until released.
type blockingBody struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newBlockingBody() *blockingBody {
	return &blockingBody{entered: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockingBody) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return 0, io.EOF
}

// TestSlowBodiesHoldNoSlot: requests whose bodies never arrive wait outside the
// request slots (before this fix two of them took both and everyone else got 503).
// The cap itself is TestRequestSlotCap's.
func TestSlowBodiesHoldNoSlot(t *testing.T) {
	h := fieldNewServer(t, nil, func(c *server.Config) { c.MaxConcurrent = 2 }).Handler()

	var wg sync.WaitGroup
	bodies := []*blockingBody{newBlockingBody(), newBlockingBody(), newBlockingBody()}
	held := make([]*httptest.ResponseRecorder, len(bodies))
	for i, b := range bodies {
		req := httptest.NewRequest("POST", "/login", b)
		req.Header.Set("Content-Type", "application/json")
		held[i] = httptest.NewRecorder()
		wg.Go(func() { h.ServeHTTP(held[i], req) })
		<-b.entered
	}

	fieldStatus(t, fieldDo(t, h, fieldRequest{method: "GET", path: "/openapi.yaml"}), http.StatusOK)
	fieldStatus(t, fieldDo(t, h, fieldRequest{method: "GET", path: "/readyz"}), http.StatusOK)

	for _, b := range bodies {
		close(b.release)
	}
	wg.Wait()
	for _, r := range held {
		fieldProblem(t, r, http.StatusBadRequest) // empty body
	}
}

// fieldSelfSigned writes a certificate for 127.0.0.1 and its key as PEM files.
func fieldSelfSigned(t *testing.T, notAfter time.Time) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "gardend test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// fieldRun runs srv until the test ends and returns its address.
func fieldRun(t testing.TB, srv *server.Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	return srv.Addr()
}

func TestTLS(t *testing.T) {
	certFile, keyFile, pool := fieldSelfSigned(t, time.Now().Add(time.Hour))
	srv := fieldNewServer(t, nil, func(c *server.Config) {
		c.Addr = "127.0.0.1:0"
		c.TLSCertFile, c.TLSKeyFile = certFile, keyFile
	})
	addr := fieldRun(t, srv)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true,
	}}
	resp, err := client.Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "ok") {
		t.Fatalf("%s %s", resp.Status, body)
	}
	if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 || resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("TLS state %+v, headers %v", resp.TLS, resp.Header)
	}
	t.Logf("negotiated %s over %s", tls.VersionName(resp.TLS.Version), resp.Proto)

	// TLS 1.1 and older are refused.
	old := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11},
	}}
	if resp, err := old.Get("https://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("a TLS 1.1 client was served")
	}
	// Plain HTTP on the TLS port gets net/http's 400, not the API.
	resp, err = http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("plain HTTP to the TLS port: %s", resp.Status)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	certFile, keyFile, _ := fieldSelfSigned(t, time.Now().Add(time.Hour))
	otherCert, _, _ := fieldSelfSigned(t, time.Now().Add(time.Hour))
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	os.WriteFile(garbage, []byte("not a PEM file"), 0o600)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		name, cert, key, want string
	}{
		{"cert only", certFile, "", "give both or neither"},
		{"key only", "", keyFile, "give both or neither"},
		{"missing file", missing, keyFile, missing},
		{"not PEM", garbage, keyFile, garbage},
		{"mismatched pair", otherCert, keyFile, "private key does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newServer(t, server.Config{DataDir: t.TempDir(), TLSCertFile: tc.cert, TLSKeyFile: tc.key})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestRunHTTPTimeoutsCutSlowClients(t *testing.T) {
	srv := fieldNewServer(t, nil, func(c *server.Config) {
		c.Addr = "127.0.0.1:0"
		c.ReadHeaderTimeout = 200 * time.Millisecond
	})
	addr := fieldRun(t, srv)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Half a request line, then nothing: the server must hang up on its own.
	io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a header-less connection open past ReadHeaderTimeout")
	}
}
