package sitesync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/gardend/gardend/store"
)

// A record kind that replicates is one Kind[T] registered here (and, in the store,
// recorded by its write methods and enumerated by StartChangeFeed): see
// docs/sync.md, "Adding a kind".
//
// T is the kind's wire form: JSON, with every id as it is known everywhere (global).
// Load reads a record at its home; IDs lists its id fields, which the transport maps
// (GlobalID at the sender, LocalID at the receiver); Homes lists the ids that must be
// homed at the sender (a site may send only its own records: a permission's user may
// be anyone's, its company may not); Put and Delete write the replica.
type Kind[T any] struct {
	Name string
	// Load returns the record the change names as it is now at its home, or found
	// false when it is gone (the change is then sent as a deletion). ids are local.
	Load func(st store.Backend, id, ref uint64) (rec T, found bool, err error)
	// IDs returns pointers to every id field of rec.
	IDs func(rec *T) []*uint64
	// Homes returns the ids of rec (global) that must be homed at the sender.
	Homes func(rec *T) []uint64
	// Put writes rec (ids local to the receiver) as a replica.
	Put func(w store.ReplicaWriter, rec T) error
	// Delete removes the replica of the record (id, ref) (local to the receiver); nil
	// when deletions of this kind need nothing (they go with a parent).
	Delete func(w store.ReplicaWriter, id, ref uint64) error
	// ToBoxes: the office sends its records of this kind to every box. Records of
	// every kind go from a box to the office.
	ToBoxes bool
	// Coarsen, when set, gives the ref of a record that includes the record (id,
	// ref) (a day of history includes each of its hours), and false when there is
	// none: when a batch holds several changes that coarsen alike, the sender loads
	// and sends the including record once for all of them.
	Coarsen func(ref uint64) (uint64, bool)
	// Attach, when set, runs at the sender before the change is sent, outside any
	// transaction: pictures and photos put their bytes into the object store.
	Attach func(ctx context.Context, a Attacher, rec *T) error
	// Fetch, when set, runs at the receiver before the change is applied, outside
	// any transaction: pictures and photos copy their bytes into the image or photo
	// content. It reports ErrNotYet while what it needs has not arrived, and
	// store.ErrNotFound while a record the content belongs to is not here (the
	// change waits for the changes before it to be applied; refused when there are
	// none).
	Fetch func(ctx context.Context, f Fetcher, rec *T) error
}

// ErrNotYet: a change cannot be applied yet (its picture is still on its way); it is
// tried again later, and the changes after it wait.
var ErrNotYet = errors.New("not arrived yet")

// errRefused: a change breaks the rules (a record homed elsewhere, a malformed
// message); it is logged and skipped.
var errRefused = errors.New("refused")

// Attacher is what Attach may use at the sender.
type Attacher interface {
	// PutObject stores the content of an image (ImageContent path) under name in
	// the site's picture bucket, once, and returns its size and digest (the object
	// store's SHA-256).
	PutObject(ctx context.Context, name, imagePath string) (size int64, digest string, err error)
	// PutPhotoObject is PutObject for photo content (PhotoContent path).
	PutPhotoObject(ctx context.Context, name, photoPath string) (size int64, digest string, err error)
}

// Fetcher is what Fetch may use at the receiver. An object whose size or digest is
// not the one the change names is refused (errRefused): names are content paths,
// which never change, so only a forged or corrupt change names another.
type Fetcher interface {
	// FetchObject copies the object name of the sender's picture bucket into the
	// image content and returns its path there; ErrNotYet while it is incomplete.
	FetchObject(ctx context.Context, name string, size int64, digest string) (path string, err error)
	// FetchPhotoObject is FetchObject into the photo content of the garden (ext
	// ".jpg" or ".png").
	FetchPhotoObject(ctx context.Context, name string, size int64, digest string, gardenID uint64, ext string) (path string, err error)
}

// kind is a Kind without its type, as the transport sees it.
type kind interface {
	name() string
	toBoxes() bool
	coarsen(ref uint64) (uint64, bool)
	// encode loads the record of c at this site (site here) and returns it in wire
	// form with global ids; nil when it is gone.
	encode(ctx context.Context, st store.Backend, here uint32, c store.Change, a Attacher) (json.RawMessage, error)
	// decode reads a message's record, checks that its ids are homed at from and
	// maps them to site here: a change the receiver can apply.
	decode(m *Message, from, here uint32) (decoded, error)
}

