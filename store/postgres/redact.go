package postgres

import (
	"errors"
	"slices"
	"strings"
)

// A PostgreSQL password can come in a connection string in four places: the userinfo
// of a URL (postgres://user:PASSWORD@host), a URL's query (?password=PASSWORD, also
// ?sslpassword=), or a keyword/value pair (password=PASSWORD, password = 'PASS WORD').
// RedactDSN masks them in a connection string, and every message gardend makes from
// one goes through it. The errors of Open and of the store's operations are scrubbed
// too (scrubbed): of the passwords themselves, found by the same reading of the
// string, and of any password=… or URL userinfo their text quotes (redactText), which
// covers a driver message that quotes a mangled piece of a malformed string.

// redactMask replaces a password.
const redactMask = "xxxxx"

// RedactDSN returns a connection string fit to print: a URL (any scheme://, so that
// a mistyped mysql://user:pass@… is masked too) with its userinfo password and its
// password and sslpassword query values masked, a keyword/value string with the value
// of every password (and sslpassword) masked, quoted or not, as libpq reads them.
// Where a string is malformed it masks more rather than less (an '@' left before a
// URL's query masks from the first ':' to it; an unterminated quoted value runs to
// the end), and text that is neither form (no "://", no '=') is not shown at all: it
// may be a password given in the wrong place.
func RedactDSN(dsn string) string {
	switch {
	case isURL(dsn):
		return redactURL(dsn)
	case strings.Contains(dsn, "="):
		return walk(dsn, redactURL, func(string) string { return redactMask })
	}
	return "(unrecognised connection string)"
}

// isURL reports a string that starts with scheme://.
func isURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	for i := 0; ok && i < len(scheme); i++ {
		ok = isSchemeChar(scheme[i])
	}
	return ok
}

// redactText masks the passwords of connection strings quoted in text (an error
// message): each URL, taken to end at a blank or a quote, and each password=… pair.
func redactText(text string) string {
	return walk(text, redactURL, func(string) string { return redactMask })
}

// walk rewrites text from left to right: each URL (nextURL) by url, and each
// password=… pair's value (raw, quotes and all) by value. Whichever starts first is
// taken whole, so a URL inside a password's value is part of the value, and a
// "password=" inside a URL is the URL's.
func walk(text string, url func(u string) string, value func(raw string) string) string {
	var b strings.Builder
	for {
		uStart, uEnd := nextURL(text)
		key, vStart, vEnd := nextPair(text)
		switch {
		case uStart < 0 && key < 0:
			b.WriteString(text)
			return b.String()
		case key >= 0 && (uStart < 0 || key < uStart):
			b.WriteString(text[:vStart])
			b.WriteString(value(text[vStart:vEnd]))
			text = text[vEnd:]
		default:
			b.WriteString(text[:uStart])
			b.WriteString(url(text[uStart:uEnd]))
			text = text[uEnd:]
		}
	}
}

// nextPair finds the next password=… (or sslpassword=…) pair of text, blanks around
// '=' allowed: key is where "password" starts (-1 when there is none), the value runs
// from vStart to vEnd.
func nextPair(text string) (key, vStart, vEnd int) {
	lower := asciiLower(text) // byte for byte, so that indexes match text's
	for from := 0; ; {
		k := strings.Index(lower[from:], "password")
		if k < 0 {
			return -1, 0, 0
		}
		k += from
		j := skipBlanks(text, k+len("password"))
		if j < len(text) && text[j] == '=' {
			v := skipBlanks(text, j+1)
			return k, v, valueEnd(text, v)
		}
		from = k + len("password")
	}
}

// nextURL finds the next scheme://… in text: start is where its scheme begins (-1
// when there is none), end where the URL ends (whitespace, a quote or a bracket a
// message would put around it, or the end of text).
func nextURL(text string) (start, end int) {
	i := strings.Index(text, "://")
	if i < 0 {
		return -1, 0
	}
	start = i
	for start > 0 && isSchemeChar(text[start-1]) {
		start--
	}
	end = i + 3
	for end < len(text) && !isURLEnd(text[end]) {
		end++
	}
	return start, end
}

func isSchemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isURLEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f', '`', '"', '\'', '<', '>':
		return true
	}
	return false
}

// redactURL masks the passwords of one URL. The userinfo ends at the first '@' that
// comes before any '/', as pgx and libpq read it.
func redactURL(u string) string {
	i := strings.Index(u, "://") + 3
	var b strings.Builder
	b.WriteString(u[:i])
	rest := u[i:]
	if at := strings.IndexAny(rest, "@/"); at >= 0 && rest[at] == '@' {
		user, _, hasPassword := strings.Cut(rest[:at], ":")
		b.WriteString(user)
		if hasPassword {
			b.WriteString(":" + redactMask)
		}
		b.WriteByte('@')
		rest = rest[at+1:]
	}
	head, query, hasQuery := strings.Cut(rest, "?")
	// An '@' left before the query is a password with a raw '/' in it
	// (user:pa/ss@host), or its remains: mask from the first ':' to the last '@'.
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		if colon := strings.IndexByte(head, ':'); colon >= 0 && colon < at {
			head = head[:colon+1] + redactMask + head[at:]
		} else {
			head = redactMask + head[at:]
		}
	}
	b.WriteString(head)
	if hasQuery {
		b.WriteByte('?')
		b.WriteString(redactQuery(query))
	}
	return b.String()
}

// redactQuery masks the values of the password and sslpassword parameters of a URL's
// query; keys are compared percent-decoded and in any case, as a reader might take
// them.
func redactQuery(query string) string {
	pairs := strings.Split(query, "&")
	for i, pair := range pairs {
		key, _, hasValue := strings.Cut(pair, "=")
		if hasValue && isPasswordKey(percentDecode(key)) {
			pairs[i] = key + "=" + redactMask
		}
	}
	return strings.Join(pairs, "&")
}

func isPasswordKey(key string) bool {
	key = asciiLower(strings.Trim(key, " "))
	return key == "password" || key == "sslpassword"
}

// percentDecode decodes %XX escapes, leaving malformed ones as they are.
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func skipBlanks(s string, i int) int {
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return i
}

func isBlank(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}

// valueEnd is where a keyword value starting at i ends (after its closing quote).
func valueEnd(s string, i int) int {
	if i < len(s) && s[i] == '\'' {
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '\'':
				return j + 1
			}
		}
		return len(s) // unterminated: everything after is the value
	}
	j := i
	for ; j < len(s) && !isBlank(s[j]); j++ {
		if s[j] == '\\' {
			j++
		}
	}
	return min(j, len(s))
}

// secretsOf lists the passwords a connection string carries, as written and as
// decoded, and the parsed ones given, for scrubbed. Those shorter than minSecret are
// left out: they cannot be told apart from ordinary text (and are masked where they
// stand by Redact).
func secretsOf(dsn string, parsed ...string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= minSecret && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, p := range parsed {
		add(p)
	}
	fromURL := func(u string) string {
		rest := u[strings.Index(u, "://")+3:]
		if at := strings.IndexAny(rest, "@/"); at >= 0 && rest[at] == '@' {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				add(pw)
				add(percentDecode(pw))
			}
		}
		if _, query, ok := strings.Cut(rest, "?"); ok {
			for pair := range strings.SplitSeq(query, "&") {
				if key, value, ok := strings.Cut(pair, "="); ok && isPasswordKey(percentDecode(key)) {
					add(value)
					add(percentDecode(value))
				}
			}
		}
		return u
	}
	fromPair := func(raw string) string {
		add(raw)
		add(unquote(raw))
		return raw
	}
	// As RedactDSN reads it: a whole URL, or pairs; and as redactText would.
	if isURL(dsn) {
		fromURL(dsn)
	}
	walk(dsn, fromURL, fromPair)
	return out
}

// minSecret is the shortest password scrubbed out of error text.
const minSecret = 4

// unquote is a keyword value as libpq reads it: quotes removed, escapes resolved.
func unquote(raw string) string {
	raw = strings.TrimPrefix(raw, "'")
	if strings.HasSuffix(raw, "'") && !strings.HasSuffix(raw, `\'`) {
		raw = raw[:len(raw)-1]
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			i++
		}
		b.WriteByte(raw[i])
	}
	return b.String()
}

// scrubbedError is an error whose text has the store's passwords masked; errors.Is
// and As see the error it wraps.
type scrubbedError struct {
	err     error
	secrets []string
}

func (e *scrubbedError) Error() string { return scrub(e.err.Error(), e.secrets) }

func (e *scrubbedError) Unwrap() error { return e.err }

// scrubbed wraps err so that its text holds none of secrets, nor a password in a
// connection string it quotes; nil stays nil.
func scrubbed(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	var done *scrubbedError
	if errors.As(err, &done) {
		return err
	}
	msg := err.Error()
	if scrub(msg, secrets) == msg {
		return err
	}
	return &scrubbedError{err: err, secrets: secrets}
}

func scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, redactMask)
	}
	return redactText(msg)
}
