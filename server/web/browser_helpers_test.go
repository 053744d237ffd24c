package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// The browser tests drive the web app in a real headless Chromium (Debian's
// chromium) against a demo server. Without a browser they skip, except under CI
// (GARDEND_CI set), where a missing browser is a failure.

var cheapArgon2 = store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}

// chromiumPath finds the browser: $GARDEND_CHROMIUM, else the usual names.
func chromiumPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("GARDEND_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("GARDEND_CI") != "" {
		t.Fatal("no chromium found, and GARDEND_CI is set: .ci/run installs Debian's chromium; set GARDEND_CHROMIUM to another path")
	}
	t.Skip("no chromium found (install Debian's chromium or set GARDEND_CHROMIUM); the browser tests are skipped")
	return ""
}

// demoServer runs gardend with demo data on a loopback port until the test ends.
type demoServer struct {
	srv   *server.Server
	base  string
	token string
}

func startDemo(t testing.TB, latency time.Duration, configure ...func(*server.Config)) *demoServer {
	t.Helper()
	cfg := server.Config{
		DataDir: t.TempDir(), Addr: "127.0.0.1:0", Demo: true, DemoLatency: latency,
		Argon2: cheapArgon2, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	}
	for _, f := range configure {
		f(&cfg)
	}
	st, err := bolt.Open(filepath.Join(cfg.DataDir, bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.StoreCreated = st, true
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		srv.Close()
	})
	d := &demoServer{srv: srv, base: "http://" + srv.Addr()}
	var login struct{ Token string }
	d.api(t, "POST", "/login", map[string]string{"username": server.DemoUsername, "password": server.DemoPassword}, 200, &login)
	d.token = login.Token
	return d
}

// api calls the API as the demo user (or anonymously for /login and /register).
func (d *demoServer) api(t testing.TB, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = strings.NewReader(string(data))
	}
	req, _ := http.NewRequest(method, d.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if d.token != "" {
		req.Header.Set("Authorization", "Token "+d.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, res.StatusCode, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}

// browser is one headless Chromium for a test; pages are its tabs.
type browser struct {
	t     testing.TB
	root  context.Context // the browser's first tab; pages are tabs beside it
	shots string          // directory for failure screenshots, made on first use
}

func newBrowser(t testing.TB) *browser {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("mute-audio", true),
		// WebGL without a GPU: SwiftShader, which Chromium no longer picks by itself.
		chromedp.Flag("enable-unsafe-swiftshader", true),
		chromedp.Flag("use-angle", "swiftshader"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1024, 600),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	root, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(root); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	return &browser{t: t, root: root}
}

// page is one tab, watching for console errors, uncaught exceptions and requests to
// any host but the server's.
type page struct {
	t      testing.TB
	b      *browser
	ctx    context.Context
	base   string
	host   string
	mu     sync.Mutex
	errors []string
	urls   []string
	// Bytes received per request (encoded, as on the wire), by URL.
	reqURL map[network.RequestID]string
	bytes  map[string]float64
	// URLs of the requests the page stopped (an AbortController) before their end.
	canceled []string
}

func (b *browser) page(t testing.TB, base string, width, height int64) *page {
	t.Helper()
	u, _ := url.Parse(base)
	p := &page{t: t, b: b, base: base, host: u.Host}
	ctx, cancel := chromedp.NewContext(b.root, chromedp.WithListener(p.observe))
	t.Cleanup(cancel)
	p.ctx = ctx
	// The first Run starts the tab; it must not carry a timeout (it would end the tab).
	err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, log.Enable, cdp.Empty{})
			return err
		}),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{})
			return err
		}),
		chromedp.EmulateViewport(width, height),
	)
	if err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	return p
}

