package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// What checking a stored password hash costs, in logins: the unit is one check of a
// hash gardend writes with DefaultArgon2 (46 MiB, one pass: about 33 ms of CPU on a
// 2-core EPYC). The constants are the work of other kinds that costs as much, from the
// CPU time BenchmarkHashCosts measured on that machine (pbkdf2_sha256: 0.18 µs per
// iteration, so PlantMap's 320,000 cost 57 ms; bcrypt with 10 rounds: 59 ms; scrypt
// with N=16384, r=8: 45 ms).
const (
	pbkdf2SHA256PerLogin = 190_000 // iterations
	pbkdf2SHA1PerLogin   = 180_000 // iterations
	bcryptRoundsPerLogin = 560     // 2^cost
	scryptBlocksPerLogin = 100_000 // N·r·p
)

// MaxHashCost is the most a stored hash may cost to be checked, in logins. Every hash
// Django writes by default stays below it (PBKDF2 with Django 6.0's 1,200,000
// iterations: 6.3; bcrypt's 12 rounds: 7.3; argon2 with m=102400, t=2: 4.3; scrypt:
// 1.3); an imported hash above it is kept unusable (server/plantmap), and a stored one
// is never checked (ErrHashTooCostly): one wrong password would otherwise cost seconds
// of CPU (pbkdf2_sha1 with 10,000,000 iterations: 56 logins).
const MaxHashCost = 10

// ErrHashTooCostly: a stored hash costs more than MaxHashCost logins to check, so it
// is not checked; the account's password must be reset.
var ErrHashTooCostly = errors.New("password hash costs too much to check")

// cost is what a check with these parameters costs, in logins.
func (p Argon2Params) cost() float64 {
	unit := float64(DefaultArgon2.Memory) * float64(DefaultArgon2.Time)
	return float64(p.memoryKiB()) * float64(p.Time) / unit
}

// parsedHash is a stored hash ready to check: derive computes the stored value from a
// password, which is then compared with want in constant time.
type parsedHash struct {
	derive func(password string) ([]byte, error)
	want   []byte
	// memKiB is the memory derive allocates (argon2, scrypt; the others next to none),
	// taken from the hashing budget like any hash.
	memKiB uint64
	// kind is the algorithm and its cost parameters: hashes of one kind cost alike.
	kind string
	cost float64
}

func parseHash(encoded string) (parsedHash, error) {
	if isDjangoHash(encoded) { // imported from PlantMap (password_django.go)
		return parseDjango(encoded)
	}
	return parseArgon2id(encoded)
}

// parseCheckable parses encoded and refuses what Verify would not check: a hash too
// costly (MaxHashCost) or larger than the hashing budget.
func (p *Passwords) parseCheckable(encoded string) (parsedHash, error) {
	h, err := parseHash(encoded)
	if err != nil {
		return parsedHash{}, err
	}
	if h.memKiB > p.queue.memory {
		return parsedHash{}, fmt.Errorf("%w: it needs %d MiB, the budget is %d MiB (raise --max-hashing)", ErrHashBudget, h.memKiB>>10, p.queue.memory>>10)
	}
	if h.cost > MaxHashCost {
		return parsedHash{}, fmt.Errorf("%w: %s costs %.0f logins, at most %d are checked", ErrHashTooCostly, h.kind, h.cost, MaxHashCost)
	}
	return h, nil
}

// HashKind names the algorithm and cost parameters of encoded ("pbkdf2_sha256
// iterations=320000", "argon2id m=47104,t=1,p=1"), and what checking it costs, in
// logins; ok is false for an unusable hash or one gardend does not read.
func HashKind(encoded string) (kind string, cost float64, ok bool) {
	if UnusablePassword(encoded) {
		return "", 0, false
	}
	h, err := parseHash(encoded)
	if err != nil {
		return "", 0, false
	}
	return h.kind, h.cost, true
}

