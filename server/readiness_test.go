package server_test

import (
	"encoding/json"
	"net"
	"net/http"
	"runtime"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

type readyAnswer struct {
	Status string `json:"status"`
	Checks map[string]struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"checks"`
}

func TestReadyz(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	up := startDemoSpatial(t, demo.Generate(demo.Options{Seed: 1, Beds: 1, Plants: 2}), demo.ServerOptions{})

	cases := []struct {
		name    string
		spatial string
		code    int
		checks  map[string]string // check → status
	}{
		{"no spatial server configured", "", http.StatusOK, map[string]string{"requests": "ok", "connections": "ok", "database": "ok"}},
		{"spatial server up", up.Addr(), http.StatusOK, map[string]string{"requests": "ok", "connections": "ok", "database": "ok", "spatial": "ok"}},
		{"spatial server down", down, http.StatusServiceUnavailable, map[string]string{"requests": "ok", "connections": "ok", "database": "ok", "spatial": "failing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *server.Config) {
				c.Spatial = spatial.ClientConfig{Addr: tc.spatial}
			})
			res := h.do("GET", "/readyz", "", nil).expect(tc.code)
			if res.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", res.Header().Get("Cache-Control"))
			}
			var a readyAnswer
			if err := json.Unmarshal(res.Body.Bytes(), &a); err != nil {
				t.Fatal(err)
			}
			wantStatus := map[int]string{200: "ready", 503: "not ready"}[tc.code]
			if a.Status != wantStatus || len(a.Checks) != len(tc.checks) {
				t.Fatalf("answer %+v", a)
			}
			for name, want := range tc.checks {
				got := a.Checks[name]
				if got.Status != want || (want == "failing") != (got.Error != "") {
					t.Errorf("check %s: %+v, want %s", name, got, want)
				}
			}
			if e := a.Checks["spatial"].Error; e != "" && e != "spatial server unavailable" {
				t.Errorf("spatial error %q leaks detail", e)
			}
		})
	}
}

func TestVersionEndpoint(t *testing.T) {
	build := server.BuildInfo{Version: "v1.2.3", Revision: "b9f41c5ad911", Time: "2026-11-22T04:30:50Z", Go: runtime.Version()}
	h := newHarness(t, func(c *server.Config) { c.Build = build })
	var got server.BuildInfo
	if err := json.Unmarshal(h.do("GET", "/version", "", nil).expect(http.StatusOK).Body.Bytes(), &got); err != nil || got != build {
		t.Fatalf("version %+v, %v", got, err)
	}
	// Without one given, the binary's own build information.
	h = newHarness(t)
	if err := json.Unmarshal(h.do("GET", "/version", "", nil).expect(http.StatusOK).Body.Bytes(), &got); err != nil ||
		got.Go != runtime.Version() || got.Version == "" || got.Revision == "" {
		t.Fatalf("default version %+v, %v", got, err)
	}
}
