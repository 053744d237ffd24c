package store

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/argon2"
)

// Argon2Params are the argon2id cost parameters; they are stored in every hash so they
// can be raised later without invalidating old passwords.
type Argon2Params struct {
	Time    uint32
	Memory  uint32 // KiB
	Threads uint8
	KeyLen  uint32
}

// DefaultArgon2 costs about 40 ms per hash on a 2-core farm-edge box (measured; see
// README) and 64 MiB of memory, RFC 9106's memory-constrained recommendation.
var DefaultArgon2 = Argon2Params{Time: 1, Memory: 64 * 1024, Threads: 2, KeyLen: 32}

// Passwords hashes and verifies passwords with a cap on concurrent hashing, so a flood
// of logins queues instead of exhausting memory (each hash holds Memory KiB).
type Passwords struct {
	params  Argon2Params
	slots   chan struct{}
	waiting atomic.Int64 // callers queued for a slot (metrics)
}

// NewPasswords allows at most maxConcurrent hashes at once (at least 1).
func NewPasswords(p Argon2Params, maxConcurrent int) *Passwords {
	if maxConcurrent < 1 {
		maxConcurrent = 1
	}
	return &Passwords{params: p, slots: make(chan struct{}, maxConcurrent)}
}

func (p *Passwords) acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	default:
	}
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Passwords) release() { <-p.slots }

// Queue reports the hashes in progress and the callers waiting for a slot.
func (p *Passwords) Queue() (hashing, waiting int) { return len(p.slots), int(p.waiting.Load()) }

// Hash returns "$argon2id$v=19$m=…,t=…,p=…$salt$key".
func (p *Passwords) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	if err := p.acquire(ctx); err != nil {
		return "", err
	}
	defer p.release()
	key := argon2.IDKey([]byte(password), salt, p.params.Time, p.params.Memory, p.params.Threads, p.params.KeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version,
		p.params.Memory, p.params.Time, p.params.Threads, enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

var errBadHash = errors.New("unrecognised password hash")

// Verify reports whether password matches encoded, in constant time.
func (p *Passwords) Verify(ctx context.Context, encoded, password string) (bool, error) {
	if isDjangoHash(encoded) { // imported from PlantMap (password_django.go)
		return p.verifyDjango(ctx, encoded, password)
	}
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var par Argon2Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &par.Memory, &par.Time, &par.Threads); err != nil {
		return false, errBadHash
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[4])
	want, err2 := enc.DecodeString(parts[5])
	// Bounds stop a corrupted record from asking for gigabytes.
	if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 128 || par.Memory > 1<<21 || par.Time == 0 || par.Time > 64 || par.Threads == 0 {
		return false, errBadHash
	}
	if err := p.acquire(ctx); err != nil {
		return false, err
	}
	defer p.release()
	got := argon2.IDKey([]byte(password), salt, par.Time, par.Memory, par.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
