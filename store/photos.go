package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Photos of logs: the record here, the bytes under Path (and the thumbnail's under
// ThumbPath) in PhotoContent, as a garden image's bytes are in ImageContent.

// Photo is a picture attached to a log. Width and Height are those of the stored
// picture (turned upright).
type Photo struct {
	ID     uint64 `json:"id"`
	Log    uint64 `json:"log"`
	Garden uint64 `json:"garden"`
	// ContentType is image/jpeg or image/png.
	ContentType string `json:"content_type"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	Size        int64  `json:"size"`
	// Path holds the picture's bytes, relative to the data directory
	// ("photos/<32 hex>.jpg").
	Path string `json:"path"`
	// ThumbPath holds a JPEG of at most ThumbMax pixels on its long side; "" until
	// one is made.
	ThumbPath string    `json:"thumb_path,omitempty"`
	ThumbSize int64     `json:"thumb_size,omitempty"`
	Uploader  uint64    `json:"uploader"`
	Created   time.Time `json:"created"`
	// ClientKey is the idempotency key the photo was added with (AddPhotoOnce), ""
	// without one.
	ClientKey string `json:"client_key,omitempty"`
}

// ThumbMax is the long side of a thumbnail, in pixels.
const ThumbMax = 320

// Photo content types.
const (
	PhotoJPEG = "image/jpeg"
	PhotoPNG  = "image/png"
)

// PhotoDir is the directory of photo content, in paths and under the data directory.
const PhotoDir = "photos"

// Bytes is what the photo keeps: the picture and its thumbnail.
func (p Photo) Bytes() int64 { return p.Size + p.ThumbSize }

// Validate checks a photo record: its content type, dimensions and paths.
func (p Photo) Validate() error {
	v := &ValidationError{}
	if p.ContentType != PhotoJPEG && p.ContentType != PhotoPNG {
		v.Add("content_type", "a photo is image/jpeg or image/png")
	}
	if p.Width <= 0 || p.Height <= 0 || p.Size <= 0 {
		v.Add("size", "a photo has positive dimensions and size")
	}
	if !ValidPhotoPath(p.Path) {
		v.Add("path", fmt.Sprintf("photo path %q is not photos/<32 hex digits>.jpg or .png", p.Path))
	}
	if p.ThumbPath != "" && (!ValidPhotoPath(p.ThumbPath) || p.ThumbSize <= 0) {
		v.Add("thumb_path", fmt.Sprintf("thumbnail path %q is not photos/<32 hex digits>.jpg", p.ThumbPath))
	}
	if p.ClientKey != "" {
		if err := ValidClientKey(p.ClientKey); err != nil {
			return err
		}
	}
	return v.OrNil()
}

// ValidPhotoPath reports whether path has the form photo content is kept under.
func ValidPhotoPath(path string) bool {
	name, ok := strings.CutPrefix(path, PhotoDir+"/")
	if !ok {
		return false
	}
	hexPart, ok := strings.CutSuffix(name, ".jpg")
	if !ok {
		if hexPart, ok = strings.CutSuffix(name, ".png"); !ok {
			return false
		}
	}
	if len(hexPart) != 32 {
		return false
	}
	for i := range len(hexPart) {
		if c := hexPart[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ErrStorageFull: keeping the content would take the photos past their budget. The
// server answers 507.
var ErrStorageFull = errors.New("the storage for photos is full")

// MaxLogPhotos bounds the photos of one log: a log and every listing page that
// shows it carry their ids, and a field note has a few.
const MaxLogPhotos = 100

// LogPhotosFull is the refusal of a photo beyond MaxLogPhotos.
func LogPhotosFull(logID uint64) error {
	return Invalid("photo", fmt.Sprintf("log %d has %d photos, the most a log may hold; delete one, or add the photo to a new log", logID, MaxLogPhotos))
}

// PhotoStorageFull is the refusal of a photo past the budget.
func PhotoStorageFull(used, adding, budget int64) error {
	return fmt.Errorf("%w: photos take %d of %d bytes and this one needs %d more; delete old photos or raise --photo-max-bytes", ErrStorageFull, used, budget, adding)
}

// LogStore keeps the logbook: logs, their photos' records and the plant identities
// logs refer to.
type LogStore interface {
	// CreateLog stores a new log of the garden by authorID. The patch must set type
	// and title; authorize (nil: anything) decides in the transaction whether the
	// caller may; then the references are checked: the bed is one of the garden, the
	// plant one kept for the bed's project (KeepPlantIDs), the assignee a user with a
	// role on the garden (directly, through its company, or a site admin).
	CreateLog(gardenID, authorID uint64, p LogPatch, authorize LogAuthorizer) (Log, error)
	// CreateLogOnce is CreateLog with an idempotency key (ValidClientKey), so that a
	// client's retry after a lost answer does not record twice: when the author
	// created a log of the garden with that key before (one not deleted since), it is
	// returned as it is now with created false and nothing is written (p must be
	// valid, but its references and authorize are not checked again); else the log
	// is created under the key. Calls with the same
	// key at once create one log.
	CreateLogOnce(gardenID, authorID uint64, key string, p LogPatch, authorize LogAuthorizer) (l Log, created bool, err error)
	// Log returns a log of the garden; one of another garden is ErrNotFound.
	Log(gardenID, logID uint64) (Log, error)
	// UpdateLog applies p to a log of the garden with the rules of CreateLog; a
	// reference p does not change is not checked again (a removed bed stays).
	UpdateLog(gardenID, logID uint64, p LogPatch, authorize LogAuthorizer) (Log, error)
	// DeleteLog deletes a log of the garden with its photos; Removed.PhotoPaths
	// lists their content.
	DeleteLog(gardenID, logID uint64, authorize func(Log) error) (Removed, error)
	// ListLogs returns a page of the garden's logs that f selects.
	ListLogs(gardenID uint64, f LogFilter) (LogPage, error)
	// PendingTasks returns the pending tasks assigned to the user, soonest due first
	// (then lowest id), in the gardens of visible (every garden when nil), at most
	// MaxTasks, and no more once they hold MaxLogPageText.
	PendingTasks(assigneeID uint64, visible map[uint64]bool) ([]Log, error)

	// AddPhoto records a photo of a log of the garden whose content is stored
	// already, if authorize allows it for the log, the log has fewer than
	// MaxLogPhotos (else LogPhotosFull) and the photos would stay within budget
	// bytes (0: no budget; else ErrStorageFull). ID, Log, Garden and Created
	// are set here.
	AddPhoto(gardenID, logID uint64, p Photo, budget int64, authorize func(Log) error) (Photo, error)
	// AddPhotoOnce is AddPhoto with an idempotency key (ValidClientKey), kept as the
	// photo's ClientKey: when the log has a photo of that key, it is returned with
	// added false and nothing is written (authorize and the budget are not checked
	// again; the caller removes the content it stored for p). A key another uploader
	// used on the log is refused (PhotoKeyOfAnother).
	AddPhotoOnce(gardenID, logID uint64, key string, p Photo, budget int64, authorize func(Log) error) (ph Photo, added bool, err error)
	// Photo returns a photo of a log of the garden.
	Photo(gardenID, logID, photoID uint64) (Photo, error)
	// PhotoByID returns a photo of any log (the sync reads the photo a change names).
	PhotoByID(photoID uint64) (Photo, error)
	// SetPhotoThumb records a thumbnail for a photo that has none and returns the
	// photo; when it has one already (made meanwhile), the photo is returned as it is
	// and the caller removes its own.
	SetPhotoThumb(photoID uint64, path string, size int64) (Photo, error)
	// DeletePhoto deletes a photo of a log of the garden if authorize allows it for
	// the log; Removed.PhotoPaths lists its content.
	DeletePhoto(gardenID, logID, photoID uint64, authorize func(Log) error) (Removed, error)
	// PhotoPaths is the set of content paths photos refer to (the start-up sweep's).
	PhotoPaths() (map[string]bool, error)
	// PhotoBytes is what the photos keep in all (Photo.Bytes).
	PhotoBytes() (int64, error)

	// KeepPlantIDs returns the id of every plant of seen (by name), keeping the ids of
	// names seen for the first time (PlanPlantIDs). A project no bed refers to keeps
	// nothing; its plants get the ids they came with.
	KeepPlantIDs(project string, seen []PlantID) (map[string]string, error)
}

// PhotoContent keeps the bytes of photos and thumbnails under immutable paths: files
// under the data directory's photos/ with bbolt, rows of the database with
// PostgreSQL. As with ImageContent, content is put first, then recorded (AddPhoto,
// SetPhotoThumb), and removed after its record is gone.
type PhotoContent interface {
	// PutPhoto stores everything r yields as content of the garden; ext is ".jpg" or
	// ".png". It returns the path and size.
	PutPhoto(ctx context.Context, gardenID uint64, ext string, r io.Reader) (path string, size int64, err error)
	// OpenPhoto streams the content at path; ErrNotFound when there is none.
	OpenPhoto(ctx context.Context, path string) (io.ReadCloser, int64, error)
	// RemovePhoto deletes the content at path unless a photo refers to it; content
	// gone already is no error.
	RemovePhoto(ctx context.Context, path string) error
}

// SharedPhotos is the photo content of a shared backend, swept by every node: content
// no photo refers to that was put more than grace ago (an upload that died on some
// node) is deleted.
type SharedPhotos interface {
	PhotoContent
	SweepUnreferencedPhotos(ctx context.Context, grace time.Duration) (int, error)
}
