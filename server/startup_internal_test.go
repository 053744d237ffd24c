package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/gardend/gardend/store"
)

// TestAwaitStoreAnswersThenHandsOver: while open fails with ErrUnavailable the
// listener answers not ready; once it succeeds, AwaitStore returns the store and the
// listener is still open and accepts for whoever serves next.
func TestAwaitStoreAnswersThenHandsOver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	base := "http://" + ln.Addr().String()
	attempts := make(chan chan error)
	type result struct {
		st  store.Backend
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, _, err := AwaitStore(context.Background(), Config{DataDir: t.TempDir()}, ln, func(context.Context) (store.Backend, bool, error) {
			answer := make(chan error)
			attempts <- answer
			if err := <-answer; err != nil {
				return nil, false, err
			}
			return nil, false, nil
		})
		done <- result{st, err}
	}()
	unavailable := fmt.Errorf("open: %w: connection refused", store.ErrUnavailable)
	(<-attempts) <- unavailable
	answer := <-attempts // the second attempt waits for its answer: the node is waiting
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/companies": 503} {
		res, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%s while waiting: %d, want %d", path, res.StatusCode, want)
		}
	}
	answer <- nil
	if r := <-done; r.err != nil {
		t.Fatalf("AwaitStore: %v", r.err)
	}
	// The listener is handed over open: a connection made now is accepted by the
	// next server.
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("the listener after AwaitStore: %v", err)
	}
	_ = c.Close()
}

// TestAwaitStoreGivesUpOnLastingErrors: an error other than ErrUnavailable (a wrong
// password) is returned at once, not waited out.
func TestAwaitStoreGivesUpOnLastingErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	wrong := errors.New("password authentication failed")
	n := 0
	_, _, err = AwaitStore(context.Background(), Config{DataDir: t.TempDir()}, ln, func(context.Context) (store.Backend, bool, error) {
		n++
		if n == 1 {
			return nil, false, store.ErrUnavailable
		}
		return nil, false, wrong
	})
	if !errors.Is(err, wrong) || n != 2 {
		t.Errorf("AwaitStore: %v after %d attempts, want the lasting error after 2", err, n)
	}
}
