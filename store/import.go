package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Importing another system's records (the PlantMap migration, server/plantmap): the
// caller hands over a whole dump as an Import, keyed by the source's own ids; PlanImport
// works out, against what the database holds, which records are new, which came over
// in an earlier import of the same source (kept as they are: re-running changes
// nothing) and which ids they get; ApplyImport writes the new ones in one transaction,
// so an import is all or nothing. Ids are kept from the source where a kind holds
// nothing but records of that source (clients and bookmarks use them), and mapped to
// fresh ids otherwise. The import map remembers, per source, kind and source id, the
// id a record got.

// ImportKind names a kind of imported record.
type ImportKind string

// The kinds, in the order they are planned and written (references point backwards).
const (
	ImportUsers        ImportKind = "users"
	ImportCompanies    ImportKind = "companies"
	ImportGardens      ImportKind = "gardens"
	ImportBeds         ImportKind = "beds"
	ImportCompanyPerms ImportKind = "company permissions"
	ImportGardenPerms  ImportKind = "garden permissions"
	ImportWidgets      ImportKind = "widgets"
)

// ImportKinds lists the kinds in planning order.
var ImportKinds = []ImportKind{ImportUsers, ImportCompanies, ImportGardens, ImportBeds, ImportCompanyPerms, ImportGardenPerms, ImportWidgets}

// mapKey is the kind's short name in import map keys.
func (k ImportKind) mapKey() string {
	switch k {
	case ImportCompanyPerms:
		return "company_perm"
	case ImportGardenPerms:
		return "garden_perm"
	}
	return string(k)
}

// Import is every record of one dump. Key fields are ids in the source; references
// (Company, Garden, User, On) are source keys of records in the same Import.
type Import struct {
	// Source names the system ("plantmap"); imports of one source recognise each
	// other's records.
	Source       string
	Users        []ImportUser
	Companies    []ImportCompany
	Gardens      []ImportGarden
	Beds         []ImportBed
	CompanyPerms []ImportPermission // On: a company key
	GardenPerms  []ImportPermission // On: a garden key
	Widgets      []ImportWidget
}

// ImportUser is an account with its hash as the source stored it (verified by
// Passwords.Verify, replaced on the first login). Names may be empty: the source
// allowed that, and nothing is invented for them.
type ImportUser struct {
	Key                                           uint64
	Username, FirstName, LastName, Email, PwdHash string
	DateJoined                                    time.Time
	LastLogin                                     *time.Time
	SiteAdmin                                     bool
}

// ImportCompany is a company.
type ImportCompany struct {
	Key  uint64
	Name string
}

// ImportGarden is a garden; with HasImage, ApplyImport needs the path of its image
// file (written before) and Coordinates are its set.
type ImportGarden struct {
	Key, Company uint64
	Name         string
	HasImage     bool
	Coordinates  Coordinates
}

// ImportBed is a bed.
type ImportBed struct {
	Key, Garden uint64
	UUID, Name  string
}

// ImportPermission is a company or garden permission.
type ImportPermission struct {
	Key, On, User uint64
	Level         Level
}

// ImportWidget is a user's widgets document (one valid JSON value).
type ImportWidget struct {
	Key, User uint64
	Doc       []byte
}

// ImportProblem is something about one record: an error blocks the whole import, a
// warning is reported and the record imported.
type ImportProblem struct {
	Kind    ImportKind
	Key     uint64
	Message string
	Warning bool
}

// KindPlan is what happens to the records of one kind.
type KindPlan struct {
	// KeepIDs: new records keep their source ids.
	KeepIDs bool
	// IDs maps the source key of every new or earlier imported record to its id
	// (for widgets: the user's id).
	IDs map[uint64]uint64
	// New are the keys to write; Already the keys an earlier import brought over,
	// left as they are; Skipped the keys left out, with the reason.
	New, Already []uint64
	Skipped      map[uint64]string
}

// ImportPlan is the outcome of planning an Import against the database.
type ImportPlan struct {
	Kinds    map[ImportKind]*KindPlan
	Problems []ImportProblem
}

// Errors reports whether a problem blocks the import.
func (p ImportPlan) Errors() bool {
	return slices.ContainsFunc(p.Problems, func(x ImportProblem) bool { return !x.Warning })
}

