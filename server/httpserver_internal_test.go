package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/store"
)

// A streaming response that outlives WriteTimeout is cut off unless the handler moves
// its write deadline with extendWriteDeadline. The handler is a
// test-only stand-in for the NDJSON beds listing, served like Run serves (same
// http.Server settings, observe's wrapped ResponseWriter) on a real listener.
func TestStreamingWriteDeadline(t *testing.T) {
	// Wide margins both ways: a step is 700 ms short of the timeout, and the whole
	// stream 800 ms longer than it, so a loaded machine cannot turn either outcome.
	const writeTimeout, step, lines = time.Second, 300 * time.Millisecond, 7
	s, err := newForTest(t, Config{DataDir: t.TempDir(), WriteTimeout: writeTimeout, Logger: zerolog.Nop(),
		Argon2: store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode := r.URL.Query().Get("mode")
		w.Header().Set("Content-Type", "application/x-ndjson")
		rc := http.NewResponseController(w)
		for i := range lines {
			if i > 0 {
				time.Sleep(step) // a slow spatial server between beds
			}
			if mode == "extend" {
				if err := s.extendWriteDeadline(w); err != nil {
					t.Errorf("extendWriteDeadline: %v", err)
				}
			}
			w.Write([]byte(`{"id":` + strconv.Itoa(i+1) + "}\n"))
			if rc.Flush() != nil {
				return
			}
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.newHTTPServer(ctx, s.observe(stream))
	go serve(hs, ln)
	defer hs.Close()

	// get returns how many whole lines arrived and whether the body ended cleanly.
	get := func(mode string) (int, error) {
		// A fresh connection each time: a cut-off one must not be reused.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + ln.Addr().String() + "/beds?mode=" + mode)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		n := 0
		for sc.Scan() {
			n++
		}
		return n, sc.Err()
	}

	if n, err := get("none"); err == nil && n == lines {
		t.Fatalf("without a helper the %v stream outlived WriteTimeout %v", lines*step, writeTimeout)
	} else {
		t.Logf("without a helper: %d of %d lines, then %v", n, lines, err)
	}
	if n, err := get("extend"); err != nil || n != lines {
		t.Fatalf("extend: %d of %d lines, error %v", n, lines, err)
	}
}

// Under httptest.ResponseRecorder there is no connection: the helper does nothing.
func TestWriteDeadlineWithoutConnection(t *testing.T) {
	s := &Server{cfg: Config{WriteTimeout: time.Second}}
	rec := httptest.NewRecorder()
	if err := s.extendWriteDeadline(rec); err != nil {
		t.Fatal(err)
	}
}
