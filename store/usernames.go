package store

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

//go:generate go run ./confusablesgen

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
	if name, site, ok := siteSpelling(v); ok {
		return fmt.Sprintf("username %q is spelled as a user %q of a site %q would be shown here (docs/sync.md); choose one that does not end in @%s", v, name, site, site)
	}
	return ""
}

// siteSpelling reports whether v is spelled as a replica user of another site is
// named when its own name is taken here: name@SITE or name@SITE.ID
// (ReplicaUsername). Such names are kept for them, so that nobody can take the name
// a farm's user will be known by.
func siteSpelling(v string) (name, site string, ok bool) {
	v = strings.ToLower(v)
	i := strings.LastIndexByte(v, '@')
	if i <= 0 {
		return "", "", false
	}
	name, site = v[:i], v[i+1:]
	if j := strings.LastIndexByte(site, '.'); j > 0 && strings.Trim(site[j+1:], "0123456789") == "" && j+1 < len(site) {
		site = site[:j]
	}
	return name, site, siteNamePattern.MatchString(site)
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

type confusable struct {
	from rune
	to   string
}

// prototype is what Unicode's confusables data (confusables_table.go) says r is drawn
// like, if it lists r.
func prototype(r rune) (string, bool) {
	i := sort.Search(len(confusables), func(i int) bool { return confusables[i].from >= r })
	if i < len(confusables) && confusables[i].from == r {
		return confusables[i].to, true
	}
	return "", false
}

// skeleton is UTS #39's skeleton of s: its NFD form with every character replaced by
// its prototype, in NFD again. Strings with one skeleton are confusable: "aIice"
// (capital I), "ɑlice" and "alıce" are "alice"; "rnary" is "mary".
func skeleton(s string) string {
	s = norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if p, ok := prototype(r); ok {
			b.WriteString(p)
		} else {
			b.WriteRune(r)
		}
	}
	return norm.NFD.String(b.String())
}

// UsernameLooks are the keys a username is indexed under by what it looks like: two
// names that share a key would be told apart by nobody reading a permission list, so
// a new name that shares one with an existing account is refused. The keys are taken
// of the normalised name (NormalizeUsername), ignoring case on top of UTS #39's
// skeleton, in two orders, since a capital I is both an i (by case) and an l (by
// look): the skeleton of the case-folded skeleton ("aIice" → "alice", "0lga" →
// "Olga" → "olga") and the skeleton of the case-folded name ("ALICE" → "alice",
// "Ivan" → "ivan"). One or two keys, distinct.
func UsernameLooks(name string) []string {
	n := NormalizeUsername(name)
	byLook := skeleton(cases.Fold().String(skeleton(n)))
	byCase := skeleton(cases.Fold().String(n))
	if byCase == byLook {
		return []string{byLook}
	}
	return []string{byLook, byCase}
}

// UsernamesLookAlike reports whether two usernames share a look (UsernameLooks).
func UsernamesLookAlike(a, b string) bool {
	lb := UsernameLooks(b)
	return slices.ContainsFunc(UsernameLooks(a), func(k string) bool { return slices.Contains(lb, k) })
}

// UsernameSkeleton is what a username looks like, case kept: UTS #39's skeleton of its
// normalised form. Two names with one skeleton differ in nothing a reader sees;
// names that only share a look (UsernameLooks) may differ in case.
func UsernameSkeleton(name string) string { return skeleton(NormalizeUsername(name)) }
