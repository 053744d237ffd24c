package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"image"
	imagepng "image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// fetchEncoded sends a GET or HEAD with exactly these Accept-Encoding and token (Go's client
// then leaves the body as it comes) and returns the answer with its body decoded.
func fetchEncoded(t *testing.T, method, url, token, acceptEncoding string) (*http.Response, []byte, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", acceptEncoding)
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	body := raw
	if res.Header.Get("Content-Encoding") == "gzip" && method != http.MethodHead {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: not gzip: %v", url, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("%s: the gzip stream does not decode: %v", url, err)
		}
	}
	return res, raw, body
}

func varyHasAcceptEncoding(h http.Header) bool {
	for _, v := range h.Values("Vary") {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), "Accept-Encoding") {
				return true
			}
		}
	}
	return false
}

// TestCompressedAnswers: JSON and YAML answers of 1 KiB or more are gzipped when the
// client asks and only then, to the same content; smaller ones are not; both say
// Vary: Accept-Encoding; HEAD has a GET's headers; the token answers of login and
// registration are never compressed.
func TestCompressedAnswers(t *testing.T) {
	ss := newSpatialSetup(t, demo.Options{Seed: 5, Beds: 2, Plants: 33}, demo.ServerOptions{})
	g := ss.g
	plants := ss.plantsURL(0)
	fetchEncoded(t, "GET", plants, ss.token, "identity")
	g.waitClouds() // the answer changes as the point clouds arrive
	for _, c := range []struct {
		name, url, token, accept string
		gzip                     bool
	}{
		{"plants, gzip", plants, ss.token, "gzip", true},
		{"plants, gzip among others", plants, ss.token, "br;q=1.0, gzip;q=0.8, *;q=0.1", true},
		{"plants, any", plants, ss.token, "*", true},
		{"plants, identity", plants, ss.token, "identity", false},
		{"plants, gzip refused", plants, ss.token, "gzip;q=0, *", false},
		{"the API description", g.base + "/openapi.yaml", "", "gzip", true},
		{"a small answer", g.base + "/user", ss.token, "gzip", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, raw, body := fetchEncoded(t, "GET", c.url, c.token, c.accept)
			_, _, plain := fetchEncoded(t, "GET", c.url, c.token, "identity")
			if res.StatusCode != 200 || (res.Header.Get("Content-Encoding") == "gzip") != c.gzip {
				t.Fatalf("%d, Content-Encoding %q, want gzip %v", res.StatusCode, res.Header.Get("Content-Encoding"), c.gzip)
			}
			if !varyHasAcceptEncoding(res.Header) {
				t.Errorf("Vary %q", res.Header.Values("Vary"))
			}
			if !bytes.Equal(body, plain) && !strings.Contains(c.url, "/user") {
				t.Errorf("the decoded body differs from the plain one (%d and %d bytes)", len(body), len(plain))
			}
			if c.gzip && (res.Header.Get("Content-Length") != "" || len(raw) >= len(plain)) {
				t.Errorf("gzip: Content-Length %q, %d bytes for %d", res.Header.Get("Content-Length"), len(raw), len(plain))
			}
			head, headRaw, _ := fetchEncoded(t, "HEAD", c.url, c.token, c.accept)
			if head.Header.Get("Content-Encoding") != res.Header.Get("Content-Encoding") || len(headRaw) != 0 ||
				(c.gzip && head.Header.Get("Content-Length") != "") {
				t.Errorf("HEAD: Content-Encoding %q, Content-Length %q, %d bytes", head.Header.Get("Content-Encoding"),
					head.Header.Get("Content-Length"), len(headRaw))
			}
			if c.gzip {
				t.Logf("%d bytes, %d gzipped", len(plain), len(raw))
			}
		})
	}

	// The token answers: never compressed, whatever the client asks.
	for path, username := range map[string]string{"/login": "gardener", "/register": "newcomer"} {
		body, _ := json.Marshal(map[string]string{"username": username,
			"password": "pw-of-gardener", "first_name": strings.Repeat("f", 100), "last_name": "l", "email": "x@example.org"})
		req, _ := http.NewRequest("POST", g.base+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode/100 != 2 || !strings.Contains(string(answer), `"token"`) || res.Header.Get("Content-Encoding") != "" ||
			varyHasAcceptEncoding(res.Header) {
			t.Errorf("POST %s: %d, Content-Encoding %q, Vary %q, %s", path, res.StatusCode, res.Header.Get("Content-Encoding"),
				res.Header.Values("Vary"), answer)
		}
	}
}

