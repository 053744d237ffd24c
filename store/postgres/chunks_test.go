package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"runtime"
	"testing"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestStalledDownloadsHoldAPiece: a download whose client stopped reading holds what
// its reader fetched last. That was a whole chunk (256 KiB, about 300 KiB with the
// encoder's buffers, per stalled garden image; issue 15, D4); it is a piece of 32
// KiB now. The content still reads back whole, for a size that ends mid-piece and
// one that ends on a chunk's end.
func TestStalledDownloadsHoldAPiece(t *testing.T) {
	st, err := Open(context.Background(), pgtest.NewDatabase(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	u, err := st.CreateUser(store.NewUser{Username: "owner", FirstName: "O", LastName: "W", PasswordHash: "!"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateCompany(u.ID, "c")
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.CreateGarden(c.ID, "g")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{3*ImageChunkSize + readPiece + 17, 2 * ImageChunkSize} {
		want := make([]byte, size)
		_, _ = rand.Read(want)
		path, _, err := st.PutImage(ctx, 0, bytes.NewReader(want))
		if err != nil {
			t.Fatal(err)
		}
		f, n, err := st.OpenImage(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(f)
		if err != nil || n != int64(size) || !bytes.Equal(got, want) {
			t.Fatalf("image of %d bytes read back: %d bytes (size %d), %v", size, len(got), n, err)
		}
		photo, _, err := st.PutPhoto(ctx, g.ID, ".jpg", bytes.NewReader(want))
		if err != nil {
			t.Fatal(err)
		}
		if f, _, err = st.OpenPhoto(ctx, photo); err != nil {
			t.Fatal(err)
		}
		if got, err = io.ReadAll(f); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("photo of %d bytes read back: %d bytes, %v", size, len(got), err)
		}
	}

	want := make([]byte, 4*ImageChunkSize)
	_, _ = rand.Read(want)
	path, _, err := st.PutImage(ctx, 0, bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	const stalled = 32
	readers := make([]io.ReadCloser, stalled)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range readers {
		f, _, err := st.OpenImage(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		var one [1]byte
		if _, err := io.ReadFull(f, one[:]); err != nil || one[0] != want[0] {
			t.Fatal(err)
		}
		readers[i] = f
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / stalled
	t.Logf("each stalled download holds %d KiB", per>>10)
	if per > 64<<10 {
		t.Errorf("each stalled download holds %d KiB; want at most 64", per>>10)
	}
	runtime.KeepAlive(readers)
	runtime.KeepAlive(want)
}
