package store

import (
	"crypto/sha256"
	"time"
)

// DigestSize is the length of a token digest (SHA-256).
const DigestSize = sha256.Size

// TokenSize is the number of random bytes in a token; clients see them as hex.
const TokenSize = 32

// TokenDigest is what the store keeps of a token: the SHA-256 of its random bytes.
// Anything that is not 64 hex digits maps to the digest of nothing, which no token has.
func TokenDigest(token string) [DigestSize]byte {
	var raw [TokenSize]byte
	if len(token) != 2*TokenSize {
		return sha256.Sum256(nil)
	}
	for i := range raw {
		hi, ok1 := fromHex(token[2*i])
		lo, ok2 := fromHex(token[2*i+1])
		if !ok1 || !ok2 {
			return sha256.Sum256(nil)
		}
		raw[i] = hi<<4 | lo
	}
	return sha256.Sum256(raw[:])
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Token describes a stored token without revealing it.
type Token struct {
	// Prefix is the first hex characters of the digest, enough to tell tokens apart.
	Prefix  string    `json:"digest_prefix"`
	UserID  uint64    `json:"user_id"`
	Created time.Time `json:"created"`
	Expiry  time.Time `json:"expiry"`
}
