package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/photo"
)

// logbookOptions are serve's flags of the logbook's photos.
type logbookOptions struct {
	maxPhoto       byteSize
	maxPhotoPixels int64
	photoStorage   byteSize
}

func (o *logbookOptions) addFlags(f *pflag.FlagSet) {
	o.maxPhoto = server.DefaultMaxPhotoBytes
	f.Var(&o.maxPhoto, "max-photo", "maximum photo upload body (a log's JPEG or PNG), e.g. 16MiB")
	f.Int64Var(&o.maxPhotoPixels, "max-photo-pixels", photo.DefaultMaxPixels,
		"most pixels of a photo (a phone's JPEG; kinds that take more memory to decode get proportionally fewer); one photo is decoded at a time, in at most 3 bytes per pixel of this")
	f.Var(&o.photoStorage, "photo-max-bytes", "most bytes all log photos and their thumbnails may take together, e.g. 20GB; beyond it uploads are refused with 507 (default 0: no limit)")
}

func (o *logbookOptions) validate() error {
	switch {
	case o.maxPhoto < 1<<10:
		return fmt.Errorf("--max-photo %d: use at least 1KiB", o.maxPhoto)
	case o.maxPhotoPixels < 1<<16:
		return fmt.Errorf("--max-photo-pixels %d: use at least 65536", o.maxPhotoPixels)
	case o.photoStorage < 0:
		return fmt.Errorf("--photo-max-bytes %d: use 0 (no limit) or more", o.photoStorage)
	}
	return nil
}

func (o *logbookOptions) apply(c *server.Config) {
	c.MaxPhotoBytes, c.MaxPhotoPixels, c.PhotoStorageBytes = int64(o.maxPhoto), o.maxPhotoPixels, int64(o.photoStorage)
}
