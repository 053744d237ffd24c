package store_test

import (
	"testing"
	"unicode/utf8"

	"github.com/gardend/gardend/store"
)

func TestRepairText(t *testing.T) {
	for in, want := range map[string]string{
		"Farm":           "Farm",
		"Fa\x00rm":       "Fa\uFFFDrm",
		"a\tb\nc\r":      "a\uFFFDb\uFFFDc\uFFFD",
		"esc\x1b[31m":    "esc\uFFFD[31m",
		"del\x7f":        "del\uFFFD",
		"c1\u0085\u009f": "c1\uFFFD\uFFFD",
		"bad\xff\xfe":    "bad\uFFFD\uFFFD",
		"ok \uFFFD":      "ok \uFFFD",
		"Ünïcödé 漢字 🌱":   "Ünïcödé 漢字 🌱",
		// Bidi controls and zero-width spaces go; the joiners scripts and emoji
		// sequences need stay.
		"exe\u202Egpj":                "exe\uFFFDgpj",
		"\u2066x\u2069\u200E\u200F":   "\uFFFDx\uFFFD\uFFFD\uFFFD",
		"a\u200Bb\u2060c\uFEFF\u00AD": "a\uFFFDb\uFFFDc\uFFFD\uFFFD",
		"می\u200Cخواهم 👩\u200D🌾":      "می\u200Cخواهم 👩\u200D🌾",
	} {
		got, changed := store.RepairText(in)
		if got != want || changed != (in != want) {
			t.Errorf("RepairText(%q) = %q, %v; want %q", in, got, changed, want)
		}
	}
}

// FuzzRepairText: whatever comes in, what comes out is clean text, and clean text is
// left as it is.
func FuzzRepairText(f *testing.F) {
	for _, s := range []string{"", "Farm", "a\x00b", "\xff", "\u0085", "\uFFFD", "x\x1b[0m"} {
		f.Add(s)
	}
	f.Add("a\u202Eb\u200Bc")
	f.Fuzz(func(t *testing.T, s string) {
		got, changed := store.RepairText(s)
		if !store.CleanText(got) || !utf8.ValidString(got) {
			t.Fatalf("RepairText(%q) = %q, not clean", s, got)
		}
		if changed == store.CleanText(s) {
			t.Fatalf("RepairText(%q): changed %v, but CleanText says %v", s, changed, store.CleanText(s))
		}
		if !changed && got != s {
			t.Fatalf("RepairText(%q) changed clean text to %q", s, got)
		}
		if utf8.RuneCountInString(got) != utf8.RuneCountInString(s) {
			t.Fatalf("RepairText(%q) = %q: not one character for each character or bad byte", s, got)
		}
	})
}