// TestCompressedStreamFlushesEachLine: a gzipped beds stream still delivers each line
// as soon as it is written: the client reads the first bed while the second is held
// at the spatial server, and the stream decodes whole.
func TestCompressedStreamFlushesEachLine(t *testing.T) {
	// The held call must outlast the wait for the first line below: otherwise its
	// timeout would end the stream, and the line would come with the stream's end.
	ss := newSpatialSetup(t, demo.Options{Seed: 6, Beds: 2, Plants: 4}, demo.ServerOptions{},
		func(c *server.Config) { c.Spatial.CallTimeout = time.Minute })
	second := ss.ds.ProjectUUIDs()[1]
	release := make(chan struct{})
	released := false
	releaseOnce := func() {
		if !released {
			released = true
			close(release)
		}
	}
	t.Cleanup(releaseOnce)
	ss.demo.SetHook(func(_, project string) (time.Duration, error) {
		if project == second {
			<-release
		}
		return 0, nil
	})
	req, _ := http.NewRequest("GET", ss.g.base+ss.garden+"/beds", nil)
	req.Header.Set("Authorization", "Token "+ss.token)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("the stream is not gzipped: %v", res.Header)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(zr)
	first := make(chan string, 1)
	go func() {
		line, err := lines.ReadString('\n')
		if err != nil {
			line = "error: " + err.Error()
		}
		first <- line
	}()
	select {
	case line := <-first:
		var bed struct{ ID uint64 }
		if err := json.Unmarshal([]byte(line), &bed); err != nil || bed.ID != ss.beds[0] {
			t.Fatalf("first line %q", line)
		}
	case <-time.After(20 * time.Second): // only if the line never comes: the failure
		t.Fatal("the first bed did not arrive while the second was held: the gzip stream is not flushed per line")
	}
	releaseOnce()
	rest, err := io.ReadAll(lines)
	if err != nil {
		t.Fatalf("the rest of the stream: %v", err)
	}
	if n := strings.Count(string(rest), "\n"); n != 1 || strings.Contains(string(rest), `"error"`) {
		t.Fatalf("%d more lines, want the second bed: %q", n, rest)
	}
}

// TestCompressorsBounded: at most the configured compressions run at once; an answer
// beyond that goes out uncompressed rather than waiting, and a writer comes back
// after a stream that was cut off.
func TestCompressorsBounded(t *testing.T) {
	const n = 2
	ss := newSpatialSetup(t, demo.Options{Seed: 7, Beds: 2, Plants: 33}, demo.ServerOptions{},
		func(c *server.Config) { c.MaxCompressors, c.Spatial.CallTimeout = n, time.Minute })
	second := ss.ds.ProjectUUIDs()[1]
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ss.demo.SetHook(func(_, project string) (time.Duration, error) {
		if project == second {
			<-release
		}
		return 0, nil
	})
	// Every compressor is taken by a stream held open at its second bed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range n {
		req, _ := http.NewRequestWithContext(ctx, "GET", ss.g.base+ss.garden+"/beds", nil)
		req.Header.Set("Authorization", "Token "+ss.token)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("stream %d not compressed", i)
		}
		if _, err := bufio.NewReader(mustGunzip(t, res.Body)).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	res, _, _ := fetchEncoded(t, "GET", ss.plantsURL(0), ss.token, "gzip")
	if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != "" {
		t.Fatalf("with every compressor busy: %d, Content-Encoding %q", res.StatusCode, res.Header.Get("Content-Encoding"))
	}
	// The streams are cut off by their clients; their compressors come back.
	cancel()
	eventually(t, "the compressors of cut-off streams to come back", func() bool {
		res, _, _ := fetchEncoded(t, "GET", ss.plantsURL(0), ss.token, "gzip")
		return res.Header.Get("Content-Encoding") == "gzip"
	})
}

