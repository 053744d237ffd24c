package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// An archive is every record of a store as a stream of JSON lines, the same whichever
// backend wrote it, so that an install moves from bbolt to PostgreSQL and back
// (Archiver). The first line is the header; then each line is {"kind": …, "record":
// …}, kinds in the order of ArchiveKinds, so that a record only refers to records
// before it; within a kind, records come in the order of their ids (tokens by digest,
// positions and queued downloads by project and cloud). Image content is not part of
// it: it goes beside it, read and written through ImageContent.

// ArchiveFormat is the version of the archive format this build writes; it reads
// every version from 1 on. Version 2 added the import map (KindImportMap); version 3
// the logbook (KindPlantID, KindLog, KindPhoto); version 4 history, alerts and
// guidance (historyarchive.go).
const ArchiveFormat = 4

// archiveMagic is the kind of the header line.
const archiveMagic = "gardend-archive"

// Archiver writes and reads whole stores.
type Archiver interface {
	// Export writes every record to w, from one consistent snapshot. It takes as
	// long as the data and w need: ctx bounds it.
	Export(ctx context.Context, w io.Writer) error
	// Import loads an archive into an empty store in one transaction, keeping every
	// id and the database's identity (DataID), and sets the id sequences past them: a
	// store that holds any user or company already is ErrConflict (unless
	// opts.Replace), an archive that is malformed or refers to records it does not
	// hold is ErrInvalid, and either way nothing is written.
	Import(ctx context.Context, r io.Reader, opts ImportOptions) error
}

// ImportOptions tune Archiver.Import.
type ImportOptions struct {
	// Replace lets the store hold records: they are all deleted first, in the same
	// transaction, so that a failed import leaves them as they were.
	Replace bool
	// Images, for a backend that keeps image content (Shared), opens the content of
	// each image a garden of the archive shows, which is stored in the same
	// transaction; content that fs.ErrNotExist says is missing is left out (the
	// garden then shows a missing image, as a file missing beside a bbolt database
	// does). Nil: the content lives elsewhere, as with bbolt, which refuses it.
	Images func(path string) (io.ReadCloser, error)
	// Repaired, when set, hears of every field the import repaired to load it (text
	// with control characters or invalid UTF-8, see RepairText), as it goes: such a
	// record is loaded, not refused. It may hear of a repair in a transaction that
	// then fails.
	Repaired func(Repair)
}

// ArchiveHeader opens an archive.
type ArchiveHeader struct {
	Format   int       `json:"format"`
	Exported time.Time `json:"exported"`
	// DataID is the identity of the database it was exported from (Maintenance.
	// DataID), which Import carries over; "" when it had none yet.
	DataID string `json:"data_id,omitempty"`
}

// The record kinds, in archive order.
const (
	KindUser              = "user"
	KindToken             = "token"
	KindWidgets           = "widgets"
	KindCompany           = "company"
	KindGarden            = "garden"
	KindCompanyPermission = "company_permission"
	KindGardenPermission  = "garden_permission"
	KindBed               = "bed"
	KindPosition          = "plant_position"
	KindCloudJob          = "cloud_job"
	KindImportMap         = "import_map"
	KindPlantID           = "plant_id"
	KindLog               = "log"
	KindPhoto             = "photo"
)

// ArchiveKinds lists the kinds in the order an archive holds them.
var ArchiveKinds = []string{KindUser, KindToken, KindWidgets, KindCompany, KindGarden,
	KindCompanyPermission, KindGardenPermission, KindBed, KindPosition, KindCloudJob, KindImportMap,
	KindPlantID, KindLog, KindPhoto,
	KindGuidance, KindHistorySeries, KindHistoryChunk, KindAlert}

// ArchivedUser is a user with the password hash, which User keeps out of JSON.
type ArchivedUser struct {
	User
	PasswordHash   string `json:"password_hash"`
	CredentialsGen uint64 `json:"credentials_gen,omitempty"`
}

