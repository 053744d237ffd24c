package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// ImageHarness opens a record store with the image content store that goes with it
// (the database itself for PostgreSQL; files beside the bbolt file).
type ImageHarness struct {
	Open func(tb testing.TB, now func() time.Time) (store.Backend, store.ImageContent)
}

// RunImageContent runs the contract of store.ImageContent.
func RunImageContent(t *testing.T, h ImageHarness) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h ImageHarness)
	}{
		{"PutOpen", testImagePutOpen},
		{"Remove", testImageRemove},
		{"FailedUpload", testImageFailedUpload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

func openImages(t *testing.T, h ImageHarness) (store.Backend, store.ImageContent, store.Garden) {
	t.Helper()
	clock := NewClock()
	st, content := h.Open(t, clock.Now)
	t.Cleanup(func() {
		if err := st.CheckIndexes(); err != nil {
			t.Errorf("relations check: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	alice := mustUser(t, st, "alice")
	return st, content, mustGarden(t, st, mustCompany(t, st, alice, "c"), "g")
}

// Content of n pseudo-random bytes, the same for the same seed.
func content(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

var imagePathShape = regexp.MustCompile(`^images/[0-9a-f]+\.png$`)

func readImage(t *testing.T, c store.ImageContent, path string) ([]byte, error) {
	t.Helper()
	rc, size, err := c.OpenImage(context.Background(), path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }() // read only
	data, err := io.ReadAll(rc)
	if err == nil && int64(len(data)) != size {
		t.Errorf("read %d bytes of an image of %d", len(data), size)
	}
	return data, err
}

func testImagePutOpen(t *testing.T, h ImageHarness) {
	st, c, g := openImages(t, h)
	ctx := context.Background()
	for _, n := range []int{0, 1, 100 << 10, 3<<20 + 12345} {
		want := content(n, uint64(n))
		path, size, err := c.PutImage(ctx, g.ID, bytes.NewReader(want))
		if err != nil || size != int64(n) || !imagePathShape.MatchString(path) {
			t.Fatalf("PutImage(%d bytes) = %q, %d, %v", n, path, size, err)
		}
		got, err := readImage(t, c, path)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("content of %d bytes read back as %d bytes, %v", n, len(got), err)
		}
	}
	p1, _, _ := c.PutImage(ctx, g.ID, bytes.NewReader([]byte("a")))
	p2, _, _ := c.PutImage(ctx, g.ID, bytes.NewReader([]byte("a")))
	if p1 == p2 {
		t.Errorf("two uploads share the path %s", p1)
	}
	_, _, err := c.OpenImage(ctx, "images/0000.png")
	wantErr(t, err, store.ErrNotFound)
	_, _, err = c.PutImage(ctx, 999, bytes.NewReader([]byte("x")))
	wantErr(t, err, store.ErrNotFound)
	// The record points at what was put.
	if _, err := st.SetGardenImage(g.ID, p1, corners); err != nil {
		t.Fatal(err)
	}
	path, _, _ := st.GardenImage(g.ID)
	if got, err := readImage(t, c, path); err != nil || string(got) != "a" {
		t.Errorf("image of the garden: %q, %v", got, err)
	}
}

func testImageRemove(t *testing.T, h ImageHarness) {
	st, c, g := openImages(t, h)
	ctx := context.Background()
	old, _, err := c.PutImage(ctx, g.ID, bytes.NewReader([]byte("old")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetGardenImage(g.ID, old, corners); err != nil {
		t.Fatal(err)
	}
	// What a garden shows stays.
	if err := c.RemoveImage(ctx, old); err != nil {
		t.Fatal(err)
	}
	if got, err := readImage(t, c, old); err != nil || string(got) != "old" {
		t.Fatalf("removed the garden's image: %q, %v", got, err)
	}
	// An upload replaces it: the old content can go, once and again without error.
	nw, _, err := c.PutImage(ctx, g.ID, bytes.NewReader([]byte("new")))
	if err != nil {
		t.Fatal(err)
	}
	prev, err := st.SetGardenImage(g.ID, nw, corners)
	if err != nil || prev != old {
		t.Fatalf("SetGardenImage = %q, %v", prev, err)
	}
	for range 2 {
		if err := c.RemoveImage(ctx, prev); err != nil {
			t.Fatal(err)
		}
	}
	_, err = readImage(t, c, old)
	wantErr(t, err, store.ErrNotFound)
	// Deleting the garden, then what Removed lists, leaves nothing.
	r, err := st.DeleteGarden(g.Company, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.ImagePaths {
		if err := c.RemoveImage(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	_, err = readImage(t, c, nw)
	wantErr(t, err, store.ErrNotFound)
}

// failingReader yields n bytes and then fails, like a client that goes away.
type failingReader struct{ n int }

var errClientGone = errors.New("client went away")

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errClientGone
	}
	k := min(len(p), r.n)
	clear(p[:k])
	r.n -= k
	return k, nil
}

func testImageFailedUpload(t *testing.T, h ImageHarness) {
	st, c, g := openImages(t, h)
	_, _, err := c.PutImage(context.Background(), g.ID, &failingReader{n: 600 << 10})
	if !errors.Is(err, errClientGone) {
		t.Fatalf("PutImage from a failing reader: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.PutImage(ctx, g.ID, bytes.NewReader([]byte("x"))); err == nil {
		t.Fatal("PutImage with a cancelled context succeeded")
	}
	if paths, _ := st.ImagePaths(); len(paths) != 0 {
		t.Errorf("a failed upload is referenced: %v", paths)
	}
}
