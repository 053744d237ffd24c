package store

import (
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/scrypt"
)

// Password hashes imported from the Django PlantMap server are kept as Django wrote
// them, "<algorithm>$<fields…>", and verified here until the user's first successful
// login replaces them with gardend's argon2id (Passwords.NeedsRehash). Django's default
// hashers are supported; a hash Django marks unusable ("!…") never matches. The cost
// parameters come from an imported file, so each is bounded: a crafted hash must not
// turn one login into minutes of CPU or gigabytes of memory.

// Django hasher names, as the first field of a hash.
const (
	djangoPBKDF2SHA256 = "pbkdf2_sha256"
	djangoPBKDF2SHA1   = "pbkdf2_sha1"
	djangoArgon2       = "argon2"
	djangoBcryptSHA256 = "bcrypt_sha256"
	djangoBcrypt       = "bcrypt"
	djangoScrypt       = "scrypt"
)

// Bounds on imported cost parameters, well above any Django default (PBKDF2: 1,000,000
// iterations in Django 5.2; bcrypt: 12 rounds; scrypt: N = 2^14, r = 8).
const (
	maxPBKDF2Iterations = 10_000_000
	maxBcryptCost       = 16
	maxScryptMemory     = 256 << 20 // bytes: 128·N·r
)

// UnusablePassword reports whether encoded is a hash no password matches: Django's "!"
// prefix (an account that may not log in with a password).
func UnusablePassword(encoded string) bool { return strings.HasPrefix(encoded, "!") }

// DjangoHashAlgorithm names the Django hasher of encoded and reports whether gardend
// verifies it. Unusable hashes report "unusable" and true (they are understood: they
// never match).
func DjangoHashAlgorithm(encoded string) (name string, supported bool) {
	if UnusablePassword(encoded) {
		return "unusable", true
	}
	name, _, _ = strings.Cut(encoded, "$")
	switch name {
	case djangoPBKDF2SHA256, djangoPBKDF2SHA1, djangoArgon2, djangoBcryptSHA256, djangoBcrypt, djangoScrypt:
		_, err := parseDjango(encoded)
		return name, err == nil
	}
	return name, false
}

// isDjangoHash tells a Django hash from gardend's own ("$argon2id$…").
func isDjangoHash(encoded string) bool {
	return encoded != "" && !strings.HasPrefix(encoded, "$")
}

// NeedsRehash reports whether encoded is not gardend's own kind of hash, so a login
// that verified it should replace it.
func (p *Passwords) NeedsRehash(encoded string) bool {
	return !strings.HasPrefix(encoded, "$argon2id$")
}

