package server

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/gardend/gardend/store"
)

// authed wraps a handler that needs a valid token; the user is in the context.
func (s *Server) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			s.writeError(w, r, store.ErrUnauthenticated)
			return
		}
		u, err := s.store.Authenticate(store.TokenDigest(token))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ri := infoOf(r)
		ri.userID, ri.user = u.ID, &u
		w.Header()["Cache-Control"] = headerNoStore
		next(w, r)
	}
}

// currentUser is the authenticated user; only valid under authed.
func currentUser(r *http.Request) *store.User { return infoOf(r).user }

// bearerToken extracts the token of "Authorization: Token <token>".
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Token") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// issueToken creates and stores a fresh token for the user whose password was just
// checked, and returns it with its expiry. verified is the user as read before the
// check: when its credentials changed since, it is store.ErrCredentialsChanged.
func (s *Server) issueToken(verified store.User) (loginResult, error) {
	var raw [store.TokenSize]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return loginResult{}, err
	}
	token := hex.EncodeToString(raw[:])
	expiry := s.cfg.Now().Add(s.cfg.TokenTTL).UTC().Truncate(time.Second)
	if err := s.store.CreateLoginToken(verified, store.TokenDigest(token), expiry); err != nil {
		return loginResult{}, err
	}
	return loginResult{Token: token, Expiry: expiry}, nil
}

type loginResult struct {
	Token  string    `json:"token"`
	Expiry time.Time `json:"expiry"`
}