// NewGardensWithImage lists the keys of the gardens ApplyImport writes that need an
// image path, in key order.
func (p ImportPlan) NewGardensWithImage(in Import) []uint64 {
	var out []uint64
	plan := p.Kinds[ImportGardens]
	for _, g := range in.Gardens {
		if g.HasImage && slices.Contains(plan.New, g.Key) {
			out = append(out, g.Key)
		}
	}
	return out
}

// PlanImport works out what ApplyImport would do, without writing.
func (s *Store) PlanImport(in Import) (ImportPlan, error) {
	var plan ImportPlan
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		plan, err = planImport(tx, in)
		return err
	})
	return plan, err
}

// ApplyImport writes the new records of in, in one transaction. expect is the plan
// the caller acted on (it wrote the images of NewGardensWithImage, whose paths are in
// images by garden key): if the database changed meanwhile, nothing is written
// (ErrConflict). A plan with errors is refused (ErrInvalid).
func (s *Store) ApplyImport(in Import, expect ImportPlan, images map[uint64]string) (ImportPlan, error) {
	var plan ImportPlan
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		if plan, err = planImport(tx, in); err != nil {
			return err
		}
		if !reflect.DeepEqual(plan, expect) {
			return fmt.Errorf("%w: the database changed while the import was prepared; run it again", ErrConflict)
		}
		if plan.Errors() {
			return fmt.Errorf("%w: the import has errors; nothing was written", ErrInvalid)
		}
		if !plan.HasNew() {
			return errNothingToImport // rolls back: not even a commit is written
		}
		return applyImport(tx, in, plan, images, s.now().UTC())
	})
	if err == errNothingToImport {
		err = nil
	}
	return plan, err
}

var errNothingToImport = errors.New("nothing to import")

// HasNew reports whether ApplyImport would write anything.
func (p ImportPlan) HasNew() bool {
	for _, k := range p.Kinds {
		if len(k.New) > 0 {
			return true
		}
	}
	return false
}

// importMapKey is source|0|kind|0|sourceKey.
func importMapKey(source string, kind ImportKind, key uint64) []byte {
	k := make([]byte, 0, len(source)+len(kind.mapKey())+2+8)
	k = append(k, source...)
	k = append(k, 0)
	k = append(k, kind.mapKey()...)
	k = append(k, 0)
	return append(k, itob(key)...)
}

// imported returns the ids an import of any source gave records of kind (for widgets,
// user ids).
func imported(tx *bolt.Tx, kind ImportKind) map[uint64]bool {
	out := map[uint64]bool{}
	mid := append(append([]byte{0}, kind.mapKey()...), 0)
	m := tx.Bucket(bucketImportMap)
	if m == nil { // a database no gardend with imports has opened for writing
		return out
	}
	m.ForEach(func(k, v []byte) error {
		if len(k) >= len(mid)+8 && bytes.Equal(k[len(k)-8-len(mid):len(k)-8], mid) && len(v) == 8 {
			out[btoi(v)] = true
		}
		return nil
	})
	return out
}

type planner struct {
	tx   *bolt.Tx
	in   Import
	plan ImportPlan
}

func (p *planner) problem(kind ImportKind, key uint64, warning bool, format string, args ...any) {
	p.plan.Problems = append(p.plan.Problems, ImportProblem{Kind: kind, Key: key, Message: fmt.Sprintf(format, args...), Warning: warning})
}