// TestCompressedPicture: the garden picture, a PNG in base64 inside JSON, is sent with
// Huffman coding, which takes back most of what base64 adds.
func TestCompressedPicture(t *testing.T) {
	w := newImageWorld(t)
	img := image.NewNRGBA(image.Rect(0, 0, 160, 160))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32())
	}
	var png bytes.Buffer
	if err := imagepng.Encode(&png, img); err != nil {
		t.Fatal(err)
	}
	w.upload(t, png.Bytes())
	get := func(accept string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", w.path, nil)
		req.Header.Set("Authorization", "Token "+w.admin)
		req.Header.Set("Accept-Encoding", accept)
		rec := httptest.NewRecorder()
		w.ts.srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	plain, zipped := get("identity"), get("gzip")
	if plain.Code != 200 || zipped.Code != 200 || zipped.Header().Get("Content-Encoding") != "gzip" || zipped.Header().Get("Content-Length") != "" {
		t.Fatalf("%d, %d %v", plain.Code, zipped.Code, zipped.Header())
	}
	if got := gunzipAll(t, zipped.Body.Bytes()); !bytes.Equal(got, plain.Body.Bytes()) {
		t.Fatal("the gzipped picture decodes to something else")
	}
	ratio := float64(zipped.Body.Len()) / float64(plain.Body.Len())
	t.Logf("PNG %d bytes; answer %d bytes, %d gzipped (%.2f)", png.Len(), plain.Body.Len(), zipped.Body.Len(), ratio)
	if ratio > 0.8 {
		t.Errorf("the picture's answer shrank only to %.2f", ratio)
	}
}

// TestCompressionRoutesExist: the routes compress.go treats apart are routes.
func TestCompressionRoutesExist(t *testing.T) {
	ts := newTestServer(t)
	routes := map[string]bool{}
	for _, r := range ts.srv.RoutePaths() {
		routes[r] = true
	}
	param := regexp.MustCompile(`:(\w+)`)
	for _, r := range server.CompressionRoutes() {
		if openAPI := param.ReplaceAllString(r, "{$1}"); !routes[openAPI] {
			t.Errorf("compress.go names %s, which is no route", r)
		}
	}
}

func gunzipAll(t *testing.T, b []byte) []byte {
	t.Helper()
	out, err := io.ReadAll(mustGunzip(t, bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustGunzip(t *testing.T, r io.Reader) io.Reader {
	t.Helper()
	zr, err := gzip.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

// BenchmarkPlantsAnswer is the cost of GET …/plants (33 plants) through the handler
// (no network), plain and gzipped, with the bytes it sends.
func BenchmarkPlantsAnswer(b *testing.B) {
	ds := demo.Generate(demo.Options{Seed: 5, Beds: 1, Plants: 33})
	so := startDemoSpatial(b, ds, demo.ServerOptions{})
	g := startGardend(b, server.Config{Now: func() time.Time { return ds.Now },
		Spatial: spatial.ClientConfig{Addr: so.Addr(), CallTimeout: 2 * time.Second}})
	token := g.register("gardener")
	f := g.gardenWithBeds(token, ds.ProjectUUIDs())
	url := f.path + "/beds/" + fmt.Sprint(f.beds[0]) + "/plants"
	h := g.srv.Handler()
	var plain []byte
	for _, accept := range []string{"identity", "gzip"} {
		b.Run("Accept-Encoding="+accept, func(b *testing.B) {
			var sent int
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Token "+token)
				req.Header.Set("Accept-Encoding", accept)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
				sent = w.Body.Len()
				if accept == "identity" {
					plain = w.Body.Bytes()
				}
			}
			b.ReportMetric(float64(sent), "bytes/answer")
		})
	}
	// The levels gzip offers, on the same answer: what compress.go's choice costs.
	for _, level := range []int{gzip.HuffmanOnly, gzip.BestSpeed, gzip.DefaultCompression, gzip.BestCompression} {
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			zw, _ := gzip.NewWriterLevel(io.Discard, level)
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				zw.Reset(&out)
				zw.Write(plain)
				zw.Close()
			}
			b.ReportMetric(float64(out.Len()), "bytes/answer")
			b.SetBytes(int64(len(plain)))
		})
	}
}
