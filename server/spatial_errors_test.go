package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/demo"
)

// logLines collects JSON log lines from concurrent writers.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// with returns the lines whose message is msg, decoded.
func (l *logLines) with(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// waitFor polls the log for a line with msg: the start-up probe runs in the
// background and its outcome is only visible in the log.
func (l *logLines) waitFor(t *testing.T, msg string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if lines := l.with(msg); len(lines) > 0 {
			return lines[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no log line %q in:\n%s", msg, l.buf.String())
	return nil
}

// hostileUpstream is what a spatial server's error may hold: internal hosts,
// credentials, paths, and characters that break terminals.
const hostileUpstream = "pq: password authentication failed for user seerep (password=hunter2) at db.internal:5432, see /srv/seerep/secrets.yaml\x1b[2J"

// A spatial server's error text never reaches a client: bed error lines and 502
// details carry a fixed text per gRPC status. The log gets one line per failed call
// with the address, the method, the code and the server's own words.
func TestSpatialErrorsReachClientsAsFixedTextAndTheLogInFull(t *testing.T) {
	logs := &logLines{}
	ss := newSpatialSetup(t, demo.Options{Seed: 5, Beds: 3, Plants: 4}, demo.ServerOptions{}, noCache,
		func(cfg *server.Config) { cfg.Logger = zerolog.New(logs).Level(zerolog.InfoLevel) })
	uuids := ss.ds.ProjectUUIDs()
	ss.demo.SetHook(func(method, project string) (time.Duration, error) {
		if method != mDetails {
			return 0, nil
		}
		switch project {
		case uuids[0]:
			return 0, status.Error(codes.Internal, hostileUpstream)
		case uuids[1]:
			return 0, status.Error(codes.PermissionDenied, hostileUpstream)
		}
		return 0, nil
	})

	lines := ss.g.streamBeds(ss.garden, ss.token)
	want := []string{
		"spatial: GetProjectDetails of project " + uuids[0] + ": spatial server error (Internal)",
		"spatial: GetProjectDetails of project " + uuids[1] + ": the spatial server refused gardend's request (PermissionDenied): check its credentials",
		"",
	}
	for i, l := range lines {
		if l.Error != want[i] {
			t.Errorf("bed %d: error %q, want %q", i, l.Error, want[i])
		}
	}
	code, body := ss.g.call("GET", ss.garden+"/beds/"+u64(ss.beds[0])+"/plants", ss.token, nil)
	var p struct{ Detail string }
	json.Unmarshal(body, &p)
	if code != http.StatusBadGateway || p.Detail != want[0] {
		t.Errorf("plants: %d %s", code, body)
	}
	for _, leak := range []string{"hunter2", "db.internal", "/srv/", "\x1b", ss.demo.Addr()} {
		for _, l := range lines {
			if strings.Contains(l.Error, leak) {
				t.Errorf("bed line leaks %q: %q", leak, l.Error)
			}
		}
		if bytes.Contains(body, []byte(leak)) {
			t.Errorf("502 leaks %q: %s", leak, body)
		}
	}

	// One line per failed call: the listing's two and the plants request's one.
	failed := logs.with("spatial call failed")
	if len(failed) != 3 {
		t.Fatalf("%d failed-call lines, want 3:\n%s", len(failed), logs.buf.String())
	}
	ids := map[any]bool{}
	for _, l := range failed {
		if l["level"] != "warn" || l["spatial"] != ss.demo.Addr() || l["method"] != mDetails ||
			l["upstream"] != hostileUpstream || !strings.Contains(l["target"].(string), "of project ") || l["request_id"] == "" {
			t.Errorf("log line %v", l)
		}
		ids[l["request_id"]] = true
		if c := l["code"]; c != "Internal" && c != "PermissionDenied" {
			t.Errorf("code %v", c)
		}
	}
	if len(ids) != 2 {
		t.Errorf("request ids %v: want the listing's and the plants request's", ids)
	}

	// The address at start, and that it could be reached.
	if l := logs.waitFor(t, "spatial data server"); l["spatial"] != ss.demo.Addr() {
		t.Errorf("start line %v", l)
	}
	if l := logs.waitFor(t, "spatial data server reachable"); l["spatial"] != ss.demo.Addr() {
		t.Errorf("probe line %v", l)
	}
}

func TestStartWarnsWhenTheSpatialServerCannotBeReached(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	logs := &logLines{}
	startGardend(t, server.Config{Spatial: spatial.ClientConfig{Addr: addr}, Logger: zerolog.New(logs).Level(zerolog.InfoLevel)})
	l := logs.waitFor(t, "the spatial data server cannot be reached; beds and plants answer 502 until it can")
	if l["level"] != "warn" || l["spatial"] != addr || !strings.Contains(l["error"].(string), "cannot connect to "+addr) {
		t.Errorf("warning %v", l)
	}
}
