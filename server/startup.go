package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/gardend/gardend/store"
)

// A node of a shared database may start while the database is down (the whole site
// restarting, a failover). It does not exit: it listens at once, answers /readyz 503
// naming the database check (so a proxy keeps it out of rotation) and every other
// request 503 with Retry-After, and opens the store again with backoff until it can;
// then Run serves on the same listener.

// Store-opening backoff: the first retry after awaitFirst, doubling up to awaitMax,
// so that a node serves within awaitMax of the database coming back.
const (
	awaitFirst = 250 * time.Millisecond
	awaitMax   = 2 * time.Second
)

// AwaitStore opens the store with open, again and again while it fails with
// store.ErrUnavailable, answering on ln meanwhile as above; every failed attempt is
// logged (open's errors carry no password). Any other error (a wrong password, a bad
// connection string, a newer schema) does not get better by waiting and is returned
// at once, as is ctx's when it ends first. ln stays open for Run (Config.Listener).
func AwaitStore(ctx context.Context, cfg Config, ln net.Listener, open func(context.Context) (store.Backend, bool, error)) (store.Backend, bool, error) {
	st, created, err := open(ctx)
	if err == nil || !errors.Is(err, store.ErrUnavailable) {
		return st, created, err
	}
	cfg.setDefaults()
	log := cfg.Logger
	tlsConfig, terr := loadTLS(cfg.TLSCertFile, cfg.TLSKeyFile, cfg.Now(), log)
	if terr != nil {
		return nil, false, terr
	}
	tcp, ok := ln.(*net.TCPListener)
	if !ok {
		return nil, false, err // no way to hand the listener over: fail as before
	}
	began := time.Now()
	hs := &http.Server{
		Handler:           http.HandlerFunc(handleAwaitingStore),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		TLSConfig:         tlsConfig.Clone(),
		ErrorLog:          newStdLogger(log),
	}
	hs.SetKeepAlivesEnabled(false) // one answer per connection: none outlives the wait
	perAddr := cfg.MaxConnsPerAddr
	if cfg.TrustProxy {
		perAddr = 0
	}
	lim := newConnLimiter(handoffListener{tcp}, cfg.MaxConns, perAddr, log)
	hs.ConnState = lim.track
	served := make(chan error, 1)
	go func() { served <- serve(hs, lim) }()
	defer func() {
		// Stop answering (handoffListener.Close ends the Accept under way), then give
		// the listener back: the connections queued meanwhile wait for Run.
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if err := hs.Shutdown(shut); err != nil {
			_ = hs.Close()
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Msg("answering while the database was unavailable")
		}
		_ = tcp.SetDeadline(time.Time{})
	}()

	wait := awaitFirst
	for attempt := 1; ; attempt++ {
		log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", wait).Str("addr", ln.Addr().String()).
			Msg("database unavailable: waiting for it; /readyz answers 503 meanwhile")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false, ctx.Err()
		case <-t.C:
		}
		st, created, err = open(ctx)
		switch {
		case err == nil:
			log.Info().Int("attempts", attempt+1).Dur("waited", time.Since(began).Round(time.Millisecond)).Msg("database available")
			return st, created, nil
		case !errors.Is(err, store.ErrUnavailable):
			return nil, false, err
		}
		wait = min(2*wait, awaitMax)
	}
}

// handoffListener is the listener while AwaitStore answers on it: closing it (as
// http.Server.Shutdown does) only ends the Accept under way, with a deadline, and
// leaves it open for Run.
type handoffListener struct{ *net.TCPListener }

func (l handoffListener) Close() error { return l.SetDeadline(time.Now()) }

// handleAwaitingStore answers while the store cannot be opened: alive, not ready.
func handleAwaitingStore(w http.ResponseWriter, r *http.Request) {
	w.Header()["Cache-Control"] = headerNoStore
	w.Header().Set("Retry-After", "2")
	switch r.URL.Path {
	case "/healthz":
		writeRawJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	case "/readyz":
		writeRawJSON(w, http.StatusServiceUnavailable,
			[]byte(`{"status":"not ready","failing":["database"]}`))
	default:
		p := newProblem(http.StatusServiceUnavailable, "the server is starting: the database is unavailable; try again in a moment", nil)
		writeProblem(w, p)
	}
}
