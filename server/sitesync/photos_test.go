package sitesync

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server/sitesync/synctest"
	"github.com/gardend/gardend/store"
)

// testPicture encodes a w×h picture as JPEG or PNG, its pixels from seed.
func testPicture(t testing.TB, contentType string, w, h int, seed byte) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{R: byte(x) + seed, G: byte(y) * seed, B: byte(x ^ y), A: 255})
		}
	}
	var buf bytes.Buffer
	var err error
	if contentType == store.PhotoPNG {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85})
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// openBytes reads the photo content at path.
func openBytes(t testing.TB, c store.PhotoContent, path string) []byte {
	t.Helper()
	rc, n, err := c.OpenPhoto(context.Background(), path)
	return readAll(t, rc, n, err)
}

// TestPhotos: a log's photos reach the office with their bytes and thumbnails as
// the box keeps them; a deleted one goes with its content; one added while the link
// is down arrives once it is back; a thumbnail made later replaces the replica's
// content.
func TestPhotos(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hub, ost := officeWithHub(t)
	proxy := synctest.NewProxy(t, strings.TrimPrefix(hub.LeafURL(), "nats-leaf://"))
	startOffice(t, hub, ost, "office-1")
	b := newBoxStore(t)
	owner := must[store.User](t)(b.st.CreateUser(store.NewUser{Username: "owner", FirstName: "O", LastName: "W", PasswordHash: "h"}))
	c := must[store.Company](t)(b.st.CreateCompany(owner.ID, "Farm"))
	g := must[store.Garden](t)(b.st.CreateGarden(c.ID, "Field"))
	l := must[store.Log](t)(b.st.CreateLog(g.ID, owner.ID, store.LogPatch{Type: ptr(store.LogObservation), Title: ptr("blight")}, nil))
	content := map[string][]byte{} // the box's content path → its bytes
	add := func(contentType string, seed byte, thumb bool) store.Photo {
		t.Helper()
		pic := testPicture(t, contentType, 640, 480, seed)
		var th []byte
		if thumb {
			th = testPicture(t, store.PhotoJPEG, 320, 240, seed)
		}
		p := addPhoto(t, b, g.ID, l.ID, owner.ID, contentType, pic, th)
		content[p.Path] = pic
		if thumb {
			content[p.ThumbPath] = th
		}
		return p
	}
	jpg := add(store.PhotoJPEG, 1, true)
	pngPhoto := add(store.PhotoPNG, 2, true)
	b.join(t, ost, "farm-a", "nats-leaf://"+proxy.Addr())
	converge(t, 30*time.Second, b, ost)

	// officePhoto reads the office's replica of a box photo and checks its bytes and
	// its thumbnail's are the box's.
	officePhoto := func(p store.Photo) store.Photo {
		t.Helper()
		op, err := ost.Photo(b.gid(g.ID), b.gid(l.ID), b.gid(p.ID))
		if err != nil {
			t.Fatalf("photo %d at the office: %v", p.ID, err)
		}
		if op.ContentType != p.ContentType || op.Size != int64(len(content[p.Path])) {
			t.Errorf("photo %d at the office: %+v", p.ID, op)
		}
		if got := openBytes(t, ost, op.Path); !bytes.Equal(got, content[p.Path]) {
			t.Errorf("photo %d: the office serves %d bytes unlike the box's %d", p.ID, len(got), len(content[p.Path]))
		}
		if p.ThumbPath == "" {
			if op.ThumbPath != "" {
				t.Errorf("photo %d has a thumbnail at the office only", p.ID)
			}
			return op
		}
		if got := openBytes(t, ost, op.ThumbPath); !bytes.Equal(got, content[p.ThumbPath]) {
			t.Errorf("photo %d: the office's thumbnail differs from the box's", p.ID)
		}
		return op
	}
	ol, err := ost.Log(b.gid(g.ID), b.gid(l.ID))
	if err != nil || !slices.Equal(ol.Photos, []uint64{b.gid(jpg.ID), b.gid(pngPhoto.ID)}) {
		t.Fatalf("the replica log's photos: %v, %v", ol.Photos, err)
	}
	oldJPEG := officePhoto(jpg)
	officePhoto(pngPhoto)

	// Deleted at the box: gone at the office, content and all.
	removed := must[store.Removed](t)(b.st.DeletePhoto(g.ID, l.ID, jpg.ID, nil))
	for _, p := range removed.PhotoPaths {
		if err := b.photos.RemovePhoto(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	converge(t, 30*time.Second, b, ost)
	if _, err := ost.PhotoByID(b.gid(jpg.ID)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deleted photo at the office: %v", err)
	}
	for _, p := range []string{oldJPEG.Path, oldJPEG.ThumbPath} {
		if _, _, err := ost.OpenPhoto(ctx, p); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the deleted photo's content %s at the office: %v", p, err)
		}
	}

	// Added while the link is down (without a thumbnail, as one restored from an
	// archive may be): it arrives once the link is back.
	proxy.Cut()
	sent := b.box.Published()
	late := add(store.PhotoJPEG, 3, false)
	waitFor(t, 10*time.Second, "the box queueing the photo", func() bool { return b.box.Published() > sent })
	if _, err := ost.PhotoByID(b.gid(late.ID)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the photo reached the office through a cut link: %v", err)
	}
	proxy.Restore()
	converge(t, 30*time.Second, b, ost)
	before := officePhoto(late)

	// Its thumbnail made later at the box travels too; the office's copy of the
	// picture it replaced goes.
	th := testPicture(t, store.PhotoJPEG, 320, 240, 3)
	thPath, thSize, err := b.photos.PutPhoto(ctx, g.ID, ".jpg", bytes.NewReader(th))
	if err != nil {
		t.Fatal(err)
	}
	content[thPath] = th
	late = must[store.Photo](t)(b.st.SetPhotoThumb(late.ID, thPath, thSize))
	converge(t, 30*time.Second, b, ost)
	after := officePhoto(late)
	if after.ThumbPath == "" {
		t.Fatal("the thumbnail did not reach the office")
	}
	if after.Path != before.Path {
		if _, _, err := ost.OpenPhoto(ctx, before.Path); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the replaced copy %s at the office: %v", before.Path, err)
		}
	}
	if paths, err := ost.PhotoPaths(); err != nil || len(paths) != 4 {
		t.Errorf("the office's photos refer to %v, %v; want 4 paths (2 photos)", paths, err)
	}
}