// kind plans one kind: keys in source order, exists tells whether a gardend id is
// there, taken lists every id in use, seq is the kind's id sequence, and skip may
// leave a new record out (returning why, or "" to import it).
func (p *planner) kind(kind ImportKind, keys []uint64, exists func(id uint64) bool, taken map[uint64]bool, seq uint64, skip func(key uint64) string) *KindPlan {
	kp := &KindPlan{IDs: map[uint64]uint64{}, Skipped: map[uint64]string{}}
	p.plan.Kinds[kind] = kp
	m := p.tx.Bucket(bucketImportMap) // nil in a database opened read-only before any import
	for _, key := range keys {
		var v []byte
		if m != nil {
			v = m.Get(importMapKey(p.in.Source, kind, key))
		}
		if v != nil {
			if id := btoi(v); exists(id) {
				kp.IDs[key] = id
				kp.Already = append(kp.Already, key)
			} else {
				kp.Skipped[key] = "imported before, and deleted in gardend since"
			}
			continue
		}
		if why := skip(key); why != "" {
			kp.Skipped[key] = why
			continue
		}
		kp.New = append(kp.New, key)
	}
	// Source ids are kept when every record of the kind came from this source (none
	// at all, on a first import) and none of them is in use.
	ours := map[uint64]bool{}
	prefix := importMapKey(p.in.Source, kind, 0)
	prefix = prefix[:len(prefix)-8]
	if m != nil {
		c := m.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			ours[btoi(v)] = true
		}
	}
	kp.KeepIDs = true
	for id := range taken {
		if !ours[id] {
			kp.KeepIDs = false
		}
	}
	for _, key := range kp.New {
		if taken[key] {
			kp.KeepIDs = false
		}
	}
	next := seq
	for _, key := range kp.New {
		if kp.KeepIDs {
			kp.IDs[key] = key
		} else {
			next++
			kp.IDs[key] = next
		}
	}
	return kp
}

// ids lists the ids stored under bucket's 8-byte keys.
func ids(b *bolt.Bucket) map[uint64]bool {
	out := map[uint64]bool{}
	b.ForEach(func(k, _ []byte) error {
		if len(k) == 8 {
			out[btoi(k)] = true
		}
		return nil
	})
	return out
}

// permIDs lists the permission ids of a permission bucket.
func permIDs(b *bolt.Bucket) map[uint64]bool {
	out := map[uint64]bool{}
	b.ForEach(func(_, v []byte) error {
		if len(v) == permValueSize {
			out[btoi(v)] = true
		}
		return nil
	})
	return out
}

func keysOf[T any](items []T, key func(T) uint64) []uint64 {
	out := make([]uint64, len(items))
	for i, it := range items {
		out[i] = key(it)
	}
	return out
}

