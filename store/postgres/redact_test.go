package postgres

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// passwordForms writes a connection string carrying password in each place a
// password can go, the way a user would write it correctly.
var passwordForms = map[string]func(password string) string{
	"url userinfo": func(pw string) string {
		return "postgres://gardend:" + pctEncode(pw) + "@db.internal:5432/gardend?sslmode=disable"
	},
	"url query": func(pw string) string {
		return "postgres://gardend@db.internal:5432/gardend?sslmode=disable&password=" + pctEncode(pw)
	},
	"url query, key encoded": func(pw string) string {
		return "postgresql://db.internal/gardend?pass%77ord=" + pctEncode(pw) + "&user=gardend"
	},
	"keyword, quoted": func(pw string) string {
		return "host=db.internal user=gardend password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "' dbname=gardend"
	},
	"keyword, plain": func(pw string) string {
		return "host=db.internal password=" + strings.NewReplacer(`\`, `\\`, " ", `\ `, "'", `\'`).Replace(pw) + " user=gardend"
	},
	"keyword, blanks around =": func(pw string) string {
		return "host=db.internal  password =  '" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "'"
	},
}

// pctEncode percent-encodes every byte but the unreserved ones of RFC 3986.
func pctEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// parsedPassword is the password pgx reads from dsn, with the environment's out of
// the way; ok is false when pgx does not accept dsn.
func parsedPassword(dsn string) (string, bool) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", false
	}
	return cfg.Password, true
}

func noPasswordEnv(tb interface{ Setenv(string, string) }) {
	tb.Setenv("PGPASSWORD", "")
	tb.Setenv("PGPASSFILE", "/nonexistent/gardend-test-pgpass")
	tb.Setenv("PGSERVICEFILE", "/nonexistent/gardend-test-pgservice")
	tb.Setenv("PGSSLPASSWORD", "")
}

func TestRedactDSN(t *testing.T) {
	noPasswordEnv(t)
	const pw = `S3cr3t p@ss/wo'rd\?&=`
	for form, write := range passwordForms {
		dsn := write(pw)
		if got, ok := parsedPassword(dsn); !ok || got != pw {
			t.Fatalf("%s: the test's own string %q does not carry the password (pgx reads %q, %v)", form, dsn, got, ok)
		}
		out := RedactDSN(dsn)
		checkRedacted(t, form, dsn, out, pw)
		if !strings.Contains(out, "db.internal") {
			t.Errorf("%s: %q lost the host", form, out)
		}
	}
	for in, want := range map[string]string{
		"mysql://u:secret@host/db":                "mysql://u:xxxxx@host/db",
		"postgres://u:pa/ss@host/db":              "postgres://u:xxxxx@host/db",
		"postgres://h/db?password=a&sslmode=x":    "postgres://h/db?password=xxxxx&sslmode=x",
		"host=h password='unterminated and more":  "host=h password=xxxxx",
		"host=h sslpassword=key-secret port=5432": "host=h sslpassword=xxxxx port=5432",
		"S3cr3tPassword":                          "(unrecognised connection string)",
		"":                                        "(unrecognised connection string)",
	} {
		if got := RedactDSN(in); got != want {
			t.Errorf("RedactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

// checkRedacted fails unless out, the redaction of dsn, holds the password in none
// of its forms, and pgx reads no password from it but the mask.
func checkRedacted(t testing.TB, what, dsn, out, pw string) {
	t.Helper()
	for _, form := range []string{pw, pctEncode(pw), url.QueryEscape(pw)} {
		if len(form) >= minSecret && strings.Contains(out, form) {
			t.Errorf("%s: %q → %q still holds the password (%q)", what, dsn, out, form)
		}
	}
	if got, ok := parsedPassword(out); ok && got != "" && got != redactMask {
		t.Errorf("%s: %q → %q: pgx reads the password %q from it", what, dsn, out, got)
	}
}

// FuzzRedactDSN: whatever the password, in whatever form, RedactDSN masks it, and
// quoted in a message the scrubbing masks it; and for any string at all, pgx reads no
// password but the mask from its redaction.
func FuzzRedactDSN(f *testing.F) {
	noPasswordEnv(f)
	for _, seed := range []string{"S3cr3t", `it's a secret`, `back\slash`, "p@ss/w:rd?x=y&z", "pass word", "'quoted'", "%41%zz"} {
		f.Add(seed, "")
	}
	for _, seed := range []string{"postgres://u:pw@h/d", "host=h password=x", "password = 'a\\'b'", "postgres://u:p/q@h?password=z", "postgresql://h?pass%77ord=v", "x://y@z password=a://b@c"} {
		f.Add("", seed)
	}
	f.Fuzz(func(t *testing.T, pw, anyString string) {
		if anyString != "" {
			out := RedactDSN(anyString)
			if got, ok := parsedPassword(anyString); ok && got != "" {
				if got2, ok2 := parsedPassword(out); ok2 && got2 != "" && got2 != redactMask {
					t.Errorf("%q → %q: pgx reads the password %q from it (from the original: %q)", anyString, out, got2, got)
				}
			}
			return
		}
		if len(pw) < minSecret || !utf8.ValidString(pw) || strings.ContainsAny(pw, "\x00") || strings.Contains(redactMask, pw) {
			return
		}
		for form, write := range passwordForms {
			dsn := write(pw)
			if got, ok := parsedPassword(dsn); !ok || got != pw {
				continue // a password this form cannot carry (pgx trims blanks, …)
			}
			if strings.Contains(write(""), pw) {
				continue // the password is a piece of the rest of the string
			}
			checkRedacted(t, form, dsn, RedactDSN(dsn), pw)
			msg := scrubbed(fmt.Errorf("cannot parse `%s`: bad port (%s)", dsn, dsn), secretsOf(dsn, pw)).Error()
			for _, f := range []string{pw, pctEncode(pw), url.QueryEscape(pw)} {
				if strings.Contains(msg, f) {
					t.Errorf("%s: the message %q holds the password", form, msg)
				}
			}
		}
	})
}

// TestScrubbedKeepsTheError: scrubbing changes the text only; errors.Is still finds
// what it wraps.
func TestScrubbedKeepsTheError(t *testing.T) {
	base := errors.New("dial tcp: connection refused")
	err := scrubbed(fmt.Errorf("connect with password=hunter22: %w", base), []string{"hunter22"})
	if !errors.Is(err, base) || strings.Contains(err.Error(), "hunter22") {
		t.Errorf("scrubbed: %v (is base: %v)", err, errors.Is(err, base))
	}
	if got := scrubbed(base, []string{"hunter22"}); got != base {
		t.Errorf("an error without secrets is wrapped: %#v", got)
	}
}
