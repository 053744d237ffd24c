package server

import (
	"mime"
	"strings"
	"testing"
)

func TestCompressibleType(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json; charset=utf-8": true,
		"application/problem+json":        true,
		"application/x-ndjson":            true,
		"application/yaml; charset=utf-8": true,
		"text/plain":                      true,
		"TEXT/HTML; charset=utf-8":        true,
		"image/svg+xml":                   true,
		"application/x-ply":               false,
		"application/x-tar":               false,
		"image/png":                       false,
		"application/octet-stream":        false,
		"":                                false,
		"+json":                           false,
		"text/":                           false,
	} {
		if got := compressibleType(ct); got != want {
			t.Errorf("compressibleType(%q) = %v, want %v", ct, got, want)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                        false,
		"gzip":                    true,
		"GZIP":                    true,
		"x-gzip":                  true,
		"gzip, deflate, br, zstd": true,
		"br;q=1.0, gzip;q=0.8":    true,
		"gzip;q=0":                false,
		"gzip; q=0.0":             false,
		"gzip;q=0, gzip;q=0.5":    true,
		"*":                       true,
		"*;q=0":                   false,
		"gzip;q=0, *":             false,
		"identity":                false,
		"br":                      false,
		"gzip;q=bogus":            false,
		"deflate, gzip;level=1":   true,
		" gzip ; q = 0.5 ":        true,
		"identity;q=1, *;q=0.001": true,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

// FuzzCompressHeaders: the header readers take any input, and agree with the
// standard library on what a media type is.
func FuzzCompressHeaders(f *testing.F) {
	for _, s := range []string{"gzip;q=0.5", "*, gzip;q=0", "application/json; charset=utf-8", "text/x+json", ";;,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		acceptsGzip(s)
		if !compressibleType(s) {
			return
		}
		mt, _, err := mime.ParseMediaType(s)
		if err == nil && !strings.Contains(mt, "/") {
			t.Errorf("%q is compressible but its media type %q has no slash", s, mt)
		}
	})
}
