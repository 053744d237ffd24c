package sitesync

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gardend/gardend/store"
)

// The kinds of record that exist today (docs/sync.md lists them). Wire forms name
// every field explicitly: a receiver refuses fields it does not know.

type wireUser struct {
	ID           uint64    `json:"id"`
	Username     string    `json:"username"`
	FirstName    string    `json:"first_name"`
	LastName     string    `json:"last_name"`
	Email        string    `json:"email"`
	DateJoined   time.Time `json:"date_joined"`
	PasswordHash string    `json:"password_hash"`
	// Widgets is the document byte for byte (base64 in JSON).
	Widgets []byte `json:"widgets,omitempty"`
}

type wireGarden struct {
	ID      uint64 `json:"id"`
	Company uint64 `json:"company"`
	Name    string `json:"name"`
}

// wireImage is a garden's picture: its bytes travel in the object store under
// Object, the record once they are there.
type wireImage struct {
	Garden      uint64            `json:"garden"`
	Company     uint64            `json:"company"`
	Object      string            `json:"object"`
	Size        int64             `json:"size"`
	SHA256      string            `json:"sha256"`
	Coordinates store.Coordinates `json:"coordinates"`
	// path is the content's path at the site handling the record.
	path string
}

type wireBed struct {
	ID     uint64 `json:"id"`
	Garden uint64 `json:"garden"`
	UUID   string `json:"uuid"`
	Name   string `json:"name"`
}

// wirePermission is a company or garden permission: On is the company or garden.
type wirePermission struct {
	ID    uint64      `json:"id"`
	On    uint64      `json:"on"`
	User  uint64      `json:"user"`
	Level store.Level `json:"level"`
}

type wireBedValues struct {
	Bed    uint64          `json:"bed"`
	Garden uint64          `json:"garden"`
	At     time.Time       `json:"at"`
	Data   json.RawMessage `json:"data"`
}

// found turns a lookup's ErrNotFound into found false.
func found[T any](rec T, err error) (T, bool, error) {
	if errors.Is(err, store.ErrNotFound) {
		var zero T
		return zero, false, nil
	}
	return rec, err == nil, err
}

