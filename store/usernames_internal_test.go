package store

import (
	"testing"
)

func TestValidateNewUsername(t *testing.T) {
	for name, ok := range map[string]bool{
		"bob":         true,
		"ｂｏｂ":         true, // fullwidth: stored as bob
		"𝐛𝐨𝐛":         true, // mathematical bold: stored as bob
		"José_2":      true,
		"Ελληνικά":    true,
		"иван.петров": true,
		"山田taro":      true, // Han beside Latin, as Japanese names are written
		"やまだ太郎":       true,
		"김민준kim":      true,
		"bоb":         false, // Cyrillic о between Latin letters
		"раypal":      false,
		"αlpha":       false, // Greek α
		"ｂоｂ":         false,
		"bob smith":   false,
		"½":           false, // NFKC: 1⁄2, and ⁄ is no username character
	} {
		if got := ValidateNewUsername(name) == ""; got != ok {
			t.Errorf("ValidateNewUsername(%q) ok=%v, want %v (%s)", name, got, ok, ValidateNewUsername(name))
		}
	}
}

func TestUsernameSkeleton(t *testing.T) {
	for a, b := range map[string]string{
		"coco":   "сосо", // all Cyrillic
		"ABE":    "ΑΒΕ",  // all Greek
		"ann":    "𝐚𝐧𝐧",
		"pop":    "рор",
		"xoxo.1": "хохо.1",
	} {
		if UsernameSkeleton(a) != UsernameSkeleton(b) {
			t.Errorf("%q and %q look alike but have skeletons %q and %q", a, b, UsernameSkeleton(a), UsernameSkeleton(b))
		}
	}
	for a, b := range map[string]string{"bob": "Bob", "jose": "josé", "ivan": "иван"} {
		if UsernameSkeleton(a) == UsernameSkeleton(b) {
			t.Errorf("%q and %q share the skeleton %q", a, b, UsernameSkeleton(a))
		}
	}
}
