package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial/cloud"
)

// TestCloudSlotsShares: the slots bound the cloud responses in all, and one address
// (an IPv6 /64 counts as one) gets a quarter of them, so it cannot hold the rest.
func TestCloudSlotsShares(t *testing.T) {
	c := newCloudSlots(8)
	addr := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	var releases []func()
	take := func(a string, want error) {
		t.Helper()
		rel, err := c.take(addr(a))
		if !errors.Is(err, want) {
			t.Fatalf("take for %s: %v, want %v", a, err, want)
		}
		if rel != nil {
			releases = append(releases, rel)
		}
	}
	take("192.0.2.1", nil)
	take("192.0.2.1", nil)
	take("192.0.2.1", errCloudsBusy) // its quarter
	take("2001:db8::1", nil)
	take("2001:db8::2", nil)
	take("2001:db8::3", errCloudsBusy) // the same /64
	take("192.0.2.2", nil)
	take("192.0.2.2", nil)
	take("192.0.2.3", nil)
	take("192.0.2.3", nil)
	take("192.0.2.4", errCloudsBusy) // all 8 taken
	releases[0]()
	releases[0]() // twice is once
	if c.inUse() != 7 {
		t.Fatalf("%d in use after one release, want 7", c.inUse())
	}
	take("192.0.2.1", nil)
	take("192.0.2.4", errCloudsBusy)
	for _, rel := range releases {
		rel()
	}
	if c.inUse() != 0 || len(c.byAddr) != 0 {
		t.Fatalf("after every release: %d in use, %v", c.inUse(), c.byAddr)
	}
}

// TestSignedPLYSlots: a signed cloud URL beyond the caller's share of the cloud slots
// is 503 with Retry-After at once; other clients are served meanwhile, and every
// response gives its slot back.
func TestSignedPLYSlots(t *testing.T) {
	s := newInternalServer(t, func(c *Config) { c.MaxCloudResponses = 4 })
	const project, cloudUUID = "3fa85f64-5717-4562-b3fc-2c963f66afa6", "0b5e8a1c-1111-4111-8111-111111111111"
	path := filepath.Join(s.cfg.DataDir, pointcloud.DirName, project, cloudUUID+".ply")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	pc := cloud.PointCloud{Width: 2, Height: 1, PointStep: 12, RowStep: 24, Fields: []cloud.Field{
		{Name: "x", Offset: 0, Datatype: cloud.Float32, Count: 1},
		{Name: "y", Offset: 4, Datatype: cloud.Float32, Count: 1},
		{Name: "z", Offset: 8, Datatype: cloud.Float32, Count: 1}}}
	for _, v := range []float32{1, 2, 3, float32(math.NaN()), 0, 0} {
		pc.Data = binary.LittleEndian.AppendUint32(pc.Data, math.Float32bits(v))
	}
	var file bytes.Buffer
	if err := cloud.WritePLY(&file, pc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	url, _ := s.signer.sign(signedPLYPath(project, cloudUUID))
	get := func(from string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", url, nil)
		req.RemoteAddr = from + ":40000"
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}

	held, err := s.cloudSlots.take(netip.MustParseAddr("192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	if rec := get("192.0.2.1"); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("beyond the address's share: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	rec := get("192.0.2.2")
	served, err := cloud.ReadPLY(rec.Body)
	if rec.Code != http.StatusOK || err != nil || served.Width != 1 {
		t.Fatalf("another client: %d, %d points (%v)", rec.Code, served.Width, err)
	}
	held()
	if rec := get("192.0.2.1"); rec.Code != http.StatusOK {
		t.Fatalf("once the slot is free: %d %s", rec.Code, rec.Body)
	}
	if n := s.cloudSlots.inUse(); n != 0 {
		t.Fatalf("%d slots still taken after the responses", n)
	}
}
