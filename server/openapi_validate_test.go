package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/gardend/gardend/docs"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// Every response any test of this package sees, through a Server's handler or over
// its listener, is held against docs/openapi.yaml: the status must be documented for
// the operation, the body must match its schema, the declared headers theirs. A
// request no documented operation matches must be answered 404 (unknown path), 405
// (known path, other method) or 503 (the concurrency cap), each with the shared
// component's problem body; anything else is an undocumented endpoint. Violations
// are collected and fail the run in TestMain, each naming the test's data directory
// (which holds the test's name).

// maxValidatedBody bounds the body kept for validation (backups are larger; their
// status and headers are still checked).
const maxValidatedBody = 16 << 20

var apiSpec struct {
	doc    *openapi3.T
	router routers.Router

	mu         sync.Mutex
	violations []string
	seen       map[string]bool // "METHOD path status" checked, for the coverage report
}

func init() {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPI)
	if err == nil {
		err = doc.Validate(context.Background())
	}
	if err != nil {
		panic(fmt.Sprintf("docs/openapi.yaml: %v", err))
	}
	// Match paths only: tests reach the server under any host.
	doc.Servers = openapi3.Servers{{URL: "/"}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		panic(fmt.Sprintf("docs/openapi.yaml: router: %v", err))
	}
	openapi3filter.RegisterBodyDecoder("application/x-tar", openapi3filter.FileBodyDecoder)
	openapi3filter.RegisterBodyDecoder("image/png", openapi3filter.FileBodyDecoder)
	openapi3filter.RegisterBodyDecoder("image/jpeg", openapi3filter.FileBodyDecoder)
	apiSpec.doc, apiSpec.router, apiSpec.seen = doc, router, map[string]bool{}
	wrapForTest = validateAgainstSpec
}

// TestMain runs the package's tests (internal and external), stops the PostgreSQL
// server the tests that run on it started (backends_test.go), and fails the run on
// any response that disagrees with docs/openapi.yaml.
func TestMain(m *testing.M) {
	flag.Parse()
	if b := flag.Lookup("test.bench"); b != nil && b.Value.String() != "" {
		// Benchmarks measure the server, not the validator.
		wrapForTest = nil
		fmt.Fprintln(os.Stderr, "benchmarks run: responses are not validated against docs/openapi.yaml")
	}
	code := pgtest.Run(m, func(dsn string) error {
		st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
		if err != nil {
			return err
		}
		return st.Close()
	})
	apiSpec.mu.Lock()
	defer apiSpec.mu.Unlock()
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "docs/openapi.yaml: %d distinct method, path and status combinations validated\n", len(apiSpec.seen))
	}
	if len(apiSpec.violations) > 0 {
		fmt.Fprintf(os.Stderr, "\n%d responses disagree with docs/openapi.yaml:\n", len(apiSpec.violations))
		for _, v := range apiSpec.violations {
			fmt.Fprintln(os.Stderr, "  "+v)
		}
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func violation(dataDir string, r *http.Request, status int, format string, args ...any) {
	apiSpec.mu.Lock()
	defer apiSpec.mu.Unlock()
	apiSpec.violations = append(apiSpec.violations, fmt.Sprintf("%s %s → %d (test dir %s): %s", r.Method, r.URL.Path, status, dataDir, fmt.Sprintf(format, args...)))
}

// captureWriter passes the response through and keeps its status and (bounded) body;
// Flush and Unwrap keep streams and ResponseController working.
type captureWriter struct {
	http.ResponseWriter
	status    int
	body      bytes.Buffer
	truncated bool
	started   bool
}

// unkeptBodies are media types whose bodies have nothing to validate beyond the type
// itself; they are not kept, so that tests can measure the server's memory while it
// sends large ones.
var unkeptBodies = []string{"application/x-ply"}

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if !c.started {
		c.started = true
		ct, _, _ := mime.ParseMediaType(c.Header().Get("Content-Type"))
		c.truncated = slices.Contains(unkeptBodies, ct)
	}
	if c.truncated {
		// Not kept.
	} else if c.body.Len()+len(b) <= maxValidatedBody {
		c.body.Write(b)
	} else {
		c.truncated = true
	}
	return c.ResponseWriter.Write(b)
}

func (c *captureWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func validateAgainstSpec(dataDir string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &captureWriter{ResponseWriter: w}
		// The handler may read the body; the router needs only method and URL.
		probe := r.Clone(context.Background())
		probe.Body = http.NoBody
		probe.URL.Path = oneSegmentAssetPath(probe.URL.Path)
		next.ServeHTTP(cw, r)
		if cw.status == 0 {
			cw.status = http.StatusOK
		}
		checkResponse(dataDir, probe, cw)
	})
}

