package store

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// When a hash's thread cannot be given a lower priority (a seccomp filter refusing
// setpriority), the hash still runs and the error is told once, however many hashes
// follow.
func TestHashPriorityErrorToldOnce(t *testing.T) {
	refused := errors.New("setpriority: operation not permitted")
	cheap := Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 16}
	for _, tc := range []struct {
		name  string
		lower func() error
		want  int
	}{
		{"refused", func() error { return refused }, 1},
		{"allowed", func() error { return nil }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPasswords(cheap, 4)
			p.lowerPriority = tc.lower
			var mu sync.Mutex
			var told []error
			p.OnPriorityError(func(err error) { mu.Lock(); told = append(told, err); mu.Unlock() })
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					h, err := p.Hash(context.Background(), "secret")
					if err != nil {
						t.Error(err)
						return
					}
					if ok, err := p.Verify(context.Background(), h, "secret"); !ok || err != nil {
						t.Errorf("verify: %v %v", ok, err)
					}
				})
			}
			wg.Wait()
			if len(told) != tc.want {
				t.Fatalf("told %d times (%v), want %d", len(told), told, tc.want)
			}
			if tc.want > 0 && !errors.Is(told[0], refused) {
				t.Fatalf("told %v, want %v", told[0], refused)
			}
		})
	}
}