func planImport(tx *bolt.Tx, in Import) (ImportPlan, error) {
	if in.Source == "" || strings.IndexByte(in.Source, 0) >= 0 {
		return ImportPlan{}, Invalid("source", "an import needs a source name")
	}
	p := &planner{tx: tx, in: in, plan: ImportPlan{Kinds: map[ImportKind]*KindPlan{}}}
	p.validate()
	bucketSeq := func(name []byte) uint64 { return tx.Bucket(name).Sequence() }
	exists := func(name []byte) func(uint64) bool {
		return func(id uint64) bool { return tx.Bucket(name).Get(itob(id)) != nil }
	}
	none := func(uint64) string { return "" }

	// Users: a username gardend has already (from elsewhere) stops the import; one
	// that differs only in case is worth a warning (gardend, like Django, tells them
	// apart, but people may not).
	users := p.kind(ImportUsers, keysOf(in.Users, func(u ImportUser) uint64 { return u.Key }),
		exists(bucketUsers), ids(tx.Bucket(bucketUsers)), bucketSeq(bucketUsers), none)
	folded := map[string]string{}
	tx.Bucket(bucketUsernames).ForEach(func(k, _ []byte) error {
		folded[strings.ToLower(string(k))] = "gardend's user " + strconv.Quote(string(k))
		return nil
	})
	for _, u := range in.Users {
		if !slices.Contains(users.New, u.Key) {
			continue
		}
		lower := strings.ToLower(u.Username)
		if err := claimUsername(tx, u.Username, 0); err != nil {
			// Taken, or looks like a taken name: the accounts could not be told apart.
			p.problem(ImportUsers, u.Key, false, "username %q is taken in gardend by a user this source did not bring over, or looks like such a user's name; rename one of them", u.Username)
		} else if other, ok := folded[lower]; ok {
			p.problem(ImportUsers, u.Key, true, "username %q differs from %s only in case; both can log in, each with their own name", u.Username, other)
		} else {
			folded[lower] = fmt.Sprintf("%q (id %d)", u.Username, u.Key)
		}
	}

	companies := p.kind(ImportCompanies, keysOf(in.Companies, func(c ImportCompany) uint64 { return c.Key }),
		exists(bucketCompanies), ids(tx.Bucket(bucketCompanies)), bucketSeq(bucketCompanies), none)

	gardens := p.kind(ImportGardens, keysOf(in.Gardens, func(g ImportGarden) uint64 { return g.Key }),
		exists(bucketGardens), ids(tx.Bucket(bucketGardens)), bucketSeq(bucketGardens), func(key uint64) string {
			g := findImport(in.Gardens, key, func(g ImportGarden) uint64 { return g.Key })
			if why, ok := companies.Skipped[g.Company]; ok {
				return "its company was left out: " + why
			}
			return ""
		})

	p.kind(ImportBeds, keysOf(in.Beds, func(b ImportBed) uint64 { return b.Key }),
		exists(bucketBeds), ids(tx.Bucket(bucketBeds)), bucketSeq(bucketBeds), func(key uint64) string {
			b := findImport(in.Beds, key, func(b ImportBed) uint64 { return b.Key })
			if why, ok := gardens.Skipped[b.Garden]; ok {
				return "its garden was left out: " + why
			}
			if id, ok := gardens.IDs[b.Garden]; ok && tx.Bucket(bucketBedUUIDs).Get(bedUUIDKey(b.UUID, id)) != nil {
				return "its garden has a bed for project " + b.UUID + " already"
			}
			return ""
		})

	permSkip := func(on *KindPlan, bucket []byte, perms []ImportPermission) func(uint64) string {
		return func(key uint64) string {
			pm := findImport(perms, key, func(x ImportPermission) uint64 { return x.Key })
			if why, ok := on.Skipped[pm.On]; ok {
				return "what it is on was left out: " + why
			}
			if why, ok := users.Skipped[pm.User]; ok {
				return "its user was left out: " + why
			}
			onID, ok1 := on.IDs[pm.On]
			userID, ok2 := users.IDs[pm.User]
			if ok1 && ok2 && tx.Bucket(bucket).Get(pairKey(onID, userID)) != nil {
				return "the user holds a permission there already; it is left as it is"
			}
			return ""
		}
	}
	companyPermIDs, gardenPermIDs := permIDs(tx.Bucket(bucketPermCompany)), permIDs(tx.Bucket(bucketPermGarden))
	p.kind(ImportCompanyPerms, keysOf(in.CompanyPerms, func(x ImportPermission) uint64 { return x.Key }),
		func(id uint64) bool { return companyPermIDs[id] }, companyPermIDs,
		bucketSeq(bucketPermCompany), permSkip(companies, bucketPermCompany, in.CompanyPerms))
	p.kind(ImportGardenPerms, keysOf(in.GardenPerms, func(x ImportPermission) uint64 { return x.Key }),
		func(id uint64) bool { return gardenPermIDs[id] }, gardenPermIDs,
		bucketSeq(bucketPermGarden), permSkip(gardens, bucketPermGarden, in.GardenPerms))

	// Widgets have no ids of their own: one document per user.
	widgets := p.kind(ImportWidgets, keysOf(in.Widgets, func(w ImportWidget) uint64 { return w.Key }),
		func(uint64) bool { return true }, nil, 0, func(key uint64) string {
			w := findImport(in.Widgets, key, func(w ImportWidget) uint64 { return w.Key })
			if why, ok := users.Skipped[w.User]; ok {
				return "its user was left out: " + why
			}
			if id, ok := users.IDs[w.User]; ok && tx.Bucket(bucketWidgets).Get(itob(id)) != nil {
				return "the user has saved widgets in gardend already; they are left as they are"
			}
			return ""
		})
	widgets.KeepIDs = false
	for _, w := range in.Widgets {
		if slices.Contains(widgets.New, w.Key) || slices.Contains(widgets.Already, w.Key) {
			widgets.IDs[w.Key] = users.IDs[w.User]
		}
	}
	p.companyAdmins()
	return p.plan, nil
}

