package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/cli"
	"github.com/gardend/gardend/server"
)

// lockedBuffer is a log destination the test reads while the server may write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServeDemoPrintsAppURL: serve --demo prints the web app's URL beside the demo
// credentials, and the URL serves the app. The password is printed for the person at
// the terminal, never logged.
func TestServeDemoPrintsAppURL(t *testing.T) {
	out, outw := io.Pipe()
	root := cli.NewRootCommand()
	root.SetArgs([]string{"serve", "--demo", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "info"})
	root.SetOut(outw)
	var logs lockedBuffer
	root.SetErr(&logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
			_ = outw.Close()
		})
	}
	defer stop()
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var app, creds string
	// The first start seeds 60 days of history before it serves: ~1.5 s of CPU,
	// tens of seconds under -race on a loaded machine.
	timeout := time.After(2 * time.Minute)
	for app == "" {
		select {
		case l := <-lines:
			if strings.Contains(l, "log in as") {
				creds = l
			}
			if u, ok := strings.CutPrefix(l, "web app: "); ok {
				app, _, _ = strings.Cut(u, " ")
				if !strings.Contains(u, "/#/c/1/g/1)") {
					t.Errorf("demo garden link in %q", l)
				}
			}
		case err := <-done:
			t.Fatalf("serve: %v", err)
		case <-timeout:
			t.Fatal("serve --demo printed no web app URL")
		}
	}
	if !strings.Contains(creds, `"demo"`) || !strings.Contains(creds, `"demo-gardener"`) {
		t.Errorf("credentials line %q", creds)
	}
	res, err := http.Get(app)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `<script type="module"`) {
		t.Fatalf("GET %s: %d %s", app, res.StatusCode, body)
	}
	stop()
	if l := logs.String(); !strings.Contains(l, "demo account ready") || strings.Contains(l, server.DemoPassword) {
		t.Errorf("the log must say the demo account is ready, without its password:\n%s", l)
	}
}
