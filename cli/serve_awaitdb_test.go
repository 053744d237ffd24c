//go:build unix

package cli_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestServeWaitsForDatabase: a node started while PostgreSQL is down does not exit.
// It listens, answers /healthz 200, /readyz 503 naming the database check and any
// other request 503 with Retry-After, logs every failed attempt without the
// password (given in the URL's userinfo and in its query), and serves normally once
// the database is up.
func TestServeWaitsForDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gardend and runs it; skipped with -short")
	}
	pg := pgtest.StartServer(t)
	dsn := pg.NewDatabase(t)
	pg.Stop(t)
	const userinfoSecret, querySecret = "Userinfo-S3cret", "Query-S3cret"
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), userinfoSecret)
	u.RawQuery += "&password=" + querySecret // trust authentication: any password does

	bin := buildGardend(t)
	cmd := exec.Command(bin, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--log-format", "json",
		"--store", u.String())
	cmd.Env = envWithout("GARDEND_")
	logs := startLogged(t, cmd)

	// Waiting: the first failed attempt names the address it answers on.
	waiting := logs.waitFor(t, "database unavailable: waiting for it; /readyz answers 503 meanwhile")
	base := "http://" + waiting.Addr
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/readyz": http.StatusServiceUnavailable, "/user": http.StatusServiceUnavailable} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s while the database is down: %v\n%s", path, err, logs.text())
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s while the database is down: %d %s, want %d", path, res.StatusCode, body, want)
		}
		if want == http.StatusServiceUnavailable && res.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s: 503 without Retry-After", path)
		}
		if path == "/readyz" {
			var ready struct{ Failing []string }
			if json.Unmarshal(body, &ready) != nil || !slices.Equal(ready.Failing, []string{"database"}) {
				t.Errorf("/readyz does not name the failing database check: %s", body)
			}
		}
	}
	logs.waitFor(t, "database unavailable: waiting for it; /readyz answers 503 meanwhile") // a second attempt

	pg.Start(t)
	up := time.Now()
	logs.waitFor(t, "listening")
	t.Logf("serving %v after PostgreSQL accepted connections again", time.Since(up).Round(time.Millisecond))
	for path, want := range map[string]int{"/readyz": http.StatusOK, "/user": http.StatusUnauthorized} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s once the database is up: %d, want %d", path, res.StatusCode, want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	logs.waitExit(t)
	if err := cmd.Wait(); err != nil {
		t.Errorf("gardend after SIGTERM: %v", err)
	}
	for _, secret := range []string{userinfoSecret, querySecret} {
		if strings.Contains(logs.text(), secret) {
			t.Errorf("the log holds the password %q:\n%s", secret, logs.text())
		}
	}
}

// envWithout is the environment without the variables of prefix.
func envWithout(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}

// loggedProc is a running gardend whose JSON log lines are kept and announced.
type loggedProc struct {
	mu    sync.Mutex
	cond  *sync.Cond
	lines []logLine
	raw   []string
	eof   bool
	seen  int // lines handed out by waitFor
}

type logLine struct {
	Message string `json:"message"`
	Addr    string `json:"addr"`
}

func startLogged(t *testing.T, cmd *exec.Cmd) *loggedProc {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &loggedProc{}
	p.cond = sync.NewCond(&p.mu)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var l logLine
			_ = json.Unmarshal(sc.Bytes(), &l)
			p.mu.Lock()
			p.lines = append(p.lines, l)
			p.raw = append(p.raw, sc.Text())
			p.cond.Broadcast()
			p.mu.Unlock()
		}
		p.mu.Lock()
		p.eof = true
		p.cond.Broadcast()
		p.mu.Unlock()
	}()
	return p
}

// waitFor returns the next line (after those returned before) with message; the test
// fails if the process ends first, or after a minute.
func (p *loggedProc) waitFor(t *testing.T, message string) logLine {
	t.Helper()
	timer := time.AfterFunc(time.Minute, func() {
		p.mu.Lock()
		p.eof = true // give up
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for ; p.seen < len(p.lines); p.seen++ {
			if p.lines[p.seen].Message == message {
				p.seen++
				return p.lines[p.seen-1]
			}
		}
		if p.eof {
			t.Fatalf("gardend logged no %q (it ended, or a minute passed):\n%s", message, strings.Join(p.raw, "\n"))
		}
		p.cond.Wait()
	}
}

// waitExit waits for the end of the log (the process closed stderr).
func (p *loggedProc) waitExit(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.eof {
		p.cond.Wait()
	}
}

func (p *loggedProc) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.raw, "\n")
}
