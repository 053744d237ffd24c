package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The request decoders must never panic and must answer anything a client can send
// with success or a 4xx: a 5xx here would mean a client can make us log internal
// errors at will. Seeds live in testdata/fuzz/<FuzzName>/; run one target with
//
//	go test ./server -run '^$' -fuzz '^FuzzDecodeRegister$' -fuzztime 60s

// fuzzBodyLimit is small so the 413 path is reached too.
const fuzzBodyLimit = 4 << 10

func fuzzRequest(contentType string, body []byte) *http.Request {
	r := httptest.NewRequest("POST", "/fuzz", bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, fuzzBodyLimit)
	return r
}

func checkClientError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if p := problemFor(err); p.Status < 400 || p.Status > 499 {
		t.Fatalf("error %q maps to %d, want a 4xx", err, p.Status)
	}
}

func FuzzDecodeRegister(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		var req registerRequest
		checkClientError(t, decodeJSON(fuzzRequest("application/json", body), &req))
	})
}

func FuzzDecodeUserUpdate(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		var req userUpdateRequest
		checkClientError(t, decodeJSON(fuzzRequest("application/json", body), &req))
	})
}

// FuzzDecodeLogin is the JSON body of /login, through loginCredentials (the request type
// is local to it).
func FuzzDecodeLogin(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _, err := loginCredentials(fuzzRequest("application/json", body))
		checkClientError(t, err)
	})
}

// FuzzLoginCredentials covers JSON, urlencoded and multipart bodies; the content type
// is fuzzed too, since it picks the parser.
func FuzzLoginCredentials(f *testing.F) {
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		username, password, err := loginCredentials(fuzzRequest(contentType, body))
		checkClientError(t, err)
		if err == nil && (username == "" || password == "") {
			t.Fatalf("accepted empty credentials %q / %q", username, password)
		}
	})
}