// Checkable is nil when Verify checks a password against encoded with a hash, else
// why not: unusable (ErrUnusable), unreadable, too costly (ErrHashTooCostly), or
// larger than the hashing budget (ErrHashBudget).
func (p *Passwords) Checkable(encoded string) error {
	if UnusablePassword(encoded) {
		return ErrUnusable
	}
	_, err := p.parseCheckable(encoded)
	return err
}

// ErrUnusable: the account has no usable password (Django's "!…"): an administrator
// sets one (gardend user reset-password).
var ErrUnusable = errors.New("the account has no usable password")

// HashKindCount is one kind of stored hash (HashKind): how many accounts hold one, and
// one of them.
type HashKindCount struct {
	Kind     string
	Cost     float64
	Accounts int
	Example  string
}

// CountHashKinds adds encoded to kinds, by HashKind; unusable and unreadable hashes
// are left out.
func CountHashKinds(kinds map[string]*HashKindCount, encoded string) {
	kind, cost, ok := HashKind(encoded)
	if !ok {
		return
	}
	if k := kinds[kind]; k != nil {
		k.Accounts++
		return
	}
	kinds[kind] = &HashKindCount{Kind: kind, Cost: cost, Accounts: 1, Example: encoded}
}

// SortedHashKinds lists kinds by kind.
func SortedHashKinds(kinds map[string]*HashKindCount) []HashKindCount {
	out := make([]HashKindCount, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, *k)
	}
	slices.SortFunc(out, func(a, b HashKindCount) int { return strings.Compare(a.Kind, b.Kind) })
	return out
}

// Decoy is a check that costs what checking one kind of stored hash costs and matches
// no password: the check of a login whose account does not exist, or cannot be
// checked, so that its answer takes as long as a real one.
type Decoy struct {
	h parsedHash
}

// Kind is the kind of hash the decoy costs as much as (HashKind).
func (d Decoy) Kind() string { return d.h.kind }

// Cost is what the decoy costs, in logins.
func (d Decoy) Cost() float64 { return d.h.cost }

// NewDecoy is a decoy of encoded's kind: its parameters, with a random value to match.
func (p *Passwords) NewDecoy(encoded string) (Decoy, error) {
	h, err := p.parseCheckable(encoded)
	if err != nil {
		return Decoy{}, err
	}
	want := make([]byte, len(h.want))
	if _, err := rand.Read(want); err != nil {
		return Decoy{}, err
	}
	if len(want) == 1 { // bcrypt reports its outcome as one byte: 1 would be a match
		want[0] = 2
	}
	h.want = want
	return Decoy{h: h}, nil
}

// DefaultDecoy is a decoy of the hashes this Passwords writes.
func (p *Passwords) DefaultDecoy() Decoy {
	salt, key := make([]byte, 16), make([]byte, p.params.KeyLen)
	_, _ = rand.Read(salt)
	_, _ = rand.Read(key)
	enc := base64.RawStdEncoding
	encoded := fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", p.params.Memory, p.params.Time, p.params.Threads,
		enc.EncodeToString(salt), enc.EncodeToString(key))
	d, err := p.NewDecoy(encoded)
	if err != nil {
		panic(fmt.Sprintf("decoy of gardend's own hash: %v", err)) // the parameters are gardend's
	}
	return d
}

// CheckDecoy runs d's check on password, as Verify would run a real one; it never
// matches.
func (p *Passwords) CheckDecoy(ctx context.Context, d Decoy, password string) error {
	_, err := p.check(ctx, d.h, password)
	return err
}

// SlowestDecoy picks, of the kinds of hash stored, the one whose check costs most (and
// that Verify checks), and returns a decoy of it; never cheaper than the default.
func (p *Passwords) SlowestDecoy(kinds []HashKindCount) Decoy {
	best := p.DefaultDecoy()
	for _, k := range kinds {
		if k.Cost <= best.h.cost || strings.HasPrefix(k.Example, "!") {
			continue
		}
		if d, err := p.NewDecoy(k.Example); err == nil {
			best = d
		}
	}
	return best
}