// validate applies gardend's rules to every record, as an error per record: nothing
// is written that gardend could not have written itself (names excepted, see
// ImportUser).
func (p *planner) validate() {
	seen := func(kind ImportKind, keys []uint64) {
		dup := map[uint64]bool{}
		for _, k := range keys {
			if dup[k] {
				p.problem(kind, k, false, "the id appears twice")
			}
			dup[k] = true
		}
	}
	in := p.in
	names := map[string]uint64{}
	for _, u := range in.Users {
		if msg := ValidateUsername(u.Username); msg != "" {
			p.problem(ImportUsers, u.Key, false, "%s", msg)
		} else if other, ok := names[u.Username]; ok {
			p.problem(ImportUsers, u.Key, false, "username %q is also the username of the user with id %d", u.Username, other)
		}
		names[u.Username] = u.Key
		if u.PwdHash == "" {
			p.problem(ImportUsers, u.Key, false, "the password hash is missing (use \"!\" for an account without a usable password)")
		}
	}
	seen(ImportUsers, keysOf(in.Users, func(u ImportUser) uint64 { return u.Key }))
	for _, c := range in.Companies {
		if err := validationText(Company{Name: c.Name}.Validate()); err != "" {
			p.problem(ImportCompanies, c.Key, false, "%s", err)
		}
	}
	seen(ImportCompanies, keysOf(in.Companies, func(c ImportCompany) uint64 { return c.Key }))
	companies := keySet(in.Companies, func(c ImportCompany) uint64 { return c.Key })
	gardens := keySet(in.Gardens, func(g ImportGarden) uint64 { return g.Key })
	users := keySet(in.Users, func(u ImportUser) uint64 { return u.Key })
	for _, g := range in.Gardens {
		if err := validationText(Garden{Name: g.Name}.Validate()); err != "" {
			p.problem(ImportGardens, g.Key, false, "%s", err)
		}
		if !companies[g.Company] {
			p.problem(ImportGardens, g.Key, false, "its company %d is not in the import", g.Company)
		}
		if g.HasImage {
			if err := validationText(g.Coordinates.Validate()); err != "" {
				p.problem(ImportGardens, g.Key, false, "%s", err)
			}
		}
	}
	seen(ImportGardens, keysOf(in.Gardens, func(g ImportGarden) uint64 { return g.Key }))
	projects := map[string]uint64{}
	for _, b := range in.Beds {
		if err := validationText(Bed{UUID: b.UUID, Name: b.Name}.Validate()); err != "" {
			p.problem(ImportBeds, b.Key, false, "%s", err)
		}
		if !gardens[b.Garden] {
			p.problem(ImportBeds, b.Key, false, "its garden %d is not in the import", b.Garden)
		}
		k := b.UUID + "\x00" + fmt.Sprint(b.Garden)
		if other, ok := projects[k]; ok {
			p.problem(ImportBeds, b.Key, false, "bed %d of the same garden has project %s already", other, b.UUID)
		}
		projects[k] = b.Key
	}
	seen(ImportBeds, keysOf(in.Beds, func(b ImportBed) uint64 { return b.Key }))
	for _, perms := range []struct {
		kind ImportKind
		list []ImportPermission
		on   map[uint64]bool
		what string
	}{{ImportCompanyPerms, in.CompanyPerms, companies, "company"}, {ImportGardenPerms, in.GardenPerms, gardens, "garden"}} {
		pairs := map[[2]uint64]uint64{}
		for _, x := range perms.list {
			if msg := x.Level.problem(); msg != "" {
				p.problem(perms.kind, x.Key, false, "%s", msg)
			}
			if !perms.on[x.On] {
				p.problem(perms.kind, x.Key, false, "its %s %d is not in the import", perms.what, x.On)
			}
			if !users[x.User] {
				p.problem(perms.kind, x.Key, false, "its user %d is not in the import", x.User)
			}
			if other, ok := pairs[[2]uint64{x.On, x.User}]; ok {
				p.problem(perms.kind, x.Key, false, "permission %d gives the same user a permission on the same %s", other, perms.what)
			}
			pairs[[2]uint64{x.On, x.User}] = x.Key
		}
		seen(perms.kind, keysOf(perms.list, func(x ImportPermission) uint64 { return x.Key }))
	}
	owners := map[uint64]uint64{}
	for _, w := range in.Widgets {
		switch {
		case !users[w.User]:
			p.problem(ImportWidgets, w.Key, false, "its user %d is not in the import", w.User)
		case len(w.Doc) > MaxWidgetsBytes:
			p.problem(ImportWidgets, w.Key, false, "the document has %d bytes; gardend keeps at most %d", len(w.Doc), MaxWidgetsBytes)
		case !json.Valid(w.Doc):
			p.problem(ImportWidgets, w.Key, false, "the document is not valid JSON")
		}
		if other, ok := owners[w.User]; ok {
			p.problem(ImportWidgets, w.Key, false, "widgets %d belong to the same user; gardend keeps one document per user", other)
		}
		owners[w.User] = w.Key
	}
	seen(ImportWidgets, keysOf(in.Widgets, func(w ImportWidget) uint64 { return w.Key }))
}

