package spatial_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/spatial"
	"github.com/gardend/gardend/spatial/cloud"
	"github.com/gardend/gardend/spatial/demo"
)

func TestPointCloud(t *testing.T) {
	ds := dataset(1)
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	b := &ds.Beds[0]
	// Every layout of the generator: bed 0's plants 2, 3 and 4 are big-endian, float64
	// and organised; plant 1 the common padded float32 one, unless it had no cloud.
	seen, fetched := map[string]bool{}, 0
	for _, p := range b.Plants[:5] {
		if p.CloudUUID == "" {
			continue
		}
		fetched++
		t.Run(p.Name, func(t *testing.T) {
			got, err := c.PointCloud(context.Background(), b.ProjectUUID, p.CloudUUID)
			if err != nil {
				t.Fatal(err)
			}
			want := b.Clouds[p.CloudUUID].PointCloud
			if !reflect.DeepEqual(got, want) {
				t.Errorf("cloud differs: got %dx%d step %d/%d fields %v be %v (%d bytes), want %dx%d step %d/%d fields %v be %v (%d bytes)",
					got.Width, got.Height, got.PointStep, got.RowStep, got.Fields, got.BigEndian, len(got.Data),
					want.Width, want.Height, want.PointStep, want.RowStep, want.Fields, want.BigEndian, len(want.Data))
			}
			seen[layoutName(got)] = true
		})
	}
	for _, l := range []string{"big-endian", "float64", "organised"} {
		if !seen[l] {
			t.Errorf("no %s cloud came through", l)
		}
	}
	if n := c.Stats().Calls[mCloud]; n != int64(fetched) {
		t.Errorf("%d cloud calls for %d clouds", n, fetched)
	}

	t.Run("CloudTimeout, not CallTimeout", func(t *testing.T) {
		c := dial(t, srv.Addr(), spatial.ClientConfig{CallTimeout: 20 * time.Millisecond, CloudTimeout: 2 * time.Second})
		srv.SetProjectLatency(b.ProjectUUID, 100*time.Millisecond)
		defer srv.SetProjectLatency(b.ProjectUUID, 0)
		if _, err := c.PointCloud(context.Background(), b.ProjectUUID, b.Plants[1].CloudUUID); err != nil {
			t.Errorf("slow cloud within CloudTimeout: %v", err)
		}
		c = dial(t, srv.Addr(), spatial.ClientConfig{CloudTimeout: 50 * time.Millisecond})
		_, err := c.PointCloud(context.Background(), b.ProjectUUID, b.Plants[1].CloudUUID)
		if !errors.Is(err, spatial.ErrUnavailable) || !strings.Contains(err.Error(), "no answer within 50ms") {
			t.Errorf("err %v, want ErrUnavailable after 50ms", err)
		}
	})
	t.Run("unknown cloud", func(t *testing.T) {
		_, err := c.PointCloud(context.Background(), b.ProjectUUID, "nope")
		if !errors.Is(err, spatial.ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	})
}

func layoutName(pc cloud.PointCloud) string {
	switch {
	case pc.BigEndian:
		return "big-endian"
	case pc.Fields[0].Datatype == cloud.Float64:
		return "float64"
	case pc.Height > 1:
		return "organised"
	}
	return "float32"
}

// TestPointCloudLarge: clouds past gRPC's default 4 MiB receive limit come through.
func TestPointCloudLarge(t *testing.T) {
	data := make([]byte, 6<<20)
	ds := &demo.Dataset{Beds: []demo.Bed{{
		ProjectUUID: "p",
		Clouds: map[string]demo.Cloud{"big": {FrameID: "map", PointCloud: cloud.PointCloud{
			Width: uint32(len(data) / 16), Height: 1, PointStep: 16, RowStep: uint32(len(data)),
			Fields: []cloud.Field{{Name: "x", Datatype: cloud.Float32, Count: 1}}, Data: data,
		}}},
	}}}
	srv := startDemo(t, ds, demo.ServerOptions{})
	c := dial(t, srv.Addr(), spatial.ClientConfig{})
	got, err := c.PointCloud(context.Background(), "p", "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != len(data) {
		t.Errorf("%d bytes, want %d", len(got.Data), len(data))
	}
}

// TestTLS: with TLS on, the server's certificate is checked against CAFile.
func TestTLS(t *testing.T) {
	certPEM, keyPEM := selfSigned(t)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ds := dataset(1)
	srv := startDemo(t, ds, demo.ServerOptions{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}

	c := dial(t, srv.Addr(), spatial.ClientConfig{TLS: true, CAFile: caFile})
	if _, err := c.Bed(context.Background(), ds.Beds[0].ProjectUUID); err != nil {
		t.Errorf("with the right CA: %v", err)
	}
	// System roots do not know a self-signed certificate.
	c2 := dial(t, srv.Addr(), spatial.ClientConfig{TLS: true, CallTimeout: time.Second, Attempts: 1})
	if _, err := c2.Bed(context.Background(), ds.Beds[0].ProjectUUID); !errors.Is(err, spatial.ErrUnavailable) {
		t.Errorf("with system roots: err %v, want ErrUnavailable", err)
	}
	for _, f := range []string{junk, filepath.Join(dir, "missing.pem")} {
		if _, err := spatial.Dial(spatial.ClientConfig{Addr: srv.Addr(), TLS: true, CAFile: f}, testLogger(t)); err == nil {
			t.Errorf("Dial with CA file %s succeeded", filepath.Base(f))
		}
	}
}

func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "demo spatial server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}