func parseDjango(encoded string) (parsedHash, error) {
	bad := func(why string) (parsedHash, error) {
		return parsedHash{}, fmt.Errorf("%w: %s", errBadHash, why)
	}
	alg, rest, _ := strings.Cut(encoded, "$")
	switch alg {
	case djangoPBKDF2SHA256, djangoPBKDF2SHA1:
		parts := strings.Split(rest, "$")
		if len(parts) != 3 {
			return bad(alg + " needs iterations, salt and hash")
		}
		iter, err := strconv.Atoi(parts[0])
		want, err2 := base64.StdEncoding.DecodeString(parts[2])
		if err != nil || err2 != nil || iter < 1 || iter > maxPBKDF2Iterations || len(want) == 0 || len(want) > 64 {
			return bad(alg + " iterations or hash out of range")
		}
		newHash := sha256.New
		if alg == djangoPBKDF2SHA1 {
			newHash = func() hash.Hash { return sha1.New() }
		}
		salt := []byte(parts[1])
		perLogin := pbkdf2SHA256PerLogin
		if alg == djangoPBKDF2SHA1 {
			perLogin = pbkdf2SHA1PerLogin
		}
		return parsedHash{want: want, derive: func(pw string) ([]byte, error) {
			return pbkdf2.Key(newHash, pw, salt, iter, len(want))
		}, kind: fmt.Sprintf("%s iterations=%d", alg, iter), cost: float64(iter) / float64(perLogin)}, nil

	case djangoArgon2:
		// argon2-cffi's encoding follows the name: argon2id$v=19$m=…,t=…,p=…$salt$hash
		// (base64 without padding).
		parts := strings.Split(rest, "$")
		if len(parts) != 5 || (parts[0] != "argon2id" && parts[0] != "argon2i") {
			return bad("argon2 needs argon2id or argon2i with version, parameters, salt and hash")
		}
		var version int
		if _, err := fmt.Sscanf(parts[1], "v=%d", &version); err != nil || version != argon2.Version {
			return bad("argon2 version must be 19")
		}
		var par Argon2Params
		if _, err := fmt.Sscanf(parts[2], "m=%d,t=%d,p=%d", &par.Memory, &par.Time, &par.Threads); err != nil {
			return bad("argon2 parameters")
		}
		enc := base64.RawStdEncoding
		salt, err1 := enc.DecodeString(strings.TrimRight(parts[3], "="))
		want, err2 := enc.DecodeString(strings.TrimRight(parts[4], "="))
		if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 128 || par.Memory > 1<<21 || par.Time == 0 || par.Time > 64 || par.Threads == 0 {
			return bad("argon2 salt, hash or cost out of range")
		}
		key := argon2.IDKey
		if parts[0] == "argon2i" {
			key = argon2.Key
		}
		return parsedHash{want: want, derive: func(pw string) ([]byte, error) {
			return key([]byte(pw), salt, par.Time, par.Memory, par.Threads, uint32(len(want))), nil
		}, memKiB: par.memoryKiB(), kind: fmt.Sprintf("%s %s %s", alg, parts[0], parts[2]), cost: par.cost()}, nil

	case djangoBcryptSHA256, djangoBcrypt:
		// The bcrypt string follows an empty field: "bcrypt$$2b$12$…".
		data := rest
		if !strings.HasPrefix(data, "$") {
			return bad(alg + " needs an empty field before the bcrypt hash")
		}
		cost, err := bcrypt.Cost([]byte(data))
		if err != nil || cost > maxBcryptCost {
			return bad(alg + " hash or cost out of range")
		}
		// bcrypt compares internally; derive reports the outcome as one byte.
		return parsedHash{want: []byte{1}, kind: fmt.Sprintf("%s cost=%d", alg, cost),
			cost: float64(uint64(1)<<cost) / bcryptRoundsPerLogin, derive: func(pw string) ([]byte, error) {
				if alg == djangoBcryptSHA256 {
					sum := sha256.Sum256([]byte(pw))
					pw = hex.EncodeToString(sum[:])
				}
				if bcrypt.CompareHashAndPassword([]byte(data), []byte(pw)) == nil {
					return []byte{1}, nil
				}
				return []byte{0}, nil
			}}, nil

	case djangoScrypt:
		// scrypt$N$salt$r$p$hash
		parts := strings.Split(rest, "$")
		if len(parts) != 5 {
			return bad("scrypt needs N, salt, r, p and hash")
		}
		n, err1 := strconv.Atoi(parts[0])
		r, err2 := strconv.Atoi(parts[2])
		par, err3 := strconv.Atoi(parts[3])
		want, err4 := base64.StdEncoding.DecodeString(parts[4])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil ||
			n < 2 || n&(n-1) != 0 || r < 1 || r > 64 || par < 1 || par > 16 || int64(128)*int64(n)*int64(r) > maxScryptMemory ||
			len(want) == 0 || len(want) > 128 {
			return bad("scrypt parameters or hash out of range")
		}
		salt := []byte(parts[1])
		return parsedHash{want: want, derive: func(pw string) ([]byte, error) {
			return scrypt.Key([]byte(pw), salt, n, r, par, len(want))
		}, memKiB: uint64(128*n*r) / 1024, kind: fmt.Sprintf("scrypt N=%d,r=%d,p=%d", n, r, par),
			cost: float64(n) * float64(r) * float64(par) / scryptBlocksPerLogin}, nil
	}
	return bad(fmt.Sprintf("%q is not a password hasher gardend verifies", alg))
}
