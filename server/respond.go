package server

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/gardend/gardend/server/jsonstream"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// writeJSON writes v with status. Encoding happens before the header so a failure
// (a NaN from the spatial server, say) can still become a 500 through writeError,
// which logs it with the request id.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeRawJSON(w, status, body)
}

// writeRawJSON writes a JSON body; net/http adds Content-Length for bodies written in
// one piece.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header()["Content-Type"] = headerJSON
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client gone: nothing left to tell it
}

func writeProblem(w http.ResponseWriter, p problem) {
	body, _ := json.Marshal(p)
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(p.Status)
	_, _ = w.Write(body) // a client gone: nothing left to tell it
}

// isJSON accepts application/json and +json types; a missing Content-Type is tolerated
// because older clients omit it on small bodies.
func isJSON(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// decodeJSON reads one JSON object from the body into dst, naming the offending field
// of a type error. Unknown fields are ignored (decisions.md).
func decodeJSON(r *http.Request, dst any) error {
	if !isJSON(r) {
		return errNotJSON
	}
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return jsonError(err)
		}
		return badRequest("body", "the body must hold a single JSON object")
	}
	return nil
}

var errNotJSON = &apiError{status: http.StatusUnsupportedMediaType, detail: "send the body as application/json"}

// jsonError turns an error of decoding a JSON body (encoding/json's or jsonstream's)
// into one for the client; errors that already have a status pass unchanged.
func jsonError(err error) error {
	var (
		typeErr      *json.UnmarshalTypeError
		syntax       *json.SyntaxError
		streamSyntax *jsonstream.SyntaxError
		big          *http.MaxBytesError
		api          *apiError
	)
	switch {
	case errors.As(err, &big), errors.As(err, &api):
		return err
	case errors.As(err, &streamSyntax):
		return badRequest("body", "malformed JSON at byte "+itoa(streamSyntax.Offset))
	case errors.Is(err, jsonstream.ErrEmpty):
		return badRequest("body", "the body is empty; send a JSON object")
	case errors.Is(err, jsonstream.ErrNotObject):
		return badRequest("body", "the body must be a JSON object")
	case errors.Is(err, jsonstream.ErrTrailing):
		return badRequest("body", "the body must hold a single JSON object")

	case errors.As(err, &typeErr) && typeErr.Field != "":
		return badRequest(typeErr.Field, typeErr.Field+" must be a "+jsonKind(typeErr.Type.Kind().String()))
	case errors.As(err, &typeErr):
		return badRequest("body", "the body must be a JSON object")
	case errors.As(err, &syntax):
		return badRequest("body", "malformed JSON at byte "+itoa(syntax.Offset))
	case errors.Is(err, io.EOF):
		return badRequest("body", "the body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body", "the JSON body ends too early")
	}
	return badRequest("body", "malformed JSON: "+err.Error())
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	}
	return "number"
}
