package store

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// DefaultArgon2 is OWASP's argon2id recommendation (46 MiB, one pass, one lane): about
// 40 ms of CPU per hash on a farm-edge box (BenchmarkLoginFlood), so two cores check
// some 45 passwords a second. One lane: a hash runs on one thread, the low-priority
// one Passwords gives it, and a busy server hashes on every core at once anyway.
// Hashes stored with other parameters (gardend wrote 64 MiB and two lanes before)
// still verify.
var DefaultArgon2 = Argon2Params{Time: 1, Memory: 46 * 1024, Threads: 1, KeyLen: 32}

// SlotMemory is the memory each hashing slot may hold at least: that of the hashes
// gardend wrote before DefaultArgon2 took 46 MiB, so that they verify with one slot.
const SlotMemory = 64 << 20

// memoryKiB is what a hash with these parameters allocates: argon2 rounds the memory
// down to whole segments and up to at least two blocks per segment.
func (p Argon2Params) memoryKiB() uint64 {
	lanes := 4 * uint64(p.Threads)
	return max(uint64(p.Memory)/lanes*lanes, 2*lanes)
}

// MemoryBytes is what one hash with these parameters allocates.
func (p Argon2Params) MemoryBytes() uint64 { return p.memoryKiB() * 1024 }

// Priority orders hashes that wait for the hashing budget.
type Priority uint8

const (
	// Foreground is for people with an account: logins (and their decoy hashes for
	// unknown usernames, which must cost the same), password changes, the CLI.
	Foreground Priority = iota
	// Background is for registrations: they run only when no foreground hash waits,
	// so a registration flood cannot slow down the logins of existing accounts.
	Background
)

// ErrHashBudget: a stored hash asks for more memory than all hashing slots together
// may use, so it is not checked (the budget is a hard cap).
var ErrHashBudget = errors.New("password hash needs more memory than the hashing budget")

// Passwords hashes and verifies passwords. Every hash waits for a hashing slot and its
// memory in one line, first come first served (foreground before background): at most
// maxConcurrent hashes run at once and together they never hold more than
// maxConcurrent × the memory of the default parameters, whatever the parameters of
// stored hashes ask for. A flood of logins therefore queues in order instead of
// exhausting memory, and the hashes that run do not share the cores with more hashes
// than there are cores.
type Passwords struct {
	params Argon2Params
	queue  *hashQueue
	hashes atomic.Uint64

	lowerPriority func() error // lowerThreadPriority; tests make it fail
	priorityOnce  sync.Once
	priorityWarn  func(error)
}

// NewPasswords allows at most maxConcurrent hashes at once (at least 1), within
// HashingBudget(p, maxConcurrent).
func NewPasswords(p Argon2Params, maxConcurrent int) *Passwords {
	maxConcurrent = max(maxConcurrent, 1)
	return &Passwords{params: p, queue: newHashQueue(maxConcurrent, HashingBudget(p, maxConcurrent)/1024),
		lowerPriority: lowerThreadPriority}
}

// OnPriorityError sets what is told, once, the first time a hash's thread cannot be
// given a lower priority (hashes then compete with requests for the cores). Call it
// before the first hash.
func (p *Passwords) OnPriorityError(warn func(error)) { p.priorityWarn = warn }

// onHashThread runs fn on a hashing thread of lower priority.
func (p *Passwords) onHashThread(fn func()) {
	if err := onHashThread(p.lowerPriority, fn); err != nil && p.priorityWarn != nil {
		p.priorityOnce.Do(func() { p.priorityWarn(err) })
	}
}

// HashingBudget is the memory, in bytes, that maxConcurrent hashes may hold together:
// SlotMemory each, or what a hash with p needs if that is more, so that the hashes
// gardend writes and wrote by default always verify (with cheaper parameters too).
func HashingBudget(p Argon2Params, maxConcurrent int) uint64 {
	return uint64(max(maxConcurrent, 1)) * max(p.MemoryBytes(), SlotMemory)
}

// OnHashing sets fn to be called each time hashing starts (a slot is taken while none
// was) or stops (the last slot is given back); fn reads Queue to know which. It is
// called outside any lock, before the hash runs. Set it before the first hash.
func (p *Passwords) OnHashing(fn func()) { p.queue.onBusy = fn }

