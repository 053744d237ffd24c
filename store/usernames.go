package store

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode"

	bolt "go.etcd.io/bbolt"
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

// skeletonKey is the index entry of a user: skeleton|0|id.
func skeletonKey(username string, id uint64) []byte {
	return append(append([]byte(UsernameSkeleton(username)), 0), itob(id)...)
}

func skeletonPrefix(username string) []byte {
	return append([]byte(UsernameSkeleton(username)), 0)
}

// claimUsername checks that name (normalised) is free for account id (0: a new one):
// no account has it, nor a name that looks the same. It returns ErrConflict naming
// which.
func claimUsername(tx *bolt.Tx, name string, id uint64) error {
	if other, ok := userIDByName(tx, name); ok && other != id {
		return fmt.Errorf("%w: username %q is already taken", ErrConflict, name)
	}
	c := tx.Bucket(bucketUsernameLooks).Cursor()
	prefix := skeletonPrefix(name)
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+8 && btoi(k[len(prefix):]) != id {
			return fmt.Errorf("%w: username %q looks like an existing account's; choose another", ErrConflict, name)
		}
	}
	return nil
}

// CheckUsernameFree is claimUsername on its own, for a caller that wants to refuse a
// taken name before it spends a hash; the write that takes the name checks again.
func (s *Store) CheckUsernameFree(name string, id uint64) error {
	return s.db.View(func(tx *bolt.Tx) error { return claimUsername(tx, NormalizeUsername(name), id) })
}

// putUsername indexes name as account id's, under its name and its skeleton.
func putUsername(tx *bolt.Tx, name string, id uint64) error {
	if err := tx.Bucket(bucketUsernames).Put([]byte(name), itob(id)); err != nil {
		return err
	}
	return tx.Bucket(bucketUsernameLooks).Put(skeletonKey(name, id), nil)
}

func deleteUsername(tx *bolt.Tx, name string, id uint64) error {
	if err := tx.Bucket(bucketUsernames).Delete([]byte(name)); err != nil {
		return err
	}
	return tx.Bucket(bucketUsernameLooks).Delete(skeletonKey(name, id))
}

// userIDByName finds the account a username means: the one of that exact name; else
// the one of its normalised form; else the one account stored before names were
// normalised whose name normalises the same (its owner may now type it plainly).
func userIDByName(tx *bolt.Tx, username string) (uint64, bool) {
	names := tx.Bucket(bucketUsernames)
	if v := names.Get([]byte(username)); v != nil {
		return btoi(v), true
	}
	normal := NormalizeUsername(username)
	if normal != username {
		if v := names.Get([]byte(normal)); v != nil {
			return btoi(v), true
		}
	}
	var found uint64
	n := 0
	c := tx.Bucket(bucketUsernameLooks).Cursor()
	prefix := skeletonPrefix(normal)
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) != len(prefix)+8 {
			continue
		}
		id := btoi(k[len(prefix):])
		if rec, err := getRecord[userRecord](tx, bucketUsers, "user", id); err == nil && NormalizeUsername(rec.Username) == normal {
			found, n = id, n+1
		}
	}
	return found, n == 1
}

// indexUsernameLooks builds the skeleton index of every account (schema 1 → 2).
func indexUsernameLooks(tx *bolt.Tx) error {
	looks := tx.Bucket(bucketUsernameLooks)
	return tx.Bucket(bucketUsernames).ForEach(func(k, v []byte) error {
		return looks.Put(skeletonKey(string(k), btoi(v)), nil)
	})
}
