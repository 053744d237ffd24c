package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// Tests through a real proxy: Debian's haproxy, configured as docs/scaling.md says.
// .ci/run installs it; elsewhere a missing haproxy skips the test (and fails it with
// GARDEND_CI set).

// haproxyPath finds the haproxy binary.
func haproxyPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"haproxy", "/usr/sbin/haproxy"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("GARDEND_CI") != "" {
		t.Fatal("no haproxy found, and GARDEND_CI is set: .ci/run installs Debian's haproxy")
	}
	t.Skip("no haproxy found (apt-get install haproxy; set GARDEND_CI to make this a failure)")
	return ""
}

// haproxy is a running haproxy in front of gardend nodes.
type haproxy struct {
	base  string // the frontend, http://127.0.0.1:port
	stats string // its stats socket
}

// startHAProxy runs haproxy with docs/scaling.md's backend (checks every 100 ms
// instead of 2 s, so that a test sees many) in front of nodes, until the test ends,
// and waits until it has every node up.
func startHAProxy(t *testing.T, nodes ...string) *haproxy {
	t.Helper()
	bin := haproxyPath(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // for haproxy to bind; nothing else in the test takes a port meanwhile
	dir := t.TempDir()
	hp := &haproxy{base: "http://" + addr, stats: filepath.Join(dir, "stats.sock")}
	var servers strings.Builder
	for i, n := range nodes {
		fmt.Fprintf(&servers, "    server node%d %s check\n", i+1, n)
	}
	conf := `global
    stats socket ` + hp.stats + ` mode 600 level admin
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 2s
frontend api
    bind ` + addr + `
    default_backend gardend
backend gardend
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 100ms fall 2 rise 2
    option forwardfor
    http-request set-header X-Forwarded-Proto https if { ssl_fc }
    option redispatch
` + servers.String()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	cmd := exec.Command(bin, "-db", "-f", cfgPath)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if err := <-exited; t.Failed() {
			t.Logf("haproxy ended (%v); its output:\n%s", err, out.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		states, err := hp.serverStates()
		up := err == nil && len(states) == len(nodes)
		for _, st := range states {
			up = up && st == "UP"
		}
		if up {
			return hp
		}
		select {
		case err := <-exited:
			t.Fatalf("haproxy exited: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy has not every node up: %v %v\n%s", states, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverStates asks the stats socket for the state of each node (UP, DOWN, …).
func (hp *haproxy) serverStates() (map[string]string, error) {
	conn, err := net.Dial("unix", hp.stats)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(conn)
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("# "))))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("stats %q: %v", data, err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	states := map[string]string{}
	for _, row := range rows[1:] {
		if len(row) > col["status"] && row[col["pxname"]] == "gardend" && strings.HasPrefix(row[col["svname"]], "node") {
			states[row[col["svname"]]] = row[col["status"]]
		}
	}
	return states, nil
}

// readyzProbes is how many GET /readyz the node has answered, from its metrics on the
// admin socket.
func readyzProbes(t *testing.T, g *gardend) float64 {
	t.Helper()
	fam := scrape(t, unixClient(server.AdminSocketPath(g.cfg.DataDir)), "http://gardend/metrics")
	n := 0.0
	for _, m := range fam["gardend_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && l.GetValue() == "/readyz" {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// TestSpatialOutageBehindProxy is issue 15 item 4: two nodes on one PostgreSQL behind
// haproxy, its checks on /readyz as docs/scaling.md says. When the spatial server
// died, /readyz failed on both nodes, haproxy took both out and every request got
// its 503, though none of these needs the spatial server. Readiness leaves the
// spatial server out, so the nodes stay in and the requests are answered throughout.
func TestSpatialOutageBehindProxy(t *testing.T) {
	be := postgresBackend(t)
	ds := demo.Generate(demo.Options{Seed: 1, Beds: 1, Plants: 2})
	sp := startDemoSpatial(t, ds, demo.ServerOptions{})
	cfg := server.Config{TrustProxy: true, AdminSocket: true, Spatial: spatial.ClientConfig{Addr: sp.Addr(), CallTimeout: time.Second}}
	nodes := []*gardend{startGardendOn(t, be, cfg), startGardendOn(t, be, cfg)}
	hp := startHAProxy(t, nodes[0].srv.Addr(), nodes[1].srv.Addr())

	// Ann's garden with a bed and an image, made through the proxy.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	call := func(method, path, token string, body any) (int, []byte) {
		var r io.Reader
		if body != nil {
			doc, _ := json.Marshal(body)
			r = bytes.NewReader(doc)
		}
		req, _ := http.NewRequest(method, hp.base+path, r)
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Token "+token)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s through haproxy: %v", method, path, err)
		}
		defer func() { _ = res.Body.Close() }()
		data, _ := io.ReadAll(res.Body)
		return res.StatusCode, data
	}
	must := func(want int, method, path, token string, body, out any) {
		t.Helper()
		code, data := call(method, path, token, body)
		if code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, code, data, want)
		}
		if out != nil {
			if err := json.Unmarshal(data, out); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
		}
	}
	must(http.StatusCreated, "POST", "/register", "", map[string]string{"username": "ann", "password": "pw-of-ann", "first_name": "A", "last_name": "N"}, nil)
	login := map[string]string{"username": "ann", "password": "pw-of-ann"}
	var tok struct{ Token string }
	must(http.StatusOK, "POST", "/login", "", login, &tok)
	var company, garden struct{ ID uint64 }
	must(http.StatusCreated, "POST", "/companies", tok.Token, map[string]string{"name": "farm"}, &company)
	must(http.StatusCreated, "POST", companyPath(company.ID)+"/gardens", tok.Token, map[string]string{"name": "garden"}, &garden)
	gp := gardenPath(company.ID, garden.ID)
	var bed struct{ ID uint64 }
	must(http.StatusCreated, "POST", gp+"/beds", tok.Token, map[string]string{"uuid": ds.ProjectUUIDs()[0]}, &bed)
	png, err := os.ReadFile("../testdata/images/garden.png")
	if err != nil {
		t.Fatal(err)
	}
	must(http.StatusCreated, "POST", gp+"/image", tok.Token, map[string]any{
		"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), "coordinates": cornersJSON}, nil)
	must(http.StatusCreated, "POST", "/user/widgets", tok.Token, map[string]any{"layout": []int{1, 2}}, nil)

	// The spatial server dies; each node sees it (the beds answer 502, the error
	// named in the bed's line), and haproxy checks each node several times more
	// than it takes to take one out (fall 2).
	sp.Stop()
	for i, n := range nodes {
		eventually(t, fmt.Sprintf("node %d to find the spatial server gone", i), func() bool {
			code, _ := n.call("GET", gp+"/beds/"+u64(bed.ID)+"/plants", tok.Token, nil)
			return code == http.StatusBadGateway
		})
	}
	var probed []float64
	for _, n := range nodes {
		probed = append(probed, readyzProbes(t, n)+6)
	}
	requests := []struct {
		method, path string
		body         any
	}{
		{"POST", "/login", login},
		{"GET", "/user", nil},
		{"GET", "/companies", nil},
		{"GET", gp, nil},
		{"GET", "/user/widgets", nil},
		{"POST", "/user/widgets", map[string]any{"layout": []int{3}}},
		{"GET", gp + "/image", nil},
	}
	answered := map[int]int{}
	failed, rounds := 0, 0
	for start := time.Now(); ; rounds++ {
		for _, rq := range requests {
			code, data := call(rq.method, rq.path, tok.Token, rq.body)
			answered[code]++
			if code >= 300 {
				if failed++; failed <= 5 {
					t.Errorf("%s %s during the spatial outage: %d %.200s", rq.method, rq.path, code, data)
				}
			}
		}
		done := rounds >= 10
		for i, n := range nodes {
			done = done && readyzProbes(t, n) >= probed[i]
		}
		if done {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("haproxy did not check the nodes within 30 s")
		}
	}
	states, err := hp.serverStates()
	if err != nil || states["node1"] != "UP" || states["node2"] != "UP" {
		t.Errorf("haproxy's servers after the outage: %v %v", states, err)
	}
	t.Logf("spatial server down, %d rounds of %d requests through haproxy: answers by status %v; servers %v",
		rounds+1, len(requests), answered, states)
}