// Hashes is how many argon2 hashes were computed (hashed or verified) so far.
func (p *Passwords) Hashes() uint64 { return p.hashes.Load() }

// Queue reports the hashes in progress and the callers waiting for a slot.
func (p *Passwords) Queue() (hashing, waiting int) { return p.queue.counts() }

// MemoryBudget is the most memory, in bytes, that hashes in progress hold together.
func (p *Passwords) MemoryBudget() uint64 { return p.queue.memory * 1024 }

// acquire waits for a slot and memKiB of the budget; call release when the hash is
// done. A context already done returns its error without taking anything.
func (p *Passwords) acquire(ctx context.Context, prio Priority, memKiB uint64) (release func(), err error) {
	if memKiB > p.queue.memory {
		return nil, fmt.Errorf("%w: it needs %d MiB, the budget is %d MiB (raise --max-hashing)", ErrHashBudget, memKiB>>10, p.queue.memory>>10)
	}
	if err := p.queue.acquire(ctx, prio, memKiB); err != nil {
		return nil, err
	}
	return func() { p.hashes.Add(1); p.queue.release(memKiB) }, nil
}

// Hash returns "$argon2id$v=19$m=…,t=…,p=…$salt$key", as a foreground hash.
func (p *Passwords) Hash(ctx context.Context, password string) (string, error) {
	return p.HashAs(ctx, Foreground, password)
}

// HashAs is Hash with the priority of the hash in the line.
func (p *Passwords) HashAs(ctx context.Context, prio Priority, password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	release, err := p.acquire(ctx, prio, p.params.memoryKiB())
	if err != nil {
		return "", err
	}
	defer release()
	var key []byte
	p.onHashThread(func() {
		key = argon2.IDKey([]byte(password), salt, p.params.Time, p.params.Memory, p.params.Threads, p.params.KeyLen)
	})
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version,
		p.params.Memory, p.params.Time, p.params.Threads, enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

var errBadHash = errors.New("unrecognised password hash")

// Verify reports whether password matches encoded, in constant time, as a foreground
// hash. Once the hash has started it runs to the end whatever ctx says, so a result
// (right or wrong) always means the password was checked. An unusable hash ("!…")
// matches nothing; one that cannot be checked (Checkable) is an error, and costs no
// hash.
func (p *Passwords) Verify(ctx context.Context, encoded, password string) (bool, error) {
	if UnusablePassword(encoded) {
		return false, nil
	}
	h, err := p.parseCheckable(encoded)
	if err != nil {
		return false, err
	}
	return p.check(ctx, h, password)
}

// check derives h's value from password on a hashing slot and compares it with the
// stored one.
func (p *Passwords) check(ctx context.Context, h parsedHash, password string) (bool, error) {
	release, err := p.acquire(ctx, Foreground, h.memKiB)
	if err != nil {
		return false, err
	}
	defer release()
	var got []byte
	var derr error
	p.onHashThread(func() { got, derr = h.derive(password) })
	if derr != nil {
		return false, nil // a password the hasher cannot take matches nothing
	}
	return subtle.ConstantTimeCompare(got, h.want) == 1, nil
}

// parseArgon2id reads a hash gardend wrote: $argon2id$v=19$m=…,t=…,p=…$salt$key.
func parseArgon2id(encoded string) (parsedHash, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return parsedHash{}, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return parsedHash{}, errBadHash
	}
	var par Argon2Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &par.Memory, &par.Time, &par.Threads); err != nil {
		return parsedHash{}, errBadHash
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[4])
	want, err2 := enc.DecodeString(parts[5])
	// Bounds stop a corrupted record from asking for gigabytes or hours.
	if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 128 || par.Memory > 1<<21 || par.Time == 0 || par.Time > 64 || par.Threads == 0 {
		return parsedHash{}, errBadHash
	}
	return parsedHash{want: want, memKiB: par.memoryKiB(), kind: "argon2id " + parts[3], cost: par.cost(),
		derive: func(pw string) ([]byte, error) {
			return argon2.IDKey([]byte(pw), salt, par.Time, par.Memory, par.Threads, uint32(len(want))), nil
		}}, nil
}