// validate applies the rules an account is held to once it exists: those of
// ValidateUsername (not the stricter ones of a new name), names of at most 150
// characters (empty ones came with imports: the source allowed them), an email
// address or none, and a password hash ("!" for an unusable one).
func (u ArchivedUser) validate() error {
	v := &ValidationError{}
	if msg := ValidateUsername(u.Username); msg != "" {
		v.Add("username", msg)
	}
	if utf8.RuneCountInString(u.FirstName) > maxPersonName {
		v.Add("first_name", "first_name must be at most 150 characters")
	}
	if utf8.RuneCountInString(u.LastName) > maxPersonName {
		v.Add("last_name", "last_name must be at most 150 characters")
	}
	if msg := ValidateEmail(u.Email); msg != "" {
		v.Add("email", msg)
	}
	if u.PasswordHash == "" {
		v.Add("password_hash", "password hash is required")
	}
	return v.OrNil()
}

// ArchivedToken is a stored token: its digest, never the token.
type ArchivedToken struct {
	Digest  []byte    `json:"digest"`
	UserID  uint64    `json:"user_id"`
	Created time.Time `json:"created"`
	Expiry  time.Time `json:"expiry"`
}

// ArchivedWidgets is a user's widgets document, byte for byte (base64 in JSON, since
// embedding it as JSON would re-encode it).
type ArchivedWidgets struct {
	UserID uint64 `json:"user_id"`
	Doc    []byte `json:"doc"`
}

// ArchivedGarden is a garden with the coordinates of its image.
type ArchivedGarden struct {
	Garden
	Coordinates Coordinates `json:"coordinates,omitempty"`
}

// ArchivedPermission is a company or garden permission: On is the company's or the
// garden's id.
type ArchivedPermission struct {
	ID     uint64 `json:"id"`
	On     uint64 `json:"on"`
	UserID uint64 `json:"user_id"`
	Level  Level  `json:"level"`
}

// ArchivedBed is a bed with its garden, which Bed keeps out of JSON.
type ArchivedBed struct {
	Bed
	Garden uint64 `json:"garden"`
}