// companyAdmins warns about new companies nobody will administer: gardend never makes
// one, but the source may hold them, and inventing an admin would grant rights the
// source never gave. Site administrators manage such a company.
func (p *planner) companyAdmins() {
	admins := map[uint64]bool{}
	for _, x := range p.in.CompanyPerms {
		if x.Level == LevelAdmin && !hasKey(p.plan.Kinds[ImportCompanyPerms].Skipped, x.Key) {
			admins[x.On] = true
		}
	}
	for _, c := range p.plan.Kinds[ImportCompanies].New {
		if !admins[c] {
			p.problem(ImportCompanies, c, true, "the company has no admin in the import; it is imported so: site administrators (gardend admin create) can manage it and make someone its admin")
		}
	}
}

func hasKey[V any](m map[uint64]V, k uint64) bool {
	_, ok := m[k]
	return ok
}

func keySet[T any](items []T, key func(T) uint64) map[uint64]bool {
	out := map[uint64]bool{}
	for _, it := range items {
		out[key(it)] = true
	}
	return out
}

func findImport[T any](items []T, key uint64, keyOf func(T) uint64) T {
	for _, it := range items {
		if keyOf(it) == key {
			return it
		}
	}
	var zero T
	return zero
}

// validationText turns a validation error into its message ("" for none).
func validationText(err error) string {
	if err == nil {
		return ""
	}
	if v, ok := err.(*ValidationError); ok {
		msgs := slices.Sorted(maps.Values(v.Fields))
		return strings.Join(msgs, "; ")
	}
	return err.Error()
}

