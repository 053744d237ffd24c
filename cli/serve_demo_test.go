package cli_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/cli"
)

// TestServeDemoPrintsAppURL: serve --demo prints the web app's URL beside the demo
// credentials, and the URL serves the app.
func TestServeDemoPrintsAppURL(t *testing.T) {
	out, outw := io.Pipe()
	root := cli.NewRootCommand()
	root.SetArgs([]string{"serve", "--demo", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "warn"})
	root.SetOut(outw)
	root.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		outw.Close()
	}()
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var app, creds string
	timeout := time.After(30 * time.Second)
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
}