// oneSegmentAssetPath folds the slashes of a web-app asset path (/app/{version}/{file},
// where file is the router's catch-all and may hold slashes) into one segment, since
// OpenAPI path parameters cannot span segments.
func oneSegmentAssetPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/app/")
	if !ok {
		return p
	}
	version, file, ok := strings.Cut(rest, "/")
	if !ok {
		return p
	}
	return "/app/" + version + "/" + strings.ReplaceAll(file, "/", "~")
}

func checkResponse(dataDir string, r *http.Request, cw *captureWriter) {
	status, header := cw.status, cw.Header()
	route, params, err := apiSpec.router.FindRoute(r)
	headAsGet := false
	if err != nil && r.Method == http.MethodHead {
		// Every GET answers HEAD (the document's description says so): the GET
		// operation's status and headers, without a body.
		get := r.Clone(context.Background())
		get.Method = http.MethodGet
		if route, params, err = apiSpec.router.FindRoute(get); err == nil {
			r, headAsGet = get, true
		}
	}
	if err != nil {
		checkUnrouted(dataDir, r, cw, err)
		return
	}
	if status == http.StatusRequestTimeout && route.Operation.Responses.Status(status) == nil {
		checkComponent(dataDir, r, cw, "RequestTimeout") // any body may arrive too slowly
		return
	}
	apiSpec.mu.Lock()
	apiSpec.seen[r.Method+" "+route.Path+" "+fmt.Sprint(status)] = true
	apiSpec.mu.Unlock()
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if header.Get("Content-Encoding") == "gzip" && !cw.truncated && !headAsGet && cw.body.Len() > 0 {
		// Compressed by the server (compress.go): the document describes the content.
		zr, err := gzip.NewReader(bytes.NewReader(cw.body.Bytes()))
		var plain []byte
		if err == nil {
			plain, err = io.ReadAll(zr)
		}
		if err != nil {
			violation(dataDir, r, status, "the gzip body does not decode: %v", err)
			return
		}
		cw.body.Reset()
		cw.body.Write(plain)
	}
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if cw.truncated || headAsGet || ct == "application/x-ndjson" {
		input.Options.ExcludeResponseBody = true
	}
	input.SetBodyBytes(cw.body.Bytes())
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		violation(dataDir, r, status, "%v; body %.300q", err, cw.body.String())
		return
	}
	if ct == "application/x-ndjson" && !cw.truncated && !headAsGet {
		checkNDJSON(dataDir, r, route, cw)
	}
}

// checkNDJSON validates each line of a streamed answer against the documented
// schema of the media type (the schema of one line).
func checkNDJSON(dataDir string, r *http.Request, route *routers.Route, cw *captureWriter) {
	resp := route.Operation.Responses.Status(cw.status)
	mt := resp.Value.Content.Get("application/x-ndjson")
	if mt == nil || mt.Schema == nil {
		violation(dataDir, r, cw.status, "application/x-ndjson is not documented for this status")
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(cw.body.Bytes()))
	sc.Buffer(nil, maxValidatedBody)
	for n := 1; sc.Scan(); n++ {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			violation(dataDir, r, cw.status, "NDJSON line %d is not JSON: %v", n, err)
			return
		}
		if err := mt.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
			violation(dataDir, r, cw.status, "NDJSON line %d: %v; line %.300q", n, err, sc.Text())
			return
		}
	}
}

// checkUnrouted: a request no documented operation matches may only be refused, with
// the shared components' answers.
func checkUnrouted(dataDir string, r *http.Request, cw *captureWriter, findErr error) {
	status := cw.status
	var component string
	switch {
	case r.Method == http.MethodOptions && status < 300 && cw.body.Len() == 0:
		return // a CORS preflight or httprouter's automatic OPTIONS answer
	case status == http.StatusServiceUnavailable:
		component = "Busy"
	case errors.Is(findErr, routers.ErrMethodNotAllowed) && status == http.StatusMethodNotAllowed:
		component = "MethodNotAllowed"
		if cw.Header().Get("Allow") == "" {
			violation(dataDir, r, status, "405 without an Allow header")
		}
	case errors.Is(findErr, routers.ErrPathNotFound) && status == http.StatusNotFound:
		component = "NotFound"
	case status == http.StatusRequestEntityTooLarge:
		component = "TooLarge" // refused by size before routing
	default:
		violation(dataDir, r, status, "undocumented endpoint (%v)", findErr)
		return
	}
	checkComponent(dataDir, r, cw, component)
}