// applyImport writes plan's new records.
func applyImport(tx *bolt.Tx, in Import, plan ImportPlan, images map[uint64]string, now time.Time) error {
	m := tx.Bucket(bucketImportMap)
	remember := func(kind ImportKind, key, id uint64) error {
		return m.Put(importMapKey(in.Source, kind, key), itob(id))
	}
	// put stores one new record's id bookkeeping: the import map and the bucket's
	// sequence, which must stay at or above every id so later records do not collide.
	put := func(kind ImportKind, bucket *bolt.Bucket, key uint64) (uint64, error) {
		id := plan.Kinds[kind].IDs[key]
		if bucket.Sequence() < id {
			if err := bucket.SetSequence(id); err != nil {
				return 0, err
			}
		}
		return id, remember(kind, key, id)
	}
	isNew := func(kind ImportKind, key uint64) bool { return slices.Contains(plan.Kinds[kind].New, key) }

	for _, u := range in.Users {
		if !isNew(ImportUsers, u.Key) {
			continue
		}
		id, err := put(ImportUsers, tx.Bucket(bucketUsers), u.Key)
		if err != nil {
			return err
		}
		joined := u.DateJoined
		if joined.IsZero() {
			joined = now
		}
		rec := userRecord{User: User{ID: id, Username: u.Username, FirstName: u.FirstName, LastName: u.LastName,
			Email: u.Email, DateJoined: joined.UTC(), LastLogin: u.LastLogin, SiteAdmin: u.SiteAdmin}, PasswordHash: u.PwdHash}
		if err := putUsername(tx, u.Username, id); err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bucketUsers), itob(id), rec); err != nil {
			return err
		}
	}
	for _, c := range in.Companies {
		if !isNew(ImportCompanies, c.Key) {
			continue
		}
		id, err := put(ImportCompanies, tx.Bucket(bucketCompanies), c.Key)
		if err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bucketCompanies), itob(id), Company{ID: id, Name: c.Name}); err != nil {
			return err
		}
	}
	gardens := map[uint64]Garden{}
	for _, g := range in.Gardens {
		if !isNew(ImportGardens, g.Key) {
			continue
		}
		id, err := put(ImportGardens, tx.Bucket(bucketGardens), g.Key)
		if err != nil {
			return err
		}
		rec := Garden{ID: id, Name: g.Name, Company: plan.Kinds[ImportCompanies].IDs[g.Company]}
		if g.HasImage {
			path, ok := images[g.Key]
			if !ok || path == "" {
				return fmt.Errorf("garden %d: %w: its image was not written", g.Key, ErrInvalid)
			}
			rec.ImagePath = &path
			if err := putJSON(tx.Bucket(bucketGardenCoords), itob(id), g.Coordinates); err != nil {
				return err
			}
		}
		if err := putJSON(tx.Bucket(bucketGardens), itob(id), rec); err != nil {
			return err
		}
		if err := tx.Bucket(bucketCompanyGardens).Put(pairKey(rec.Company, id), nil); err != nil {
			return err
		}
		gardens[g.Key] = rec
	}
	for _, b := range in.Beds {
		if !isNew(ImportBeds, b.Key) {
			continue
		}
		id, err := put(ImportBeds, tx.Bucket(bucketBeds), b.Key)
		if err != nil {
			return err
		}
		gardenID := plan.Kinds[ImportGardens].IDs[b.Garden]
		byUUID := tx.Bucket(bucketBedUUIDs)
		if byUUID.Get(bedUUIDKey(b.UUID, gardenID)) != nil {
			return fmt.Errorf("%w: garden %d already has a bed with uuid %s", ErrConflict, gardenID, b.UUID)
		}
		if err := putJSON(tx.Bucket(bucketBeds), itob(id), bedRecord{Bed: Bed{ID: id, UUID: b.UUID, Name: b.Name}, Garden: gardenID}); err != nil {
			return err
		}
		if err := tx.Bucket(bucketGardenBeds).Put(pairKey(gardenID, id), nil); err != nil {
			return err
		}
		if err := byUUID.Put(bedUUIDKey(b.UUID, gardenID), itob(id)); err != nil {
			return err
		}
	}
	for _, x := range in.CompanyPerms {
		if !isNew(ImportCompanyPerms, x.Key) {
			continue
		}
		b := tx.Bucket(bucketPermCompany)
		id, err := put(ImportCompanyPerms, b, x.Key)
		if err != nil {
			return err
		}
		companyID, userID := plan.Kinds[ImportCompanies].IDs[x.On], plan.Kinds[ImportUsers].IDs[x.User]
		if err := b.Put(pairKey(companyID, userID), permValue{id: id, level: x.Level}.encode()); err != nil {
			return err
		}
		if err := tx.Bucket(bucketUserCompany).Put(pairKey(userID, companyID), nil); err != nil {
			return err
		}
	}
	for _, x := range in.GardenPerms {
		if !isNew(ImportGardenPerms, x.Key) {
			continue
		}
		b := tx.Bucket(bucketPermGarden)
		id, err := put(ImportGardenPerms, b, x.Key)
		if err != nil {
			return err
		}
		g, ok := gardens[x.On]
		if !ok { // a garden of an earlier import
			if g, err = getGarden(tx, plan.Kinds[ImportGardens].IDs[x.On]); err != nil {
				return err
			}
		}
		userID := plan.Kinds[ImportUsers].IDs[x.User]
		if err := b.Put(pairKey(g.ID, userID), permValue{id: id, level: x.Level}.encode()); err != nil {
			return err
		}
		if err := tx.Bucket(bucketUserGarden).Put(tripleKey(userID, g.Company, g.ID), nil); err != nil {
			return err
		}
	}
	for _, w := range in.Widgets {
		if !isNew(ImportWidgets, w.Key) {
			continue
		}
		userID := plan.Kinds[ImportUsers].IDs[w.User]
		if err := remember(ImportWidgets, w.Key, userID); err != nil {
			return err
		}
		if err := tx.Bucket(bucketWidgets).Put(itob(userID), w.Doc); err != nil {
			return err
		}
	}
	return nil
}
