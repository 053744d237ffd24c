package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gardend/gardend/cli"
)

// TestNoPasswordInMessages: a --store password, in whatever form the connection
// string carries it, appears in no message of a command that fails on it: not in
// the error, not on standard output or standard error. The database is unreachable
// (port 1) or the string malformed, so each goes through a real error path: the
// refusal of a string that is no postgres:// URL, pgx's parse error, the connection
// error.
func TestNoPasswordInMessages(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGPASSFILE", "/nonexistent/gardend-test-pgpass")
	for form, dsn := range map[string]string{
		"url userinfo":             "postgres://gardend:Userinfo-S3cret@127.0.0.1:1/gardend?connect_timeout=1",
		"url query":                "postgres://gardend@127.0.0.1:1/gardend?connect_timeout=1&password=Query-S3cret",
		"url query, key encoded":   "postgres://gardend@127.0.0.1:1/gardend?connect_timeout=1&pass%77ord=Encoded-S3cret",
		"url sslpassword":          "postgres://gardend@127.0.0.1:1/gardend?connect_timeout=1&sslpassword=Key-S3cret",
		"url, raw slash":           "postgres://gardend:Slash/S3cret@127.0.0.1:1/gardend?connect_timeout=1",
		"url, bad port":            "postgres://gardend:Port-S3cret@127.0.0.1:notaport/gardend",
		"url, bad query":           "postgres://gardend@127.0.0.1:1/gardend?password=Bad-S3cret&sslmode",
		"keyword":                  "host=127.0.0.1 port=1 password=Keyword-S3cret connect_timeout=1",
		"keyword, quoted":          "host=127.0.0.1 port=1 password='Quoted S3cret' connect_timeout=1",
		"keyword, escaped quote":   `host=127.0.0.1 port=zz password='It\'s S3cret'`,
		"keyword, blanks around =": "host=127.0.0.1 port=zz password = Blank-S3cret",
		"not a connection string":  "Bare-S3cret",
		"another scheme":           "mysql://gardend:Mysql-S3cret@127.0.0.1/gardend",
	} {
		secret := secretOf(dsn)
		for _, args := range [][]string{
			{"inspect", "users", "--store", dsn},
			{"user", "create", "--store", dsn, "--username", "ann", "--first-name", "A", "--last-name", "L", "--password-stdin"},
		} {
			root := cli.NewRootCommand()
			var out, errOut bytes.Buffer
			root.SetArgs(append(args, "--data", t.TempDir()))
			root.SetIn(strings.NewReader("password-of-ann\n"))
			root.SetOut(&out)
			root.SetErr(&errOut)
			err := root.ExecuteContext(context.Background())
			if err == nil {
				t.Errorf("%s: %s succeeded", form, args[0])
				continue
			}
			for what, text := range map[string]string{"error": err.Error(), "stdout": out.String(), "stderr": errOut.String()} {
				if strings.Contains(text, secret) || strings.Contains(text, "S3cret") {
					t.Errorf("%s: %s %s holds the password %q: %s", form, args[0], what, secret, text)
				}
			}
		}
	}
}

// secretOf is the word of dsn that holds "S3cret" and what comes before it in that
// word: the password, or the part of it a careless redaction would leave.
func secretOf(dsn string) string {
	i := strings.Index(dsn, "S3cret")
	j := i
	for j > 0 && !strings.ContainsRune(" =:'/", rune(dsn[j-1])) {
		j--
	}
	return dsn[j : i+len("S3cret")]
}