// checkComponent holds an answer against one of the document's shared responses.
func checkComponent(dataDir string, r *http.Request, cw *captureWriter, component string) {
	status := cw.status
	ref := apiSpec.doc.Components.Responses[component]
	if ref == nil || ref.Value == nil {
		violation(dataDir, r, status, "docs/openapi.yaml has no components.responses.%s", component)
		return
	}
	ct, _, _ := mime.ParseMediaType(cw.Header().Get("Content-Type"))
	mt := ref.Value.Content.Get(ct)
	if mt == nil || mt.Schema == nil {
		violation(dataDir, r, status, "content type %q is not that of components.responses.%s", ct, component)
		return
	}
	var v any
	if err := json.Unmarshal(cw.body.Bytes(), &v); err != nil {
		violation(dataDir, r, status, "body is not JSON: %v", err)
		return
	}
	if err := mt.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		violation(dataDir, r, status, "components.responses.%s: %v", component, err)
	}
}

// TestOpenAPIDocumentIsComplete: every operation has an operationId (unique) and a
// tag, and the shared error answers exist.
func TestOpenAPIDocumentIsComplete(t *testing.T) {
	ids := map[string]string{}
	for path, item := range apiSpec.doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" || len(op.Tags) == 0 {
				t.Errorf("%s: operationId %q, tags %v", where, op.OperationID, op.Tags)
			}
			if other, dup := ids[op.OperationID]; dup {
				t.Errorf("operationId %q of both %s and %s", op.OperationID, other, where)
			}
			ids[op.OperationID] = where
			if op.RequestBody != nil {
				for _, code := range []string{"413", "415"} {
					if op.Responses.Value(code) == nil {
						t.Errorf("%s takes a body but does not document %s", where, code)
					}
				}
			}
		}
	}
	for _, c := range []string{"NotFound", "MethodNotAllowed", "TooLarge", "UnsupportedMediaType", "Busy", "Internal", "Unauthorized"} {
		if apiSpec.doc.Components.Responses[c] == nil {
			t.Errorf("components.responses.%s missing", c)
		}
	}
	var names []string
	for _, tag := range apiSpec.doc.Tags {
		names = append(names, tag.Name)
	}
	for path, item := range apiSpec.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, tag := range op.Tags {
				if !slices.Contains(names, tag) {
					t.Errorf("%s %s: tag %q is not declared in tags", method, path, tag)
				}
			}
		}
	}
}

// TestSpecValidatorCatchesDisagreements: the validator itself flags a body that does
// not match its schema, an undocumented status, an undocumented endpoint and a 405
// without Allow (the recorded violations are taken back, so the run still passes).
func TestSpecValidatorCatchesDisagreements(t *testing.T) {
	const dir = "validator-self-test"
	answer := func(status int, ct, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			io.WriteString(w, body)
		})
	}
	problem := `{"type":"about:blank","title":"x","status":400}`
	cases := []struct {
		method, path string
		h            http.Handler
		bad          bool
	}{
		{"GET", "/companies/1", answer(200, "application/json", `{"id":1,"name":"Farm"}`), false},
		{"GET", "/companies/1", answer(200, "application/json", `{"id":"one","name":"Farm"}`), true},
		{"GET", "/companies/1", answer(418, "application/problem+json", problem), true},
		{"GET", "/companies/1", answer(200, "text/html", `<p>`), true},
		{"GET", "/no/such/endpoint", answer(200, "application/json", `{}`), true},
		{"GET", "/no/such/endpoint", answer(404, "application/problem+json", problem), false},
		{"PATCH", "/companies/1", answer(405, "application/problem+json", problem), true},
		{"GET", "/companies/1/gardens/2/beds", answer(200, "application/x-ndjson", "{\"id\":1,\"plants\":\"http://x/p\"}\n{\"id\":\"2\"}\n"), true},
	}
	for _, c := range cases {
		validateAgainstSpec(dir, c.h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.path, nil))
		var got []string
		apiSpec.mu.Lock()
		apiSpec.violations = slices.DeleteFunc(apiSpec.violations, func(v string) bool {
			mine := strings.Contains(v, "(test dir "+dir+")")
			if mine {
				got = append(got, v)
			}
			return mine
		})
		apiSpec.mu.Unlock()
		if (len(got) > 0) != c.bad {
			t.Errorf("%s %s: violations %q, want some: %v", c.method, c.path, got, c.bad)
		}
	}
}
