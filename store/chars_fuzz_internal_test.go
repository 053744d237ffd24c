package store

import (
	"regexp"
	"testing"
)

// The validators that replaced regular expressions accept exactly what the
// expressions did.
var (
	usernameRegexp = regexp.MustCompile(`^[\p{L}\p{N}@.+\-_]+$`)
	uuidRegexp     = regexp.MustCompile(`^[0-9A-Za-z-]+$`)
)

func FuzzUsernameChars(f *testing.F) {
	for _, s := range []string{"", "bob", "ｂｏｂ", "сосо", "a b", "x@y.z+1-_", "\xff", "٣", "Ⅻ", "a\u200db", "e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := usernameChars(s), usernameRegexp.MatchString(s); got != want {
			t.Errorf("usernameChars(%q) = %v, the expression says %v", s, got, want)
		}
		if got, want := uuidChars(s), uuidRegexp.MatchString(s); got != want {
			t.Errorf("uuidChars(%q) = %v, the expression says %v", s, got, want)
		}
	})
}
