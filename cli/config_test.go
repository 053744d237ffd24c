package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gardend/gardend/cli"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gardend.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// dataDirWithUser makes a data directory whose only account is username, so which
// directory a command used shows in inspect's output.
func dataDirWithUser(t *testing.T, username string) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := run(t, "garden-admin-pw\n", "admin", "create", "--data", dir, "--username", username, "--password-stdin"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestConfigPrecedence: a value comes from the command line, else the environment,
// else the config file (--config or GARDEND_CONFIG), else the default.
func TestConfigPrecedence(t *testing.T) {
	fromFile, fromEnv, fromFlag := dataDirWithUser(t, "filed"), dataDirWithUser(t, "envied"), dataDirWithUser(t, "flagged")
	config := writeConfig(t, "# where serve keeps its data\ndata = '"+fromFile+"'\n")
	users := func(args ...string) string {
		t.Helper()
		out, err := run(t, "", append([]string{"inspect", "users"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := users("--config", config); !strings.Contains(out, "filed") {
		t.Fatalf("file: %s", out)
	}
	t.Setenv(cli.ConfigEnv, config)
	if out := users(); !strings.Contains(out, "filed") {
		t.Fatalf("file named by %s: %s", cli.ConfigEnv, out)
	}
	t.Setenv("GARDEND_DATA", fromEnv)
	if out := users(); !strings.Contains(out, "envied") {
		t.Fatalf("environment over file: %s", out)
	}
	if out := users("--data", fromFlag); !strings.Contains(out, "flagged") {
		t.Fatalf("flag over environment: %s", out)
	}
}

func TestConfigFileErrorsNameFileAndSetting(t *testing.T) {
	cases := map[string]struct{ text, want string }{
		"unknown setting":     {"token_ttl = '2h'\n", `unknown setting "token_ttl"`},
		"one-shot flag":       {"force = true\n", `unknown setting "force"`},
		"bad value":           {"token-ttl = 'soon'\n", "token-ttl: "},
		"list for one value":  {"addr = ['a', 'b']\n", "addr: takes one value"},
		"table":               {"[spatial]\naddr = 'x'\n", "spatial is a table"},
		"syntax":              {"addr = \n", "line 1"},
		"number out of range": {"max-concurrent = 1.5\n", "max-concurrent: "},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, tc.text)
			_, err := run(t, "", "serve", "--config", path, "--data", t.TempDir())
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to name %s and %q", err, path, tc.want)
			}
		})
	}
	if _, err := run(t, "", "inspect", "users", "--config", filepath.Join(t.TempDir(), "missing.toml")); err == nil || !strings.Contains(err.Error(), "missing.toml") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestSettingsOfOtherCommandsAreSkipped: one file serves every command; inspect
// ignores serve's settings instead of failing on them.
func TestSettingsOfOtherCommandsAreSkipped(t *testing.T) {
	dir := dataDirWithUser(t, "root")
	config := writeConfig(t, "data = '"+dir+"'\naddr = '0.0.0.0:8000'\ncors-origins = ['https://a.example', 'https://b.example']\nspatial = 'seerep:9090'\n")
	out, err := run(t, "", "inspect", "users", "--config", config)
	if err != nil || !strings.Contains(out, "root") {
		t.Fatalf("inspect with serve's settings: %v %s", err, out)
	}
}

// TestOneShotFlagsIgnoreEnvironment: variables meant for serve never change what
// another command does (issue 11, bug 2).
func TestOneShotFlagsIgnoreEnvironment(t *testing.T) {
	dir := dataDirWithUser(t, "root")
	t.Setenv("GARDEND_JSON", "true")
	out, err := run(t, "", "inspect", "users", "--data", dir)
	if err != nil || !strings.Contains(out, "USERNAME") {
		t.Fatalf("GARDEND_JSON switched inspect to JSON: %v %s", err, out)
	}

	archive := filepath.Join(t.TempDir(), "b.tar")
	if _, err := run(t, "", "backup", "--data", dir, archive); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GARDEND_FORCE", "true")
	target := dataDirWithUser(t, "keep-me")
	_, err = run(t, "", "restore", archive, "--data", target)
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("GARDEND_FORCE made restore overwrite a non-empty directory: %v", err)
	}
	if out, _ := run(t, "", "inspect", "users", "--data", target); !strings.Contains(out, "keep-me") {
		t.Fatalf("target changed: %s", out)
	}
}

// TestConfigFlagsDocumented: README's configuration table lists every flag that the
// environment and the config file can set, and no other flag claims to be one.
func TestConfigFlagsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := cli.ConfigFlags(cli.NewRootCommand())
	if len(flags) < 20 {
		t.Fatalf("only %d configuration flags: %v", len(flags), flags)
	}
	for _, f := range flags {
		if !strings.Contains(string(readme), "`--"+f+"`") {
			t.Errorf("README.md does not document configuration flag --%s", f)
		}
	}
	for _, oneShot := range []string{"force", "json", "garden", "password-stdin", "username", "latency"} {
		for _, f := range flags {
			if f == oneShot {
				t.Errorf("--%s is a one-shot flag but is read from the environment", f)
			}
		}
	}
}
