package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/store"
)

// apiError is an error the handler already knows the status of.
type apiError struct {
	status int
	detail string
	fields map[string]string
	// retryAfter, when set, is sent as Retry-After (429, 503).
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.detail }

func badRequest(field, msg string) error {
	e := &apiError{status: http.StatusBadRequest, detail: msg}
	if field != "" {
		e.fields = map[string]string{field: msg}
	}
	return e
}

func notFound(msg string) error  { return &apiError{status: http.StatusNotFound, detail: msg} }
func forbidden(msg string) error { return &apiError{status: http.StatusForbidden, detail: msg} }

// problem is an RFC 9457 body.
type problem struct {
	Type      string            `json:"type"`
	Title     string            `json:"title"`
	Status    int               `json:"status"`
	Detail    string            `json:"detail,omitempty"`
	Errors    map[string]string `json:"errors,omitempty"`
	RequestID string            `json:"request_id,omitempty"`
	// retryAfter becomes the Retry-After header.
	retryAfter time.Duration
}

// internalDetail is all a client learns of a failure it did not cause.
const internalDetail = "internal error; quote the request id when reporting it"

// writeError is the one place errors become status codes. Anything unrecognised is
// logged with the request id and answered with a generic 500.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p := problemFor(err)
	if p.Status == http.StatusInternalServerError {
		s.log.Error().Err(err).Str("request_id", requestID(r)).Str("path", r.URL.Path).Msg("internal error")
		p.Detail = internalDetail
	}
	if errors.Is(err, store.ErrUnavailable) {
		s.log.Warn().Err(err).Str("request_id", requestID(r)).Str("path", r.URL.Path).Msg("database unavailable")
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Token")
	}
	if p.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(retrySeconds(p.retryAfter), 10))
	}
	p.RequestID = requestID(r)
	writeProblem(w, p)
}

func problemFor(err error) problem {
	var (
		api     *apiError
		valid   *store.ValidationError
		big     *http.MaxBytesError
		callErr *spatial.CallError
	)
	switch {
	case errors.As(err, &api):
		p := newProblem(api.status, api.detail, api.fields)
		p.retryAfter = api.retryAfter
		return p
	case errors.As(err, &valid):
		return newProblem(http.StatusBadRequest, valid.Error(), valid.Fields)
	case errors.Is(err, store.ErrUnavailable):
		// The database did not answer in time (down, failing over, overloaded): the
		// request may simply be sent again. What went wrong is logged, not sent.
		p := newProblem(http.StatusServiceUnavailable, "the database is unavailable; try again in a moment", nil)
		p.retryAfter = dbRetryAfter
		return p
	case errors.Is(err, context.Canceled):
		// The client went away while the request waited (for a hashing slot, say):
		// nothing failed on our side, and nobody reads the answer.
		return newProblem(http.StatusServiceUnavailable, "the request was cancelled before it was served", nil)
	case errors.As(err, &big):
		return newProblem(http.StatusRequestEntityTooLarge, "the request body is larger than the limit of "+formatBytes(big.Limit), nil)
	case errors.Is(err, store.ErrUnauthenticated):
		return newProblem(http.StatusUnauthorized, "a valid token is required: send Authorization: Token <token>", nil)
	case errors.Is(err, store.ErrInvalid):
		return newProblem(http.StatusBadRequest, detailOf(err, store.ErrInvalid), nil)
	case errors.Is(err, store.ErrConflict):
		return newProblem(http.StatusBadRequest, detailOf(err, store.ErrConflict), nil)
	case errors.Is(err, store.ErrNotFound):
		return newProblem(http.StatusNotFound, detailOf(err, store.ErrNotFound), nil)
	case errors.Is(err, store.ErrForbidden):
		return newProblem(http.StatusForbidden, detailOf(err, store.ErrForbidden), nil)
	// imagestore's messages say what to fix and name no server path. ErrBadPath stays
	// a 500: only our own records hold image paths, so a bad one is damage to log.
	case errors.Is(err, imagestore.ErrBadDataURL), errors.Is(err, imagestore.ErrNotPNG),
		errors.Is(err, imagestore.ErrBadBase64), errors.Is(err, imagestore.ErrInvalidPNG):
		return newProblem(http.StatusBadRequest, err.Error(), map[string]string{"image": err.Error()})
	case errors.Is(err, imagestore.ErrNotFound):
		return newProblem(http.StatusNotFound, "the garden's image file is missing", nil)
	case errors.Is(err, errNoSpatial):
		return newProblem(http.StatusServiceUnavailable, errNoSpatial.Error()+": start gardend serve with --spatial HOST:PORT, or try --demo", nil)
	// A CallError's message is fixed per gRPC status and names the call and the
	// project, never the server's address or its own words (the client logs those).
	case errors.As(err, &callErr):
		return newProblem(http.StatusBadGateway, err.Error(), nil)
	case errors.Is(err, spatial.ErrUnavailable):
		return newProblem(http.StatusBadGateway, spatial.ErrUnavailable.Error(), nil)
	case errors.Is(err, spatial.ErrNotFound):
		return newProblem(http.StatusBadGateway, spatial.ErrNotFound.Error(), nil)
	}
	return newProblem(http.StatusInternalServerError, "", nil)
}

func newProblem(status int, detail string, fields map[string]string) problem {
	return problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Errors: fields}
}

// detailOf drops the sentinel's own text ("conflict: …") so the detail reads as advice.
func detailOf(err, sentinel error) string {
	msg := err.Error()
	if m, ok := strings.CutPrefix(msg, sentinel.Error()+": "); ok {
		return m
	}
	return msg
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return itoa(n>>10) + " KiB"
	}
	return itoa(n) + " bytes"
}

// retrySeconds rounds up to whole seconds, at least 1: Retry-After has no fractions and
// "0" would invite an immediate retry that is still refused.
func retrySeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// dbRetryAfter is the Retry-After of a 503 for an unavailable database: a restart or
// failover of PostgreSQL takes seconds.
const dbRetryAfter = 2 * time.Second
