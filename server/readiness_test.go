package server_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

type readyAnswer struct {
	Status string `json:"status"`
	Checks map[string]struct {
		Status   string `json:"status"`
		Optional bool   `json:"optional"`
		Detail   string `json:"detail"`
		Error    string `json:"error"`
	} `json:"checks"`
}

// TestReadyz: the public /readyz says ready or not and nothing more (issue 15 item
// 14: it published the slots and connections in use); the spatial server's state
// does not make a node unready (issue 15 item 4: an outage took every node out of a
// proxy's rotation), it shows as an optional check on the admin socket's /readyz
// and in the metrics.
func TestReadyz(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	_ = ln.Close()
	up := startDemoSpatial(t, demo.Generate(demo.Options{Seed: 1, Beds: 1, Plants: 2}), demo.ServerOptions{})

	cases := []struct {
		name    string
		spatial string
		checks  map[string]string // check → status on the admin socket
	}{
		{"no spatial server configured", "", map[string]string{"requests": "ok", "connections": "ok", "database": "ok"}},
		{"spatial server up", up.Addr(), map[string]string{"requests": "ok", "connections": "ok", "database": "ok", "spatial": "ok"}},
		{"spatial server down", down, map[string]string{"requests": "ok", "connections": "ok", "database": "ok", "spatial": "failing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, base, _ := runServer(t, server.Config{DataDir: dir, AdminSocket: true, Spatial: spatial.ClientConfig{Addr: tc.spatial}})
			res, err := http.Get(base + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if res.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"status":"ready"}` {
				t.Fatalf("public readyz: %s %s", res.Status, body)
			}
			if res.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", res.Header.Get("Cache-Control"))
			}

			admin := unixClient(server.AdminSocketPath(dir))
			res, err = admin.Get("http://gardend/readyz")
			if err != nil {
				t.Fatal(err)
			}
			var a readyAnswer
			err = json.NewDecoder(res.Body).Decode(&a)
			_ = res.Body.Close()
			if err != nil || res.StatusCode != http.StatusOK || a.Status != "ready" || len(a.Checks) != len(tc.checks) {
				t.Fatalf("admin readyz: %s %+v %v", res.Status, a, err)
			}
			for name, want := range tc.checks {
				got := a.Checks[name]
				if got.Status != want || (want == "failing") != (got.Error != "") || got.Optional != (name == "spatial") {
					t.Errorf("check %s: %+v, want %s", name, got, want)
				}
			}
			if e := a.Checks["spatial"].Error; e != "" && e != "spatial server unavailable" {
				t.Errorf("spatial error %q leaks detail", e)
			}
			if d := a.Checks["requests"].Detail; d != "0 of 512 request slots in use" {
				t.Errorf("requests detail %q", d)
			}

			fam := scrape(t, admin, "http://gardend/metrics")
			spatialOK := map[string]float64{"ok": 1, "failing": 0, "": -1}[tc.checks["spatial"]]
			for _, m := range []struct {
				name   string
				labels map[string]string
				want   float64
			}{
				{"gardend_ready", nil, 1},
				{"gardend_readiness_check_ok", map[string]string{"check": "database", "optional": "false"}, 1},
				{"gardend_readiness_check_ok", map[string]string{"check": "spatial", "optional": "true"}, spatialOK},
				{"gardend_request_slots_limit", nil, 512},
				{"gardend_request_slots_used", nil, 0},
				{"gardend_connections_limit", nil, 1024},
				{"gardend_body_buffer_limit_bytes", nil, 64 << 20},
				{"gardend_uploads_limit", nil, 4},
			} {
				if v := value(sample(fam, m.name, m.labels)); v != m.want {
					t.Errorf("%s%v = %v, want %v", m.name, m.labels, v, m.want)
				}
			}
			if v := value(sample(fam, "gardend_connections_open", nil)); v < 0 {
				t.Error("no gardend_connections_open")
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
