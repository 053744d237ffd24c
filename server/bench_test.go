package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"io"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// BenchmarkAuthGetUser measures token authentication plus GET /user through the
// whole handler stack, access logging included (to io.Discard).
func BenchmarkAuthGetUser(b *testing.B) {
	h := newHarness(b, func(c *server.Config) { c.Logger = zerolog.New(io.Discard) })
	token := h.register("ann")
	req := httptest.NewRequest("GET", "/user", nil)
	req.Header.Set("Authorization", "Token "+token)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkLogin measures one login with the production argon2id cost.
func BenchmarkLogin(b *testing.B) {
	h := newHarness(b, func(c *server.Config) {
		c.Argon2 = store.DefaultArgon2
		c.Logger = zerolog.New(io.Discard)
	})
	h.register("ann")
	body := `{"username":"ann","password":"pw-ann-123"}`
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/login", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}
