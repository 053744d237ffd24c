package server

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/gardend/gardend/store"
)

func (s *Server) accountRoutes() []route {
	return []route{
		{method: "POST", path: "/register", handler: s.handleRegister, public: true},
		{method: "POST", path: "/login", handler: s.handleLogin, public: true},
		{method: "POST", path: "/logout", handler: s.handleLogout},
		{method: "POST", path: "/logoutall", handler: s.handleLogoutAll},
		{method: "GET", path: "/user", handler: s.handleGetUser},
		{method: "PUT", path: "/user", handler: s.handlePutUser},
		{method: "POST", path: "/user/widgets", handler: s.handleSaveWidgets, maxBody: store.MaxWidgetsBytes},
		{method: "GET", path: "/user/widgets", handler: s.handleGetWidgets},
	}
}

type registerRequest struct {
	Username  *string `json:"username"`
	Password  *string `json:"password"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	Email     *string `json:"email"`
}

func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Registration == RegistrationClosed {
		s.writeError(w, r, forbidden("registration is closed; ask an administrator"))
		return
	}
	var req registerRequest
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	in, password, err := req.validate()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Fail fast on a taken name before spending a hash on it; CreateUser re-checks.
	if err := s.usernameFree(in.Username, 0); err != nil {
		s.writeError(w, r, err)
		return
	}
	// Reserved before the hash; only an account created counts.
	reg, err := s.registrations.begin(r.Context(), clientAddr(r, s.cfg.TrustProxy))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	created := false
	defer func() { reg.settle(created) }()
	// Behind every login and password change in the hashing line.
	in.PasswordHash, err = s.pw.HashAs(r.Context(), store.Background, password)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	u, err := s.store.CreateUser(in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	created = true
	res, err := s.issueToken(u)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header()["Cache-Control"] = headerNoStore // the body is a token
	s.writeJSON(w, r, http.StatusCreated, res)
}

// validate checks every field, as CreateUser will, before any hash is spent: the new
// account and the clear-text password.
func (req registerRequest) validate() (store.NewUser, string, error) {
	v := &store.ValidationError{}
	required := func(field string, p *string) string {
		if p == nil {
			v.Add(field, field+" is required")
			return ""
		}
		return *p
	}
	in := store.NewUser{
		Username:  required("username", req.Username),
		FirstName: required("first_name", req.FirstName),
		LastName:  required("last_name", req.LastName),
	}
	password := required("password", req.Password)
	if req.Email != nil {
		in.Email = *req.Email
	}
	var fields *store.ValidationError
	if errors.As(in.Validate(), &fields) {
		for f, msg := range fields.Fields {
			v.Add(f, msg)
		}
	}
	if req.Password != nil {
		if msg := store.ValidatePassword(password, in.Username); msg != "" {
			v.Add("password", msg)
		}
	}
	return in, password, v.OrNil()
}

var errBadCredentials = badRequest("", "unable to log in with the provided credentials")

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	username, password, err := loginCredentials(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The account first: the limit counts per account, however its name was spelt.
	who, err := s.identify(username)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Reserved before the hash is spent, so parallel guesses stay within the limit;
	// counted only when the password was checked and found wrong.
	attempt, err := s.logins.begin(r.Context(), who.key, clientAddr(r, s.cfg.TrustProxy))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	wrong := false
	defer func() { attempt.settle(wrong) }()
	u := who.user
	// An unknown username costs a check too (the decoy): response time does not reveal
	// which usernames exist. A check that never ran (the client went away while it
	// queued) checked nothing.
	ok, err := s.checkLogin(r.Context(), who, password)
	if err != nil || !ok {
		if err != nil && r.Context().Err() == nil {
			s.log.Error().Err(err).Uint64("user_id", u.ID).Msg("verify password")
		}
		wrong = err == nil
		s.writeError(w, r, errBadCredentials)
		return
	}
	if s.hooks.verified != nil {
		s.hooks.verified(u.Username)
	}
	// The token is created only if the password just checked is still the account's
	// and no logout everywhere happened meanwhile: hashing takes a while, and a
	// password change in that time must shut this login out too.
	res, err := s.issueToken(u)
	if errors.Is(err, store.ErrCredentialsChanged) {
		err = errBadCredentials
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.upgradePassword(r.Context(), u, password)
	if ri := infoOf(r); ri != nil {
		ri.userID = u.ID
	}
	w.Header()["Cache-Control"] = headerNoStore
	s.writeJSON(w, r, http.StatusOK, res)
}

// loginCredentials reads username and password from a form or a JSON body.
func loginCredentials(r *http.Request) (username, password string, err error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/x-www-form-urlencoded", "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
			var big *http.MaxBytesError
			if errors.As(err, &big) {
				return "", "", err
			}
			return "", "", badRequest("body", "malformed form body")
		}
		username, password = r.PostFormValue("username"), r.PostFormValue("password")
	default:
		var req struct {
			Username *string `json:"username"`
			Password *string `json:"password"`
		}
		if err := decodeJSON(r, &req); err != nil {
			return "", "", err
		}
		if req.Username != nil {
			username = *req.Username
		}
		if req.Password != nil {
			password = *req.Password
		}
	}
	v := &store.ValidationError{}
	if username == "" {
		v.Add("username", "username is required")
	}
	if password == "" {
		v.Add("password", "password is required")
	}
	return username, password, v.OrNil()
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	token, _ := bearerToken(r)
	if err := s.store.RevokeToken(store.TokenDigest(token)); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeRawJSON(w, http.StatusOK, []byte("{}"))
}

func (s *Server) handleLogoutAll(w http.ResponseWriter, r *http.Request) {
	if _, err := s.store.RevokeUserTokens(currentUser(r).ID, nil); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeRawJSON(w, http.StatusOK, []byte("{}"))
}

func (s *Server) handleGetUser(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, currentUser(r))
}

type userUpdateRequest struct {
	Username  *string `json:"username"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	Password  *string `json:"password"`
	Email     *string `json:"email"`
}