func init() {
	Register(Kind[wireUser]{
		Name:    store.KindUser,
		ToBoxes: true,
		Load: func(st store.Backend, id, _ uint64) (wireUser, bool, error) {
			u, err := st.UserByID(id)
			if err != nil {
				return found(wireUser{}, err)
			}
			doc, err := st.Widgets(id)
			if err != nil {
				return wireUser{}, false, err
			}
			return wireUser{ID: u.ID, Username: u.Username, FirstName: u.FirstName, LastName: u.LastName, Email: u.Email,
				DateJoined: u.DateJoined, PasswordHash: u.PasswordHash, Widgets: doc}, true, nil
		},
		IDs:   func(u *wireUser) []*uint64 { return []*uint64{&u.ID} },
		Homes: func(u *wireUser) []uint64 { return []uint64{u.ID} },
		Put: func(w store.ReplicaWriter, u wireUser) error {
			return w.PutUser(store.ReplicaUser{ID: u.ID, Username: u.Username, FirstName: u.FirstName, LastName: u.LastName,
				Email: u.Email, DateJoined: u.DateJoined, PasswordHash: u.PasswordHash, Widgets: u.Widgets})
		},
		// Accounts are never deleted.
	})
	Register(Kind[store.Company]{
		Name:   store.KindCompany,
		Load:   func(st store.Backend, id, _ uint64) (store.Company, bool, error) { return found(st.Company(id)) },
		IDs:    func(c *store.Company) []*uint64 { return []*uint64{&c.ID} },
		Homes:  func(c *store.Company) []uint64 { return []uint64{c.ID} },
		Put:    func(w store.ReplicaWriter, c store.Company) error { return w.PutCompany(c) },
		Delete: func(w store.ReplicaWriter, id, _ uint64) error { return w.DeleteCompany(id) },
	})
	Register(Kind[wireGarden]{
		Name: store.KindGarden,
		Load: func(st store.Backend, id, _ uint64) (wireGarden, bool, error) {
			g, err := st.Garden(id)
			return found(wireGarden{ID: g.ID, Company: g.Company, Name: g.Name}, err)
		},
		IDs:   func(g *wireGarden) []*uint64 { return []*uint64{&g.ID, &g.Company} },
		Homes: func(g *wireGarden) []uint64 { return []uint64{g.ID, g.Company} },
		Put: func(w store.ReplicaWriter, g wireGarden) error {
			return w.PutGarden(store.Garden{ID: g.ID, Company: g.Company, Name: g.Name})
		},
		Delete: func(w store.ReplicaWriter, id, _ uint64) error { return w.DeleteGarden(id) },
	})
	Register(Kind[wireImage]{
		Name: store.KindGardenImage,
		Load: func(st store.Backend, id, ref uint64) (wireImage, bool, error) {
			path, cs, err := st.GardenImage(id)
			return found(wireImage{Garden: id, Company: ref, Object: path, Coordinates: cs, path: path}, err)
		},
		IDs:   func(i *wireImage) []*uint64 { return []*uint64{&i.Garden, &i.Company} },
		Homes: func(i *wireImage) []uint64 { return []uint64{i.Garden, i.Company} },
		Attach: func(ctx context.Context, a Attacher, i *wireImage) (err error) {
			i.Size, i.SHA256, err = a.PutObject(ctx, i.Object, i.path)
			return err
		},
		Fetch: func(ctx context.Context, f Fetcher, i *wireImage) (err error) {
			i.path, err = f.FetchObject(ctx, i.Object, i.Size, i.SHA256)
			return err
		},
		Put: func(w store.ReplicaWriter, i wireImage) error {
			return w.SetGardenImage(i.Garden, i.path, i.Coordinates)
		},
		// A picture goes with its garden.
	})
	Register(Kind[wireBed]{
		Name: store.KindBed,
		Load: func(st store.Backend, id, ref uint64) (wireBed, bool, error) {
			b, err := st.Bed(ref, id)
			return found(wireBed{ID: b.ID, Garden: b.Garden, UUID: b.UUID, Name: b.Name}, err)
		},
		IDs:   func(b *wireBed) []*uint64 { return []*uint64{&b.ID, &b.Garden} },
		Homes: func(b *wireBed) []uint64 { return []uint64{b.ID, b.Garden} },
		Put: func(w store.ReplicaWriter, b wireBed) error {
			return w.PutBed(store.Bed{ID: b.ID, Garden: b.Garden, UUID: b.UUID, Name: b.Name})
		},
		Delete: func(w store.ReplicaWriter, id, _ uint64) error { return w.DeleteBed(id) },
	})
	permission := func(name string, list func(st store.Backend, on uint64) ([]store.Permission, error),
		put func(w store.ReplicaWriter, p wirePermission) error, del func(w store.ReplicaWriter, on, user uint64) error) {
		Register(Kind[wirePermission]{
			Name: name,
			Load: func(st store.Backend, on, user uint64) (wirePermission, bool, error) {
				ps, err := list(st, on)
				if err != nil {
					return found(wirePermission{}, err)
				}
				for _, p := range ps {
					if p.UserID == user {
						return wirePermission{ID: p.ID, On: on, User: user, Level: p.Level}, true, nil
					}
				}
				return wirePermission{}, false, nil
			},
			IDs: func(p *wirePermission) []*uint64 { return []*uint64{&p.ID, &p.On, &p.User} },
			// The user may be anyone's: an agronomist of the office, say.
			Homes:  func(p *wirePermission) []uint64 { return []uint64{p.ID, p.On} },
			Put:    put,
			Delete: del,
		})
	}
	permission(store.KindCompanyPermission, func(st store.Backend, on uint64) ([]store.Permission, error) { return st.CompanyPermissions(on) },
		func(w store.ReplicaWriter, p wirePermission) error {
			return w.PutCompanyPermission(store.CompanyPermission{Permission: store.Permission{ID: p.ID, UserID: p.User, Level: p.Level}, Company: p.On})
		},
		func(w store.ReplicaWriter, on, user uint64) error { return w.DeleteCompanyPermission(on, user) })
	permission(store.KindGardenPermission, func(st store.Backend, on uint64) ([]store.Permission, error) { return st.GardenPermissions(on) },
		func(w store.ReplicaWriter, p wirePermission) error {
			return w.PutGardenPermission(store.GardenPermission{Permission: store.Permission{ID: p.ID, UserID: p.User, Level: p.Level}, Garden: p.On})
		},
		func(w store.ReplicaWriter, on, user uint64) error { return w.DeleteGardenPermission(on, user) })
	Register(Kind[wireBedValues]{
		Name: store.KindBedValues,
		Load: func(st store.Backend, bed, garden uint64) (wireBedValues, bool, error) {
			vs, err := st.BedValuesOfGarden(garden)
			if err != nil {
				return found(wireBedValues{}, err)
			}
			for _, v := range vs {
				if v.Bed == bed {
					return wireBedValues{Bed: v.Bed, Garden: v.Garden, At: v.At, Data: v.Data}, true, nil
				}
			}
			return wireBedValues{}, false, nil
		},
		IDs:   func(v *wireBedValues) []*uint64 { return []*uint64{&v.Bed, &v.Garden} },
		Homes: func(v *wireBedValues) []uint64 { return []uint64{v.Bed, v.Garden} },
		Put: func(w store.ReplicaWriter, v wireBedValues) error {
			return w.PutBedValues(store.BedValues{Bed: v.Bed, Garden: v.Garden, At: v.At, Data: v.Data})
		},
		// Values go with their bed.
	})
	// A log (tasks are logs) is its company's record, like a bed: its author or
	// assignee may be anyone's (an agronomist of the office). Its photos are a kind
	// of their own (photos.go).
	Register(Kind[store.ArchivedLog]{
		Name: store.KindLog,
		Load: func(st store.Backend, id, garden uint64) (store.ArchivedLog, bool, error) {
			l, err := st.Log(garden, id)
			return found(store.ArchivedLogOf(l), err)
		},
		IDs: func(l *store.ArchivedLog) []*uint64 {
			ids := []*uint64{&l.ID, &l.Garden, &l.AuthorID, &l.AssigneeID}
			if l.Bed != nil {
				ids = append(ids, l.Bed)
			}
			return ids
		},
		Homes: func(l *store.ArchivedLog) []uint64 {
			homes := []uint64{l.ID, l.Garden}
			if l.Bed != nil {
				homes = append(homes, *l.Bed)
			}
			return homes
		},
		Put:    func(w store.ReplicaWriter, l store.ArchivedLog) error { return w.PutLog(l) },
		Delete: func(w store.ReplicaWriter, id, _ uint64) error { return w.DeleteLog(id) },
	})
}
