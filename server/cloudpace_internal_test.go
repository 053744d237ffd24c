package server

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial/cloud"
)

// TestCloudSlotsSlowReadersGiveWay: clients that take every cloud slot and then read
// nothing held them up to --write-timeout, renewably: 32 downloads from 4 addresses
// reading 1000 bytes a second kept everyone else's clouds at 503 (150 of 150 tries
// over 15 s). At the cap, a response behind the pace now gives its slot to the
// newcomer, as uploads do.
func TestCloudSlotsSlowReadersGiveWay(t *testing.T) {
	s := newInternalServer(t, func(c *Config) {
		c.MaxCloudResponses = 4 // one per address
		c.TrustProxy = true     // the addresses come from X-Forwarded-For
		// A waiting write is behind at once (with no grace, below).
		c.BodyMinRate = 1 << 30
	})
	s.cloudSlots.grace = 0
	const project = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
	large := writeTestCloud(t, s, project, "0b5e8a1c-1111-4111-8111-111111111111", 1<<20) // 12 MiB
	small := writeTestCloud(t, s, project, "0b5e8a1c-2222-4111-8111-111111111111", 2)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	for i := range s.cloudSlots.max {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.(*net.TCPConn).SetReadBuffer(4 << 10) // a hint; the test holds without it too
		if _, err := io.WriteString(c, "GET "+large+" HTTP/1.1\r\nHost: gardend\r\nX-Forwarded-For: 192.0.2."+string(rune('1'+i))+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	// Every slot is taken by a response whose write waits.
	deadline := time.Now().Add(10 * time.Second)
	for !s.cloudSlots.allWaiting() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d slots taken by responses waiting to write", s.cloudSlots.inUse(), s.cloudSlots.max)
		}
		time.Sleep(time.Millisecond) // waits for a state, orders nothing
	}

	req, _ := http.NewRequest("GET", srv.URL+small, nil)
	req.Header.Set("X-Forwarded-For", "192.0.2.99")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("a newcomer while 4 readers that read nothing hold every slot: %d %s", res.StatusCode, body)
	}
	if pc, err := cloud.ReadPLY(bytes.NewReader(body)); err != nil || pc.Width != 2 {
		t.Fatalf("the newcomer's cloud: %d points, %v", pc.Width, err)
	}
}

// allWaiting reports whether every slot is taken by a response whose write waits.
func (c *cloudSlots) allWaiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for h := range c.held {
		if h.waiting.Load() != 0 {
			n++
		}
	}
	return n == c.max
}

// writeTestCloud keeps a cloud of points (x, y, z all 0) for project and returns its
// signed URL's path and query.
func writeTestCloud(t *testing.T, s *Server, project, cloudUUID string, points int) string {
	t.Helper()
	pc := cloud.PointCloud{Width: uint32(points), Height: 1, PointStep: 12, RowStep: uint32(12 * points), Fields: []cloud.Field{
		{Name: "x", Offset: 0, Datatype: cloud.Float32, Count: 1},
		{Name: "y", Offset: 4, Datatype: cloud.Float32, Count: 1},
		{Name: "z", Offset: 8, Datatype: cloud.Float32, Count: 1}}, Data: make([]byte, 12*points)}
	var file bytes.Buffer
	if err := cloud.WritePLY(&file, pc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.cfg.DataDir, pointcloud.DirName, project, cloudUUID+".ply")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	url, _ := s.signer.sign(signedPLYPath(project, cloudUUID))
	return url
}