// decoded is a change ready to apply.
type decoded interface {
	fetch(ctx context.Context, f Fetcher) error
	apply(w store.ReplicaWriter) error
}

var kinds = map[string]kind{}

// Register adds a kind. Call it from an init function; a name twice panics.
func Register[T any](k Kind[T]) {
	if _, dup := kinds[k.Name]; dup {
		panic("sitesync: kind " + k.Name + " registered twice")
	}
	kinds[k.Name] = &k
}

// Kinds lists the registered kinds' names, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for name := range kinds {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func (k *Kind[T]) name() string  { return k.Name }
func (k *Kind[T]) toBoxes() bool { return k.ToBoxes }

func (k *Kind[T]) coarsen(ref uint64) (uint64, bool) {
	if k.Coarsen == nil {
		return 0, false
	}
	return k.Coarsen(ref)
}

func (k *Kind[T]) encode(ctx context.Context, st store.Backend, here uint32, c store.Change, a Attacher) (json.RawMessage, error) {
	rec, found, err := k.Load(st, c.ID, c.Ref)
	if err != nil || !found {
		return nil, err
	}
	if k.Attach != nil {
		if err := k.Attach(ctx, a, &rec); err != nil {
			return nil, err
		}
	}
	for _, p := range k.IDs(&rec) {
		*p = globalID(here, *p)
	}
	return json.Marshal(rec)
}

func (k *Kind[T]) decode(m *Message, from, here uint32) (decoded, error) {
	d := &change[T]{k: k, deleted: m.Deleted, id: m.ID, ref: m.Ref}
	homes := []uint64{m.ID}
	if !m.Deleted {
		dec := json.NewDecoder(bytes.NewReader(m.Rec))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d.rec); err != nil {
			return nil, fmt.Errorf("%w: %s %d: %v", errRefused, k.Name, m.ID, err)
		}
		homes = append(homes, k.Homes(&d.rec)...)
	}
	for _, id := range homes {
		if id == 0 {
			continue
		}
		if store.IsLocal(id) {
			return nil, fmt.Errorf("%w: %s %d names id %d without its site", errRefused, k.Name, m.ID, id)
		}
		if h := store.HomeSite(id); h != from {
			return nil, fmt.Errorf("%w: %s %d (id %d) is homed at site %d, not at the sender, site %d", errRefused, k.Name, m.ID, id, h, from)
		}
	}
	d.id, d.ref = localID(here, m.ID), localID(here, m.Ref)
	if !m.Deleted {
		for _, p := range k.IDs(&d.rec) {
			if *p != 0 && store.IsLocal(*p) {
				return nil, fmt.Errorf("%w: %s %d names id %d without its site", errRefused, k.Name, m.ID, *p)
			}
			*p = localID(here, *p)
		}
	}
	return d, nil
}

// change is a decoded change of kind T.
type change[T any] struct {
	k       *Kind[T]
	rec     T
	deleted bool
	id, ref uint64
}

func (c *change[T]) fetch(ctx context.Context, f Fetcher) error {
	if c.deleted || c.k.Fetch == nil {
		return nil
	}
	return c.k.Fetch(ctx, f, &c.rec)
}

func (c *change[T]) apply(w store.ReplicaWriter) error {
	if c.deleted {
		if c.k.Delete == nil {
			return nil
		}
		return c.k.Delete(w, c.id, c.ref)
	}
	return c.k.Put(w, c.rec)
}

// Message is one change on the wire.
type Message struct {
	// Site is the sender's site number, Seq the change's sequence there.
	Site    uint32          `json:"site"`
	Seq     uint64          `json:"seq"`
	Kind    string          `json:"kind"`
	ID      uint64          `json:"id"`
	Ref     uint64          `json:"ref,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`
	At      time.Time       `json:"at"`
	Rec     json.RawMessage `json:"rec,omitempty"`
}

// MsgID is the message's JetStream deduplication id: a change is stored once
// however often the sender retries it.
func (m *Message) MsgID() string { return fmt.Sprintf("site%d-%d", m.Site, m.Seq) }

// globalID and localID map ids between sites (store.GlobalID, store.LocalID); 0
// stays 0: no record.
func globalID(site uint32, id uint64) uint64 {
	if id == 0 {
		return 0
	}
	return store.GlobalID(site, id)
}

func localID(site uint32, id uint64) uint64 {
	if id == 0 {
		return 0
	}
	return store.LocalID(site, id)
}
