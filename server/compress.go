package server

import (
	"compress/gzip"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Responses are gzip-compressed when the client asks (Accept-Encoding) and it pays:
// text types (JSON, NDJSON, problem+json, YAML) of at least compressMinBytes; a farm's
// uplink is the scarce part (GET …/plants of a 33-plant bed: 12.1 KB, 2.4 KB gzipped).
// Never compressed:
//   - what already has an encoding (the web app's pre-compressed assets) or is binary
//     (PNG, PLY, the backup archive): nothing to gain, or ranges to keep (the signed
//     PLY URLs and the plant point clouds are served with Range support);
//   - the token answers of POST /login and /register: a secret beside input an
//     attacker may choose, the shape compression attacks (BREACH) need. Every other
//     answer that holds anything private needs the token in the Authorization header,
//     which a browser never adds to another site's request, so an attacker cannot
//     make a victim's browser send the requests such an attack needs;
//   - HEAD answers (no body), and answers too small to gain (compressMinBytes).
//
// Memory and CPU stay bounded: at most Config.MaxCompressors answers are compressed
// at once (one beyond that goes out as it is), the writers are pooled, and the level
// is BestSpeed, cheap on a 2-core box (BenchmarkPlantsAnswer, the plants answer:
// BestSpeed 27 µs → 2,608 bytes; the default level 191 µs → 2,349; best 345 µs →
// 2,294). The garden picture, a PNG as a base64 data URL, gets Huffman coding only:
// BestSpeed finds no repeats in it and sends it as it is, Huffman coding takes back
// the quarter base64 adds, at 300 MB/s.

// compressMinBytes: below this a body gains less than the gzip framing and header
// cost (about 20 bytes) and the CPU is wasted.
const compressMinBytes = 1024

// compressLevels are the levels in use: the default, and the one of routes listed in
// huffmanOnly.
var compressLevels = []int{gzip.BestSpeed, gzip.HuffmanOnly}

// noCompression lists the routes whose answers are never compressed, by method and
// pattern (see above).
var noCompression = map[string]bool{
	"POST /login":    true,
	"POST /register": true,
}

// huffmanOnly lists the routes whose answers are base64 of compressed data.
var huffmanOnly = map[string]bool{
	"GET /companies/:company_id/gardens/:garden_id/image": true,
}

// CompressionRoutes lists the routes compress.go names (method and httprouter
// pattern), for a test to check that each still exists.
func CompressionRoutes() []string {
	out := []string{bedsStreamRoute}
	for r := range noCompression {
		out = append(out, r)
	}
	for r := range huffmanOnly {
		out = append(out, r)
	}
	return out
}

// bedsStreamRoute is the NDJSON stream of a garden's beds.
const bedsStreamRoute = "GET /companies/:company_id/gardens/:garden_id/beds"

// compressor holds the pooled gzip writers and the cap on responses compressed at once.
type compressor struct {
	slots chan struct{}
	pools map[int]*sync.Pool // by level
}

// maxCompressors bounds the gzip writers in use: each holds about 800 KiB while it
// works (compress/flate's tables).
func newCompressor(maxCompressors int) *compressor {
	c := &compressor{slots: make(chan struct{}, maxCompressors), pools: map[int]*sync.Pool{}}
	for _, level := range compressLevels {
		c.pools[level] = &sync.Pool{New: func() any {
			zw, _ := gzip.NewWriterLevel(io.Discard, level) // a valid level: no error
			return zw
		}}
	}
	return c
}

// compressed wraps a route's handler (method and pattern as registered) with gzip
// compression of its answers.
func (s *Server) compressed(method, pattern string, next http.Handler) http.Handler {
	if noCompression[method+" "+pattern] || (s.cfg.CompatLineGap > 0 && method+" "+pattern == bedsStreamRoute) {
		// With --compat-line-gap the operator spaces the beds stream's lines for the
		// original PlantMap client, which reads each network read as one line; that
		// was measured without gzip, which puts the browser's decoder in between.
		return next
	}
	level := gzip.BestSpeed
	if huffmanOnly[method+" "+pattern] {
		level = gzip.HuffmanOnly
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &compressWriter{ResponseWriter: w, c: s.compress, level: level,
			accepts: acceptsGzip(r.Header.Get("Accept-Encoding")), head: r.Method == http.MethodHead}
		defer func() {
			if p := recover(); p != nil {
				cw.discard()
				panic(p)
			}
		}()
		next.ServeHTTP(cw, r)
		cw.finish()
	})
}

// compressWriter holds back the status and the first bytes of a response until it
// knows whether to compress: it does once the headers say so, the body reaches
// compressMinBytes, the handler flushes (a stream), or the handler ends.
type compressWriter struct {
	http.ResponseWriter
	c       *compressor
	accepts bool // the client takes gzip
	// head: a HEAD request gets the headers a GET would (Content-Encoding, no
	// Content-Length), and its body, which net/http would drop, is not compressed.
	head bool
	sink bool // drop the body: the headers say gzip, but this is HEAD

	status  int    // held back; 0 until WriteHeader or the first Write
	buf     []byte // body held back
	decided bool
	zw      *gzip.Writer // non-nil while compressing
	level   int          // of zw
	failed  error        // the first write error of the compressed stream
}

