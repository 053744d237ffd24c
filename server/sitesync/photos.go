package sitesync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gardend/gardend/store"
)

// Log photos travel as garden pictures do: the bytes through the site's bucket
// (Attach, Fetch), the record once they have arrived. The thumbnail travels too,
// rather than being made again at the receiver: it is a few KiB beside the picture,
// the receiver then decodes nothing a box sent (no decoder's limits or cost on the
// office's nodes), and it is the box's own, byte for byte.

// wirePhoto is a photo of a log (its company's record, like the log): its uploader
// may be anyone's, an agronomist of the office say.
type wirePhoto struct {
	ID          uint64    `json:"id"`
	Log         uint64    `json:"log"`
	Garden      uint64    `json:"garden"`
	ContentType string    `json:"content_type"`
	Width       int       `json:"width"`
	Height      int       `json:"height"`
	Uploader    uint64    `json:"uploader"`
	Created     time.Time `json:"created"`
	Picture     wireFile  `json:"picture"`
	// Thumb is nil when the photo has no thumbnail (yet) at its home.
	Thumb *wireFile `json:"thumb,omitempty"`
}

// wireFile is content in the bucket: Object is its path at its home, which never
// changes.
type wireFile struct {
	Object string `json:"object"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// path is the content's path at the site handling the record.
	path string
}

// photoExt is the extension photo content of the type is kept under.
func photoExt(contentType string) string {
	if contentType == store.PhotoPNG {
		return ".png"
	}
	return ".jpg" // thumbnails are JPEG; Validate refuses other types
}

func init() {
	Register(Kind[wirePhoto]{
		Name: store.KindPhoto,
		Load: func(st store.Backend, id, _ uint64) (wirePhoto, bool, error) {
			p, err := st.PhotoByID(id)
			w := wirePhoto{ID: p.ID, Log: p.Log, Garden: p.Garden, ContentType: p.ContentType, Width: p.Width,
				Height: p.Height, Uploader: p.Uploader, Created: p.Created, Picture: wireFile{Object: p.Path, path: p.Path}}
			if p.ThumbPath != "" {
				w.Thumb = &wireFile{Object: p.ThumbPath, path: p.ThumbPath}
			}
			return found(w, err)
		},
		IDs: func(p *wirePhoto) []*uint64 { return []*uint64{&p.ID, &p.Log, &p.Garden, &p.Uploader} },
		// The uploader may be anyone's.
		Homes: func(p *wirePhoto) []uint64 { return []uint64{p.ID, p.Log, p.Garden} },
		Attach: func(ctx context.Context, a Attacher, p *wirePhoto) (err error) {
			if p.Picture.Size, p.Picture.SHA256, err = a.PutPhotoObject(ctx, p.Picture.Object, p.Picture.path); err != nil {
				return err
			}
			if p.Thumb == nil {
				return nil
			}
			p.Thumb.Size, p.Thumb.SHA256, err = a.PutPhotoObject(ctx, p.Thumb.Object, p.Thumb.path)
			if errors.Is(err, store.ErrNotFound) {
				// A thumbnail lost at the home: the receiver makes its own when asked.
				p.Thumb, err = nil, nil
			}
			return err
		},
		Fetch: func(ctx context.Context, f Fetcher, p *wirePhoto) (err error) {
			if p.ContentType != store.PhotoJPEG && p.ContentType != store.PhotoPNG {
				return fmt.Errorf("%w: photo %d is of type %q", errRefused, p.ID, p.ContentType)
			}
			// The thumbnail first: the sender put it after the picture, so once it
			// is here the picture is too, and no copy of the picture is made while
			// the thumbnail is on its way.
			if p.Thumb != nil {
				if p.Thumb.path, err = f.FetchPhotoObject(ctx, p.Thumb.Object, p.Thumb.Size, p.Thumb.SHA256, p.Garden, ".jpg"); err != nil {
					return err
				}
			}
			p.Picture.path, err = f.FetchPhotoObject(ctx, p.Picture.Object, p.Picture.Size, p.Picture.SHA256, p.Garden, photoExt(p.ContentType))
			return err
		},
		Put: func(w store.ReplicaWriter, p wirePhoto) error {
			ph := store.Photo{ID: p.ID, Log: p.Log, Garden: p.Garden, ContentType: p.ContentType, Width: p.Width,
				Height: p.Height, Size: p.Picture.Size, Path: p.Picture.path, Uploader: p.Uploader, Created: p.Created}
			if p.Thumb != nil {
				ph.ThumbPath, ph.ThumbSize = p.Thumb.path, p.Thumb.Size
			}
			return w.PutPhoto(ph)
		},
		Delete: func(w store.ReplicaWriter, id, _ uint64) error { return w.DeletePhoto(id) },
	})
}
