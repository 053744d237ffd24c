package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestConfigFileValueKinds: strings, numbers, booleans, durations and lists reach
// serve's flags as if typed, and the command line and environment still win.
func TestConfigFileValueKinds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gardend.toml")
	os.WriteFile(path, []byte(`
addr = "0.0.0.0:8000"
max-concurrent = 64
trust-proxy = true
token-ttl = "2h"
cors-origins = ["https://a.example", "https://b,c.example"]
log-level = "debug"
`), 0o600)
	t.Setenv("GARDEND_LOG_LEVEL", "warn")
	serve, _, err := NewRootCommand().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.ParseFlags([]string{"--config", path, "--max-concurrent", "9"}); err != nil {
		t.Fatal(err)
	}
	g := &globalOptions{}
	if err := applyConfig(serve, g); err != nil {
		t.Fatal(err)
	}
	f := serve.Flags()
	addr, _ := f.GetString("addr")
	maxc, _ := f.GetInt("max-concurrent")
	proxy, _ := f.GetBool("trust-proxy")
	ttl, _ := f.GetDuration("token-ttl")
	origins, _ := f.GetStringSlice("cors-origins")
	level, _ := f.GetString("log-level")
	if addr != "0.0.0.0:8000" || maxc != 9 || !proxy || ttl != 2*time.Hour || level != "warn" ||
		!slices.Equal(origins, []string{"https://a.example", "https://b,c.example"}) || g.configFile != path {
		t.Fatalf("addr %q max-concurrent %d trust-proxy %v token-ttl %v cors %q log-level %q file %q",
			addr, maxc, proxy, ttl, origins, level, g.configFile)
	}
}
