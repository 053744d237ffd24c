package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/cli"
)

func TestServeFieldFlagErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"registration flag", []string{"--registration", "maybe"}, nil, `registration mode "maybe": use open or closed`},
		{"registration env", nil, map[string]string{"GARDEND_REGISTRATION": "invite"}, `GARDEND_REGISTRATION="invite"`},
		{"fail limit zero", []string{"--login-fail-limit", "0"}, nil, "--login-fail-limit must be at least 1"},
		{"fail limit env", nil, map[string]string{"GARDEND_LOGIN_FAIL_LIMIT": "ten"}, `GARDEND_LOGIN_FAIL_LIMIT="ten"`},
		{"fail window zero", nil, map[string]string{"GARDEND_LOGIN_FAIL_WINDOW": "0s"}, "--login-fail-window must be positive"},
		{"fail window env", nil, map[string]string{"GARDEND_LOGIN_FAIL_WINDOW": "soon"}, `GARDEND_LOGIN_FAIL_WINDOW="soon"`},
		{"max concurrent", []string{"--max-concurrent", "-1"}, nil, "--max-concurrent must be at least 1"},
		{"register limit", []string{"--register-limit", "0"}, nil, "--register-limit must be at least 1"},
		{"register global limit env", nil, map[string]string{"GARDEND_REGISTER_GLOBAL_LIMIT": "0"}, "--register-global-limit must be at least 1"},
		{"register window", []string{"--register-window", "0s"}, nil, "--register-window must be positive"},
		{"max hashing", []string{"--max-hashing", "0"}, nil, "--max-hashing must be at least 1"},
		{"memory limit syntax", []string{"--memory-limit", "lots"}, nil, `--memory-limit "lots": want a size such as 256MiB`},
		{"memory limit unit", nil, map[string]string{"GARDEND_MEMORY_LIMIT": "256XB"}, `--memory-limit "256XB"`},
		{"memory limit below hashing", []string{"--memory-limit", "128MiB", "--max-hashing", "2"}, nil, "not above the hashing budget of 128 MiB"},
		{"read timeout", []string{"--read-timeout", "0"}, nil, "--read-timeout must be positive"},
		{"write timeout", []string{"--write-timeout", "-1s"}, nil, "--write-timeout must be positive"},
		{"body timeout", []string{"--body-timeout", "0"}, nil, "--body-timeout must be positive"},
		{"body min rate", nil, map[string]string{"GARDEND_BODY_MIN_RATE": "0"}, "--body-min-rate must be at least 1"},
		{"max uploads", []string{"--max-uploads", "0"}, nil, "--max-uploads must be at least 1"},
		{"max cloud responses", []string{"--max-cloud-responses", "0"}, nil, "--max-cloud-responses must be at least 1"},
		{"max conns", []string{"--max-conns", "0"}, nil, "--max-conns must be at least 1"},
		{"max conns per addr", nil, map[string]string{"GARDEND_MAX_CONNS_PER_ADDR": "-3"}, "--max-conns-per-addr must be at least 1"},
		{"cors origin without scheme", []string{"--cors-origins", "plantmap.example"}, nil, `CORS origin "plantmap.example": give scheme://host[:port]`},
		{"compat mode", []string{"--compat", "django"}, nil, `--compat "django": the one compatibility mode is "plantmap"`},
		{"compat mode env", nil, map[string]string{"GARDEND_COMPAT": "PlantMap"}, `--compat "PlantMap"`},
		{"cert without key", []string{"--tls-cert", missing}, nil, "give both or neither"},
		{"key without cert env", nil, map[string]string{"GARDEND_TLS_KEY": missing}, "give both or neither"},
		{"missing cert files", []string{"--tls-cert", missing, "--tls-key", missing}, nil, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			// A deadline in case a broken check lets the server start.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			args := append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--log-format", "json"}, tc.args...)
			_, err := fieldExecute(t, ctx, "", args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// The flags reach the running server: closed registration and a login limit of 2,
// one of them set through the environment.
func TestServeFieldFlagsEndToEnd(t *testing.T) {
	t.Setenv("GARDEND_LOGIN_FAIL_LIMIT", "2")
	dir := t.TempDir()
	logs, logw := io.Pipe()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			var line struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "listening" {
				addr <- line.Addr
			}
		}
	}()

	root := cli.NewRootCommand()
	root.SetArgs([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0", "--log-format", "json",
		"--registration", "closed", "--login-fail-window", "1h", "--max-concurrent", "4", "--max-conns", "50"})
	root.SetOut(io.Discard)
	root.SetErr(logw)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		logw.Close()
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}

	status, res := fieldPost(t, base+"/register", map[string]string{"username": "eve", "password": "s3cret-garden", "first_name": "E", "last_name": "V"})
	if status != http.StatusForbidden {
		t.Fatalf("register with --registration closed: %d %v", status, res)
	}
	for range 2 {
		if status, res := fieldPost(t, base+"/login", map[string]string{"username": "eve", "password": "wrong-password"}); status != http.StatusBadRequest {
			t.Fatalf("failed login: %d %v", status, res)
		}
	}
	status, res = fieldPost(t, base+"/login", map[string]string{"username": "eve", "password": "wrong-password"})
	// Up to an hour (--login-fail-window), less the seconds the two hashes took.
	if ra, _ := strconv.Atoi(fmt.Sprint(res["retry_after"])); status != http.StatusTooManyRequests || ra < 3500 || ra > 3600 {
		t.Fatalf("third failure: %d %v", status, res)
	}
	if _, err := os.Stat(filepath.Join(dir, "admin.sock")); err != nil {
		t.Fatalf("admin socket: %v", err)
	}
	// The capacity flags show in the admin socket's /readyz; by default no other
	// origin may read the public one.
	sock := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", filepath.Join(dir, "admin.sock"))
	}}}
	ready, err := sock.Get("http://gardend/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(ready.Body)
	_ = ready.Body.Close()
	if !strings.Contains(string(body), "of 4 request slots") || !strings.Contains(string(body), "of 50 connections") {
		t.Fatalf("readyz: %s", body)
	}
	req, _ := http.NewRequest("GET", base+"/readyz", nil)
	req.Header.Set("Origin", "https://elsewhere.example")
	ready, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = ready.Body.Close()
	if got := ready.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Fatalf("default --cors-origins let another origin read: %q", got)
	}
}