// observe records console errors, exceptions, error log entries and every request.
func (p *page) observe(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p.errors = append(p.errors, "console."+string(e.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		p.errors = append(p.errors, "exception: "+msg)
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			p.errors = append(p.errors, "log ("+string(e.Entry.Source)+"): "+e.Entry.Text+" "+e.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		p.urls = append(p.urls, e.Request.URL)
		if p.reqURL == nil {
			p.reqURL, p.bytes = map[network.RequestID]string{}, map[string]float64{}
		}
		p.reqURL[e.RequestID] = e.Request.URL
	case *network.EventLoadingFinished:
		if u, ok := p.reqURL[e.RequestID]; ok {
			p.bytes[u] += e.EncodedDataLength
		}
	case *network.EventLoadingFailed:
		if u, ok := p.reqURL[e.RequestID]; ok && e.Canceled {
			p.canceled = append(p.canceled, u)
		}
	}
}

// do runs actions with a time limit; a failure is fatal with a screenshot.
func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) into out.
func (p *page) eval(expr string, out any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.fatalf("evaluate %s: %v", expr, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			p.fatalf("evaluate %s: %v (%s)", expr, err, raw)
		}
	}
}

// waitFor polls a JavaScript condition until it holds.
func (p *page) waitFor(what, cond string) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		p.eval("!!("+cond+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			p.fatalf("timed out waiting for %s (%s)", what, cond)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// fatalf fails the test with a screenshot of the page in a temporary directory that
// the message names.
func (p *page) fatalf(format string, args ...any) {
	p.t.Helper()
	dir := p.screenshot("failure")
	p.t.Fatalf(format+"\n(page screenshots in %s)", append(args, dir)...)
}

func (p *page) errorf(format string, args ...any) {
	p.t.Helper()
	dir := p.screenshot("error")
	p.t.Errorf(format+"\n(page screenshots in %s)", append(args, dir)...)
}

func (p *page) screenshot(kind string) string {
	if p.b.shots == "" {
		dir, err := os.MkdirTemp("", "gardend-browser-")
		if err != nil {
			return "(no directory: " + err.Error() + ")"
		}
		p.b.shots = dir
	}
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	name := filepath.Join(p.b.shots, fmt.Sprintf("%s-%s-%d.png", sanitize(p.t.Name()), kind, time.Now().UnixNano()))
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		os.WriteFile(name, png, 0o644)
	}
	return p.b.shots
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' {
			return '_'
		}
		return r
	}, s)
}

// checkClean fails on console errors so far and on requests to other hosts. A
// failed request the test provoked on purpose (a wrong password) is logged by the
// browser as an error too: allow names the paths whose failures are expected.
func (p *page) checkClean(allow ...string) {
	p.t.Helper()
	p.mu.Lock()
	errs, urls := append([]string(nil), p.errors...), append([]string(nil), p.urls...)
	p.errors = nil
	p.mu.Unlock()
next:
	for _, e := range errs {
		for _, a := range allow {
			if strings.HasPrefix(e, "log (network): ") && strings.HasSuffix(e, p.base+a) {
				continue next
			}
		}
		p.errorf("browser console: %s", e)
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "blob" && u.Scheme != "data" && u.Host != p.host) {
			p.errorf("request to another host: %s", raw)
		}
	}
}

// received sums the bytes received for the URLs that match, and resets the count.
func (p *page) received(match func(url string) bool) (total float64, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for u, b := range p.bytes {
		if match(u) {
			total += b
			n++
		}
	}
	clear(p.bytes)
	return total, n
}

// requested lists the URLs the page asked for so far.
func (p *page) requested() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.urls...)
}

// login opens the app and logs in through its form.
func (p *page) login(username, password string) {
	p.t.Helper()
	p.do("open the app", chromedp.Navigate(p.base+"/"))
	p.waitFor("the login form", `document.querySelector('input[name=username]')`)
	p.do("log in",
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), username),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
		chromedp.Click(chromedp.CSS(`form button[type=submit]`)),
	)
	p.waitFor("the home page", `document.querySelector('h1') && document.querySelector('h1').textContent === 'Your gardens'`)
}

// open navigates within the app.
func (p *page) open(hash string) {
	p.t.Helper()
	p.eval(`location.hash = `+jsString(hash), nil)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
