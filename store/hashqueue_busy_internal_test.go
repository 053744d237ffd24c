package store

import (
	"context"
	"fmt"
	"testing"
)

// TestHashQueueBusy: onBusy hears when hashing starts and when it stops, once each,
// not when a slot passes straight from one hash to the next in line.
func TestHashQueueBusy(t *testing.T) {
	q := newHashQueue(1, 100)
	var seen []int
	q.onBusy = func() {
		running, _ := q.counts()
		seen = append(seen, running)
	}
	ctx := context.Background()
	if err := q.acquire(ctx, Foreground, 10); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[1]" {
		t.Fatalf("after the first hash began: %v", seen)
	}
	l := newLineUp(q)
	l.join(ctx, "login", Foreground, 10)
	q.release(10) // handed on to the waiting login
	if got := l.next(t); got != "login" {
		t.Fatal(got)
	}
	if fmt.Sprint(seen) != "[1]" {
		t.Fatalf("a slot handed on was reported: %v", seen)
	}
	q.release(10)
	if fmt.Sprint(seen) != "[1 0]" {
		t.Fatalf("after the last hash ended: %v", seen)
	}
	// A caller that gives up while waiting changes nothing.
	if err := q.acquire(ctx, Foreground, 10); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	l.join(cctx, "gives up", Foreground, 10)
	cancel()
	if got := l.next(t); got != "gives up: context canceled" {
		t.Fatal(got)
	}
	q.release(10)
	if fmt.Sprint(seen) != "[1 0 1 0]" {
		t.Fatalf("with a caller that gave up: %v", seen)
	}
}

// TestOnHashing: the hook of Passwords sees a real hash start and end.
func TestOnHashing(t *testing.T) {
	p := NewPasswords(Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 16}, 1)
	var seen []int
	p.OnHashing(func() {
		running, _ := p.Queue()
		seen = append(seen, running)
	})
	if _, err := p.Hash(context.Background(), "correct horse"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[1 0]" {
		t.Fatalf("running hashes seen by the hook: %v", seen)
	}
}