// ArchivedLog is a log as stored: user ids instead of usernames, no photo list (each
// photo names its log) and no bed_removed (which follows from the beds).
type ArchivedLog struct {
	ID         uint64    `json:"id"`
	Garden     uint64    `json:"garden"`
	Type       LogType   `json:"type"`
	Title      string    `json:"title"`
	Notes      string    `json:"notes,omitempty"`
	At         time.Time `json:"at"`
	Bed        *uint64   `json:"bed,omitempty"`
	Plant      *string   `json:"plant,omitempty"`
	Quantity   *Quantity `json:"quantity,omitempty"`
	AssigneeID uint64    `json:"assignee_id,omitempty"`
	Status     LogStatus `json:"status"`
	AuthorID   uint64    `json:"author_id"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	ClientKey  string    `json:"client_key,omitempty"`
}

// ArchivedLogOf is l in archive form.
func ArchivedLogOf(l Log) ArchivedLog {
	return ArchivedLog{ID: l.ID, Garden: l.Garden, Type: l.Type, Title: l.Title, Notes: l.Notes, At: l.At.UTC(),
		Bed: l.Bed, Plant: l.Plant, Quantity: l.Quantity, AssigneeID: l.AssigneeID, Status: l.Status,
		AuthorID: l.AuthorID, Created: l.Created.UTC(), Updated: l.Updated.UTC(), ClientKey: l.ClientKey}
}

// Log is the archived log as a Log, without usernames, company and photos.
func (a ArchivedLog) Log() Log {
	l := Log{ID: a.ID, Garden: a.Garden, Type: a.Type, Title: a.Title, Notes: a.Notes, At: a.At,
		Bed: a.Bed, Plant: a.Plant, Quantity: a.Quantity, AssigneeID: a.AssigneeID, Status: a.Status,
		AuthorID: a.AuthorID, Created: a.Created, Updated: a.Updated, ClientKey: a.ClientKey}
	if a.AssigneeID != 0 {
		l.Assignee = new("")
	}
	return l
}

// ArchiveWriter writes an archive.
type ArchiveWriter struct {
	w    *bufio.Writer
	enc  *json.Encoder
	kind int // index in ArchiveKinds of the last kind written
}

// NewArchiveWriter writes the header to w, in this build's format.
func NewArchiveWriter(w io.Writer, h ArchiveHeader) (*ArchiveWriter, error) {
	bw := bufio.NewWriter(w)
	aw := &ArchiveWriter{w: bw, enc: json.NewEncoder(bw)}
	h.Format, h.Exported = ArchiveFormat, h.Exported.UTC()
	return aw, aw.enc.Encode(archiveLine{Kind: archiveMagic, Record: h})
}

type archiveLine struct {
	Kind   string `json:"kind"`
	Record any    `json:"record"`
}

// Write appends one record of kind; kinds must come in archive order.
func (aw *ArchiveWriter) Write(kind string, record any) error {
	i := kindIndex(kind)
	if i < aw.kind {
		return fmt.Errorf("archive: %s written after %s", kind, ArchiveKinds[aw.kind])
	}
	aw.kind = i
	return aw.enc.Encode(archiveLine{Kind: kind, Record: record})
}

// Close flushes what is buffered; it does not close the underlying writer.
func (aw *ArchiveWriter) Close() error { return aw.w.Flush() }

func kindIndex(kind string) int {
	for i, k := range ArchiveKinds {
		if k == kind {
			return i
		}
	}
	return -1
}

// ArchiveReader reads an archive record by record.
type ArchiveReader struct {
	dec    *json.Decoder
	Header ArchiveHeader
	line   int
	kind   int
}

// NewArchiveReader reads and checks the header.
func NewArchiveReader(r io.Reader) (*ArchiveReader, error) {
	ar := &ArchiveReader{dec: json.NewDecoder(bufio.NewReader(r))}
	var head struct {
		Kind   string        `json:"kind"`
		Record ArchiveHeader `json:"record"`
	}
	if err := ar.dec.Decode(&head); err != nil || head.Kind != archiveMagic {
		return nil, fmt.Errorf("%w: not a gardend archive (the first line must be its header)", ErrInvalid)
	}
	if head.Record.Format < 1 || head.Record.Format > ArchiveFormat {
		return nil, fmt.Errorf("%w: archive format %d, this gardend reads 1 to %d", ErrInvalid, head.Record.Format, ArchiveFormat)
	}
	ar.Header = head.Record
	ar.line = 1
	return ar, nil
}

// Next returns the next record's kind and raw JSON; io.EOF after the last.
func (ar *ArchiveReader) Next() (string, json.RawMessage, error) {
	var line struct {
		Kind   string          `json:"kind"`
		Record json.RawMessage `json:"record"`
	}
	if err := ar.dec.Decode(&line); err != nil {
		if errors.Is(err, io.EOF) {
			return "", nil, io.EOF
		}
		return "", nil, fmt.Errorf("%w: archive line %d: %v", ErrInvalid, ar.line+1, err)
	}
	ar.line++
	i := kindIndex(line.Kind)
	switch {
	case i < 0:
		return "", nil, fmt.Errorf("%w: archive line %d: unknown kind %q", ErrInvalid, ar.line, line.Kind)
	case i < ar.kind:
		return "", nil, fmt.Errorf("%w: archive line %d: %s after %s", ErrInvalid, ar.line, line.Kind, ArchiveKinds[ar.kind])
	}
	ar.kind = i
	return line.Kind, line.Record, nil
}

// Decode decodes a record of the current line into v, naming the line in errors.
func (ar *ArchiveReader) Decode(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: archive line %d: %v", ErrInvalid, ar.line, err)
	}
	return nil
}

// Invalidf is an ErrInvalid naming the archive line being read.
func (ar *ArchiveReader) Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: archive line %d: %s", ErrInvalid, ar.line, fmt.Sprintf(format, args...))
}

// CheckArchived applies the rules of the record kinds to an imported record, so that
// no backend loads what it would refuse to create.
func CheckArchived(kind string, record any) error {
	if handled, err := checkHistoryArchived(record); handled {
		return err
	}
	switch r := record.(type) {
	case *ArchivedUser:
		if r.ID == 0 {
			return Invalid("id", "user id must not be 0")
		}
		return r.validate()
	case *ArchivedToken:
		if len(r.Digest) != DigestSize {
			return Invalid("digest", fmt.Sprintf("token digest must be %d bytes", DigestSize))
		}
		return ValidateTokenDigest([DigestSize]byte(r.Digest))
	case *ArchivedWidgets:
		return ValidateWidgets(r.Doc)
	case *Company:
		if r.ID == 0 {
			return Invalid("id", "company id must not be 0")
		}
		return r.Validate()
	case *ArchivedGarden:
		if r.ID == 0 {
			return Invalid("id", "garden id must not be 0")
		}
		if err := r.Validate(); err != nil {
			return err
		}
		if r.ImagePath != nil {
			return ValidateImageRecord(*r.ImagePath, r.Coordinates)
		}
		if len(r.Coordinates) > 0 {
			return Invalid("coordinates", "a garden without image has no coordinates")
		}
	case *ArchivedPermission:
		if r.ID == 0 {
			return Invalid("id", "permission id must not be 0")
		}
		return r.Level.Validate()
	case *ArchivedBed:
		if r.ID == 0 {
			return Invalid("id", "bed id must not be 0")
		}
		return r.Validate()
	case *PlantPosition:
		return ValidateCloudKey(r.Project, r.Cloud)
	case *CloudJob:
		return ValidateCloudKey(r.Project, r.Cloud)
	case *PlantID:
		return r.Validate()
	case *ArchivedLog:
		if r.ID == 0 || r.AuthorID == 0 {
			return Invalid("id", "log and author ids must not be 0")
		}
		if r.ClientKey != "" {
			if err := ValidClientKey(r.ClientKey); err != nil {
				return err
			}
		}
		// Any time in range: "a year ahead" was checked against the clock of the day.
		return ValidateLog(r.Log(), maxLogTime)
	case *Photo:
		if r.ID == 0 || r.Log == 0 {
			return Invalid("id", "photo and log ids must not be 0")
		}
		return r.Validate()
	case *ImportMapEntry:
		switch {
		case r.Source == "" || strings.IndexByte(r.Source, 0) >= 0:
			return Invalid("source", "an import map entry needs a source name")
		case !slices.Contains(ImportKinds, r.Kind):
			return Invalid("kind", fmt.Sprintf("unknown import kind %q", r.Kind))
		case r.ID == 0:
			return Invalid("id", "import map id must not be 0")
		}
	default:
		return fmt.Errorf("archive: no rules for %s records (%T)", kind, record)
	}
	return nil
}

// ReadArchive reads every record of r in order, decoded into its archived type,
// its text repaired (RepairText; each repair told to repaired when it is not nil)
// and checked (CheckArchived), and hands it to load: a backend's Import is this with
// its writes. It returns the archive's header, and stops when ctx ends.
func ReadArchive(ctx context.Context, r io.Reader, load func(kind string, record any) error, repaired func(Repair)) (ArchiveHeader, error) {
	ar, err := NewArchiveReader(r)
	if err != nil {
		return ArchiveHeader{}, err
	}
	return ar.Header, ar.each(ctx, load, repaired)
}

func (ar *ArchiveReader) each(ctx context.Context, load func(kind string, record any) error, repaired func(Repair)) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		kind, raw, err := ar.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var rec any
		switch kind {
		case KindUser:
			rec = &ArchivedUser{}
		case KindToken:
			rec = &ArchivedToken{}
		case KindWidgets:
			rec = &ArchivedWidgets{}
		case KindCompany:
			rec = &Company{}
		case KindGarden:
			rec = &ArchivedGarden{}
		case KindCompanyPermission, KindGardenPermission:
			rec = &ArchivedPermission{}
		case KindBed:
			rec = &ArchivedBed{}
		case KindPosition:
			rec = &PlantPosition{}
		case KindCloudJob:
			rec = &CloudJob{}
		case KindImportMap:
			rec = &ImportMapEntry{}
		case KindPlantID:
			rec = &PlantID{}
		case KindLog:
			rec = &ArchivedLog{}
		case KindPhoto:
			rec = &Photo{}
		default:
			rec = newHistoryRecord(kind)
		}
		if err := ar.Decode(raw, rec); err != nil {
			return err
		}
		for _, r := range repairArchived(rec) {
			if repaired != nil {
				r.Line = ar.line
				repaired(r)
			}
		}
		if err := CheckArchived(kind, rec); err != nil {
			return ar.Invalidf("%s: %v", kind, err)
		}
		if err := load(kind, rec); err != nil {
			if errors.Is(err, ErrInvalid) || errors.Is(err, ErrConflict) {
				return ar.Invalidf("%s: %v", kind, err)
			}
			return err
		}
	}
}
