package cli

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// printable makes text from stored data (or from an archive, a spatial server, a file
// name) safe to print on an operator's terminal: control characters (CR, LF, tab,
// ESC and the rest of C0 and C1), invisible format characters (bidi overrides,
// zero-width ones), line and paragraph separators and bytes that are not UTF-8 are
// shown as Go-style escapes (\r, \x1b, \u202e, \xff), and a backslash as \\, so the
// result is unambiguous. Without this, a name holding escape sequences or CR/LF can
// clear the screen, recolour it or forge rows of a table.
func printable(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain reports that s needs no escape, the common case, without allocating.
func isPlain(s string) bool {
	for i, r := range s {
		if r == '\\' || unsafeRune(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			return false
		}
	}
	return true
}

func unsafeRune(r rune) bool {
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r)
}

// jsonForTerminal escapes, as \uXXXX, what encoding/json leaves raw but a terminal may
// act on: DEL, C1 controls, bidi overrides and other invisible format characters, line
// and paragraph separators. The JSON means the same; it can be printed safely.
func jsonForTerminal(data []byte) []byte {
	if isPlain(string(data)) {
		return data
	}
	out := make([]byte, 0, len(data)+16)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r >= 0x7f && unsafeRune(r) {
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		} else {
			out = append(out, data[i:i+size]...)
		}
		i += size
	}
	return out
}