func (w *compressWriter) WriteHeader(code int) {
	switch {
	case w.decided:
		w.ResponseWriter.WriteHeader(code)
	case code >= 100 && code < 200: // 103 Early Hints and the like go out as they come
		w.ResponseWriter.WriteHeader(code)
	case w.status == 0:
		w.status = code
		if !w.candidate() || !w.accepts {
			w.decide(false) // nothing to hold back for
		} else if n, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64); err == nil {
			w.decide(n >= compressMinBytes)
		}
	}
}

func (w *compressWriter) Write(p []byte) (int, error) {
	if !w.decided {
		if w.status == 0 {
			w.WriteHeader(http.StatusOK)
		}
		if !w.decided {
			if len(w.buf)+len(p) < compressMinBytes {
				w.buf = append(w.buf, p...)
				return len(p), nil
			}
			w.decide(true)
		}
	}
	if w.sink {
		return len(p), nil
	}
	if w.zw == nil {
		return w.ResponseWriter.Write(p)
	}
	if w.failed != nil {
		return 0, w.failed
	}
	n, err := w.zw.Write(p)
	if err != nil {
		w.failed = err
	}
	return n, err
}

// Flush sends what the handler wrote so far: with gzip, as a complete deflate block
// (a sync flush), so the client can decode every line of a stream at once.
func (w *compressWriter) Flush() {
	if !w.decided {
		if w.status == 0 {
			w.WriteHeader(http.StatusOK)
		}
		if !w.decided {
			w.decide(true) // a stream: worth compressing whatever its first bytes
		}
	}
	if w.zw != nil && w.failed == nil {
		if err := w.zw.Flush(); err != nil {
			w.failed = err
			return
		}
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *compressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// candidate reports whether the response as its headers stand may be compressed.
// Any response that may be is marked Vary: Accept-Encoding, compressed or not, so
// that caches keep the two apart.
func (w *compressWriter) candidate() bool {
	h := w.Header()
	switch {
	case w.status < 200 || w.status == http.StatusNoContent || w.status == http.StatusNotModified,
		h.Get("Content-Encoding") != "", h.Get("Content-Range") != "", !compressibleType(h.Get("Content-Type")):
		return false
	}
	switch vary := h["Vary"]; {
	case len(vary) == 0:
		h["Vary"] = headerVaryEncoding // shared, no allocation; an Add after it copies
	case !slices.Contains(vary, "Accept-Encoding"): // the web app's assets say it already
		h.Add("Vary", "Accept-Encoding")
	}
	return true
}

var headerVaryEncoding = []string{"Accept-Encoding"}

// decide sends the status, compressing from here on if compress and the client takes
// it and a writer is free, then the bytes held back.
func (w *compressWriter) decide(compress bool) {
	w.decided = true
	if compress && w.accepts {
		w.start()
	}
	w.ResponseWriter.WriteHeader(w.status)
	if len(w.buf) > 0 {
		_, _ = w.Write(w.buf) // an error shows at the handler's next write
		w.buf = nil
	}
}

// start takes a writer, unless every one is in use.
func (w *compressWriter) start() {
	h := w.Header()
	if w.head {
		w.sink = true
	} else {
		select {
		case w.c.slots <- struct{}{}:
		default:
			return // at the cap: this answer goes out as it is
		}
		w.zw = w.c.pools[w.level].Get().(*gzip.Writer)
		w.zw.Reset(w.ResponseWriter)
	}
	h.Del("Content-Length")
	h.Set("Content-Encoding", "gzip")
	if etag := h.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
		h.Set("ETag", "W/"+etag) // other bytes, same content
	}
}

// finish ends the response after the handler returned: the bytes held back, or the
// gzip stream's end.
func (w *compressWriter) finish() {
	if !w.decided {
		if w.status == 0 && len(w.buf) == 0 {
			return // the handler wrote nothing: net/http sends its 200
		}
		if w.status == 0 {
			w.WriteHeader(http.StatusOK)
		}
		if !w.decided {
			w.decide(len(w.buf) >= compressMinBytes)
		}
	}
	if w.zw != nil {
		if w.failed == nil {
			w.failed = w.zw.Close()
		}
		w.release()
	}
}

// discard gives the writer back without ending the stream (the handler panicked).
func (w *compressWriter) discard() {
	if w.zw != nil {
		w.release()
	}
}

func (w *compressWriter) release() {
	w.zw.Reset(io.Discard) // drop the reference to the connection
	w.c.pools[w.level].Put(w.zw)
	w.zw = nil
	<-w.c.slots
}

// compressibleType: text that gzip shrinks. (Without mime.ParseMediaType, which
// allocates: this runs on every answer.)
func compressibleType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	switch {
	case len(mt) > 5 && strings.EqualFold(mt[:5], "text/"):
		return true
	case strings.EqualFold(mt, "application/json"), strings.EqualFold(mt, "application/x-ndjson"),
		strings.EqualFold(mt, "application/yaml"), strings.EqualFold(mt, "image/svg+xml"):
		return true
	case len(mt) > 5 && strings.EqualFold(mt[len(mt)-5:], "+json") && strings.Contains(mt, "/"):
		return true
	}
	return false
}

// acceptsGzip reads Accept-Encoding: gzip listed without q=0, or * when gzip is not
// named.
func acceptsGzip(header string) bool {
	gzipQ, anyQ := -1.0, -1.0
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.TrimSpace(coding)
		q := 1.0
		if v, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			var err error
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				q = 0
			}
		}
		switch {
		case strings.EqualFold(coding, "gzip"), strings.EqualFold(coding, "x-gzip"):
			gzipQ = max(gzipQ, q)
		case coding == "*":
			anyQ = max(anyQ, q)
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return anyQ > 0
}
