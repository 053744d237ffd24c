package store

import (
	"slices"
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

func TestUsernameLooks(t *testing.T) {
	// Each pair looks alike: the second may not be registered beside the first.
	for _, pair := range [][2]string{
		{"alice", "aIice"}, // capital I
		{"alice", "aǀice"}, // U+01C0 dental click
		{"alice", "ɑlice"}, // U+0251 Latin alpha
		{"alice", "alıce"}, // U+0131 dotless i
		{"alice", "Alice"}, // case only
		{"alice", "ALICE"},
		{"ivan", "Ivan"},
		{"lvan", "Ivan"},
		{"mary", "rnary"},
		{"olga", "0lga"},
		{"bob", "b0b"},
		{"coco", "сосо"}, // all Cyrillic
		{"ABE", "ΑΒΕ"},   // all Greek
		{"ann", "𝐚𝐧𝐧"},
		{"xoxo.1", "хохо.1"},
		{"strasse", "straße"},
	} {
		if !UsernamesLookAlike(pair[0], pair[1]) || !UsernamesLookAlike(pair[1], pair[0]) {
			t.Errorf("%q and %q look alike, but their looks are %q and %q", pair[0], pair[1], UsernameLooks(pair[0]), UsernameLooks(pair[1]))
		}
	}
	for _, pair := range [][2]string{{"jose", "josé"}, {"ivan", "иван"}, {"bill", "bili"}, {"anna", "anne"}, {"alice", "allce"}} {
		if UsernamesLookAlike(pair[0], pair[1]) {
			t.Errorf("%q and %q share a look %q", pair[0], pair[1], UsernameLooks(pair[0]))
		}
	}
	// Case stays visible in the skeleton proper.
	if UsernameSkeleton("Alice") == UsernameSkeleton("alice") || UsernameSkeleton("aIice") != UsernameSkeleton("alice") {
		t.Errorf("skeletons: Alice %q, alice %q, aIice %q", UsernameSkeleton("Alice"), UsernameSkeleton("alice"), UsernameSkeleton("aIice"))
	}
}

// The generated table is UTS #39's: spot checks against lines of confusables.txt.
func TestConfusablesTable(t *testing.T) {
	for r, want := range map[rune]string{'I': "l", '0': "O", 'ɑ': "a", 'ı': "i", 'ǀ': "l", 'm': "rn", 'а': "a", 'Ӏ': "l"} {
		if got, ok := prototype(r); !ok || got != want {
			t.Errorf("prototype(%q) = %q, %v; want %q", r, got, ok, want)
		}
	}
	for _, r := range []rune{'a', 'l', 'b', 'z'} {
		if got, ok := prototype(r); ok {
			t.Errorf("prototype(%q) = %q; a prototype has none", r, got)
		}
	}
	if ConfusablesVersion == "" || len(confusables) < 6000 {
		t.Errorf("table %s has %d entries", ConfusablesVersion, len(confusables))
	}
}

// Whatever a client sends, a name has one or two looks, the same as its normalised
// form's, and looks like itself and its normalised form.
func FuzzUsernameLooks(f *testing.F) {
	for _, s := range []string{"alice", "aIice", "ALICE", "0lga", "ｖｉｃｔｉｍ", "straße", "İstanbul", "\u0000", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		looks := UsernameLooks(name)
		if len(looks) < 1 || len(looks) > 2 || len(looks) == 2 && looks[0] == looks[1] {
			t.Fatalf("UsernameLooks(%q) = %q", name, looks)
		}
		if !slices.Equal(looks, UsernameLooks(NormalizeUsername(name))) {
			t.Fatalf("%q and its normal form %q have looks %q and %q", name, NormalizeUsername(name), looks, UsernameLooks(NormalizeUsername(name)))
		}
		if !UsernamesLookAlike(name, name) || !UsernamesLookAlike(name, NormalizeUsername(name)) {
			t.Fatalf("%q does not look like itself", name)
		}
	})
}

// TestSiteSpellingsKept: a new name spelled as another site's user is shown here
// (name@SITE, name@SITE.ID) is refused, so nobody takes the name a farm's user will
// be known by; addresses and other uses of @ stay allowed.
func TestSiteSpellingsKept(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"bob@farm-b", false},
		{"x@office", false},
		{"Bob@Farm-B", false},
		{"bob@farm-b.17", false},
		{"bob@example.com", true},
		{"bob@farm-b.x", true},
		{"@farm", true},
		{"bob", true},
		{"bob.smith+garden", true},
	} {
		if msg := ValidateNewUsername(tc.name); (msg == "") != tc.ok {
			t.Errorf("ValidateNewUsername(%q) = %q, want ok %v", tc.name, msg, tc.ok)
		}
	}
}