func (s *Server) handlePutUser(w http.ResponseWriter, r *http.Request) {
	var req userUpdateRequest
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Username == nil && req.FirstName == nil && req.LastName == nil && req.Password == nil && req.Email == nil {
		s.writeError(w, r, badRequest("body", "send at least one of username, first_name, last_name, password, email"))
		return
	}
	me := currentUser(r)
	if err := s.atHome("user", me.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	up := store.UserUpdate{Username: req.Username, FirstName: req.FirstName, LastName: req.LastName, Email: req.Email}
	if err := up.Validate(); err != nil {
		s.writeError(w, r, err)
		return
	}
	// The password must not equal the username, whichever of the two changes: the
	// rule is checked against the account as authenticated, and the update applies
	// only if neither changed since.
	if req.Username != nil || req.Password != nil {
		up.IfUnchanged = me
	}
	switch {
	case req.Password != nil:
		name := me.Username
		if req.Username != nil {
			name = *req.Username
		}
		if msg := store.ValidatePassword(*req.Password, name); msg != "" {
			s.writeError(w, r, badRequest("password", msg))
			return
		}
		hash, err := s.pw.Hash(r.Context(), *req.Password)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		token, _ := bearerToken(r)
		digest := store.TokenDigest(token)
		up.PasswordHash, up.KeepToken = &hash, digest[:]
	case req.Username != nil:
		if err := s.usernameFree(*req.Username, me.ID); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.checkNotPassword(r, me, *req.Username); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	u, err := s.store.UpdateUser(me.ID, up)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, u)
}

// usernameFree refuses, naming the field, a username taken by another account than
// id (0: none) or looking like one.
func (s *Server) usernameFree(name string, id uint64) error {
	err := s.store.CheckUsernameFree(name, id)
	if errors.Is(err, store.ErrConflict) {
		return badRequest("username", detailOf(err, store.ErrConflict))
	}
	return err
}

// checkNotPassword refuses a new username that is the account's current password (as
// typed or as it will be stored), which the rule checked when the password was set
// could not foresee. It costs a hash, as a password check does.
func (s *Server) checkNotPassword(r *http.Request, me *store.User, username string) error {
	candidates := []string{username}
	if normal := store.NormalizeUsername(username); normal != username {
		candidates = append(candidates, normal)
	}
	for _, c := range candidates {
		same, err := s.pw.Verify(r.Context(), me.PasswordHash, c)
		if err != nil {
			if r.Context().Err() != nil {
				return err
			}
			// A hash this build cannot check: the rule cannot be either.
			s.log.Warn().Err(err).Uint64("user_id", me.ID).Msg("rename: cannot compare the new username with the password")
			return nil
		}
		if same {
			return badRequest("username", "username must not equal the password")
		}
	}
	return nil
}

func (s *Server) handleSaveWidgets(w http.ResponseWriter, r *http.Request) {
	if err := s.atHome("user", currentUser(r).ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	if !isJSON(r) {
		s.writeError(w, r, &apiError{status: http.StatusUnsupportedMediaType, detail: "send the widgets as application/json"})
		return
	}
	// Past the route's limit the read fails with *http.MaxBytesError: 413, with or
	// without a Content-Length.
	doc, err := io.ReadAll(r.Body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.store.SaveWidgets(currentUser(r).ID, doc); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeRawJSON(w, http.StatusCreated, doc)
}

func (s *Server) handleGetWidgets(w http.ResponseWriter, r *http.Request) {
	doc, err := s.store.Widgets(currentUser(r).ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if doc == nil {
		doc = []byte("{}")
	}
	writeRawJSON(w, http.StatusOK, doc)
}
