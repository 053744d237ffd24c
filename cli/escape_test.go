package cli

import (
	"encoding/json"
	"testing"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Tomatenhof Müller", "Tomatenhof Müller"},
		{"", ""},
		{"a\x1b[2J\x1b[31mred", `a\x1b[2J\x1b[31mred`},
		{"row\r\n2\tforged", `row\r\n2\tforged`},
		{"back\\slash", `back\\slash`},
		{"abc\u202edcba", `abc\u202edcba`},
		{"zero\u200bwidth\ufeff", `zero\u200bwidth\ufeff`},
		{"c1\u009bcsi", `c1\u009bcsi`},
		{"del\x7f", `del\x7f`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad\xffutf8\xc3", `bad\xffutf8\xc3`},
		{"a real \uFFFD stays", "a real \uFFFD stays"},
		{"名前 🌱", "名前 🌱"},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[0m", "\r\n\t", "\xff\xfe", "\u202e", `\x1b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := printable(s)
		for i, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unsafeRune(r) {
				t.Fatalf("printable(%q) = %q keeps %U at %d", s, out, r, i)
			}
		}
		if !isPlain(out) && out == s {
			t.Fatalf("printable(%q) left it unescaped", s)
		}
	})
}

func TestJSONForTerminal(t *testing.T) {
	in := []byte(`{"name":"a\u001b` + "\u202e\u009b\x7f\U000e0001ü" + `"}`)
	out := jsonForTerminal(in)
	if want := `{"name":"a\u001b\u202e\u009b\u007f\udb40\udc01ü"}`; string(out) != want {
		t.Fatalf("got %s, want %s", out, want)
	}
	var a, b map[string]string
	if json.Unmarshal(in, &a) != nil || json.Unmarshal(out, &b) != nil || a["name"] != b["name"] {
		t.Fatalf("meaning changed: %q vs %q", a, b)
	}
}
