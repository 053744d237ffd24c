package store

import (
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// NormalizeUsername is the form a username is stored and looked up in: NFKC, as the
// original service normalised them. Fullwidth and mathematical letters, ligatures and
// the like become the letters they stand for ("ｂｏｂ" and "𝐛𝐨𝐛" are "bob").
func NormalizeUsername(v string) string { return norm.NFKC.String(v) }

// ValidateNewUsername applies the rules of a username being created or taken by a
// rename, to its normalised form: those of ValidateUsername, and letters of one
// script only (or one of the combinations Japanese, Chinese and Korean names use with
// Latin), so that a name cannot pass for another by mixing lookalike letters of other
// scripts into it. Existing accounts are not held to it.
func ValidateNewUsername(v string) string {
	v = NormalizeUsername(v)
	if msg := ValidateUsername(v); msg != "" {
		return msg
	}
	if scripts := scriptsOf(v); !oneScript(scripts) {
		return "username mixes letters of " + strings.Join(scripts, " and ") + " scripts; use one script"
	}
	return ""
}

// scriptsOf lists the scripts of v's characters, Common and Inherited ones (digits,
// punctuation, combining marks) aside, in the order they first appear.
func scriptsOf(v string) []string {
	var out []string
	for _, r := range v {
		if s := scriptOf(r); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// likelyScripts are tried first: a username is almost always in one of them.
var likelyScripts = []string{"Latin", "Cyrillic", "Greek", "Han", "Arabic", "Hiragana", "Katakana", "Hangul"}

func scriptOf(r rune) string {
	if r < 0x80 {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return "Latin"
		}
		return ""
	}
	if unicode.Is(unicode.Common, r) || unicode.Is(unicode.Inherited, r) {
		return ""
	}
	for _, name := range likelyScripts {
		if unicode.Is(unicode.Scripts[name], r) {
			return name
		}
	}
	for name, table := range unicode.Scripts {
		if unicode.Is(table, r) {
			return name
		}
	}
	return ""
}

// scriptSets are the mixtures Unicode's "highly restrictive" level (UTS #39) allows.
var scriptSets = [][]string{
	{"Latin", "Han", "Hiragana", "Katakana"},
	{"Latin", "Han", "Bopomofo"},
	{"Latin", "Han", "Hangul"},
}

func oneScript(scripts []string) bool {
	if len(scripts) <= 1 {
		return true
	}
	for _, set := range scriptSets {
		if !slices.ContainsFunc(scripts, func(s string) bool { return !slices.Contains(set, s) }) {
			return true
		}
	}
	return false
}

// lookalikes maps letters of other scripts to the Latin letters (or digits) they are
// drawn like, after Unicode's confusables list (UTS #39): whole names in Cyrillic,
// Greek or Armenian can pass for Latin ones without mixing scripts.
var lookalikes = map[rune]string{
	// Cyrillic
	'а': "a", 'е': "e", 'ё': "ë", 'і': "i", 'ї': "ï", 'ј': "j", 'о': "o", 'р': "p",
	'с': "c", 'у': "y", 'х': "x", 'ѕ': "s", 'һ': "h", 'ԁ': "d", 'ԛ': "q", 'ԝ': "w", 'ӏ': "l",
	'ү': "y", 'б': "6",
	'А': "A", 'В': "B", 'Е': "E", 'Ё': "Ë", 'З': "3", 'І': "I", 'Ї': "Ï", 'Ј': "J", 'К': "K",
	'М': "M", 'Н': "H", 'О': "O", 'Р': "P", 'С': "C", 'Т': "T", 'У': "Y", 'Х': "X", 'Ѕ': "S",
	'Ԛ': "Q", 'Ԝ': "W", 'Ү': "Y", 'Ӏ': "l",
	// Greek
	'α': "a", 'ο': "o", 'ν': "v", 'ρ': "p", 'υ': "u", 'ι': "i", 'κ': "k", 'χ': "x", 'γ': "y",
	'ϲ': "c", 'ϳ': "j", 'η': "n",
	'Α': "A", 'Β': "B", 'Ε': "E", 'Ζ': "Z", 'Η': "H", 'Ι': "I", 'Κ': "K", 'Μ': "M", 'Ν': "N",
	'Ο': "O", 'Ρ': "P", 'Τ': "T", 'Υ': "Y", 'Χ': "X", 'Ϲ': "C", 'Ϳ': "J",
	// Armenian
	'օ': "o", 'ս': "u", 'հ': "h", 'ո': "n", 'զ': "q", 'ց': "g", 'Ս': "U", 'Օ': "O", 'Լ': "L",
}

// UsernameSkeleton is what a username looks like: its normalised form with every
// lookalike letter replaced by the Latin one it passes for. Two accounts whose names
// have one skeleton would be told apart by nobody reading a permission list.
// Capitals stay capitals: usernames compare case-sensitively.
func UsernameSkeleton(v string) string {
	v = NormalizeUsername(v)
	var b strings.Builder
	for _, r := range v {
		if l, ok := lookalikes[r]; ok {
			b.WriteString(l)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
