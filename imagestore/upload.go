package imagestore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Upload receives a PNG as a data URL written to it in pieces and stores it: the text
// is decoded as it arrives (DataURLWriter) straight into a Pending file, so memory
// stays at a few buffers whatever the size. It checks what DecodeDataURL and CheckPNG
// check, with the same errors and the same precedence: a problem of the data URL wins
// over one of the PNG, as if the whole text had been decoded first.
//
// A problem of the data does not stop Write: it is kept for Finish, and the rest of the
// text is only scanned (not decoded, or not written once the bytes are known not to
// be a PNG), so a caller can read its input to the end and report errors in its own
// order. Write fails only when the disk does; then Abort.
//
//	u, _ := store.NewUpload()
//	defer u.Abort()
//	io.Copy(u, text)
//	width, height, err := u.Finish()
//	rel, err := u.Commit()
type Upload struct {
	file    *Pending
	dec     *DataURLWriter
	head    []byte // the first sniffLen bytes, to name what the data is
	notPNG  bool   // the first bytes are not the PNG signature: stop writing
	dataErr error  // the first problem of the data URL
	diskErr error
	checked bool // Finish accepted the image
}

// NewUpload starts an upload into a new file of s.
func (s *Store) NewUpload() (*Upload, error) {
	p, err := s.Create()
	if err != nil {
		return nil, err
	}
	u := &Upload{file: p, head: make([]byte, 0, sniffLen)}
	u.dec = NewDataURLWriter(uploadSink{u})
	return u, nil
}

// uploadSink takes the decoded bytes.
type uploadSink struct{ u *Upload }

func (s uploadSink) Write(b []byte) (int, error) {
	u := s.u
	if k := min(len(b), cap(u.head)-len(u.head)); k > 0 {
		u.head = append(u.head, b[:k]...)
		if len(u.head) >= len(pngSignature) && !bytes.HasPrefix(u.head, []byte(pngSignature)) {
			u.notPNG = true
		}
	}
	if u.notPNG {
		return len(b), nil
	}
	if _, err := u.file.Write(b); err != nil {
		u.diskErr = err
		return 0, err
	}
	return len(b), nil
}

// Write takes the next part of the data URL text.
func (u *Upload) Write(p []byte) (int, error) {
	if u.diskErr != nil {
		return 0, u.diskErr
	}
	if u.dataErr != nil {
		return len(p), nil
	}
	if _, err := u.dec.Write(p); err != nil {
		if u.diskErr != nil {
			return 0, u.diskErr
		}
		u.dataErr = err
	}
	return len(p), nil
}

// Finish ends the text and checks the image: the data URL first, then the PNG
// signature and header, read back from the file. It returns the image's dimensions.
func (u *Upload) Finish() (width, height int, err error) {
	if u.diskErr != nil {
		return 0, 0, u.diskErr
	}
	if u.dataErr == nil {
		if err := u.dec.Close(); err != nil {
			if u.diskErr != nil {
				return 0, 0, u.diskErr
			}
			u.dataErr = err
		}
	}
	if u.dataErr != nil {
		return 0, 0, u.dataErr
	}
	if u.notPNG || len(u.head) < len(pngSignature) {
		return 0, 0, fmt.Errorf("%w: %s", ErrNotPNG, sniff(u.head))
	}
	width, height, err = checkPNG(bufio.NewReaderSize(u.file.reader(), 4<<10))
	if err != nil {
		return 0, 0, err
	}
	u.checked = true
	return width, height, nil
}

// Size is the number of image bytes stored so far.
func (u *Upload) Size() int64 { return u.file.Size() }

// Reader reads the image Finish accepted, from its temporary file, for a caller that
// stores it elsewhere instead of committing it (then Abort deletes the file).
func (u *Upload) Reader() (io.Reader, error) {
	if !u.checked {
		return nil, errors.New("store image: Reader without a successful Finish")
	}
	return u.file.reader(), nil
}

// Commit stores the image Finish accepted and returns its image path (see
// Pending.Commit).
func (u *Upload) Commit() (rel string, err error) {
	if !u.checked {
		u.Abort()
		return "", errors.New("store image: Commit without a successful Finish")
	}
	return u.file.Commit()
}

// Abort deletes the file unless it was committed; it may be called more than once.
func (u *Upload) Abort() { u.file.Abort() }
