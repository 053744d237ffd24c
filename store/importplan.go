package store

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Planning an import is the same for every backend: it reads what the database holds
// through an ImportView, inside the transaction of the backend's PlanImport or
// ApplyImport, and applying it writes the records ImportRecords lists, in archive
// form, so that a backend writes them with the code that loads its archives.

// ImportView is what planning an import reads of a backend. A backend implements it
// on one transaction; every method sees the same state.
type ImportView interface {
	// Imported returns the id an earlier import of source gave the record of kind
	// with the source's key (for widgets: the user's id).
	Imported(source string, kind ImportKind, key uint64) (id uint64, ok bool, err error)
	// ImportedIDs returns every id imports of source gave records of kind.
	ImportedIDs(source string, kind ImportKind) (map[uint64]bool, error)
	// IDs returns every id of kind in use (the permission ids for permissions; nil
	// for widgets, which have none).
	IDs(kind ImportKind) (map[uint64]bool, error)
	// LastID is the highest id handed out for kind: new ids are above it.
	LastID(kind ImportKind) (uint64, error)
	// Usernames lists every stored username.
	Usernames() ([]string, error)
	// HasBed reports whether the garden has a bed for the project uuid.
	HasBed(gardenID uint64, uuid string) (bool, error)
	// HasPermission reports whether the user holds a permission of kind
	// (ImportCompanyPerms or ImportGardenPerms) on the company or garden on.
	HasPermission(kind ImportKind, on, userID uint64) (bool, error)
	// HasWidgets reports whether the user has saved widgets.
	HasWidgets(userID uint64) (bool, error)
}

// ImportMapEntry remembers the id an import gave a record: Key is the source's id.
type ImportMapEntry struct {
	Source string     `json:"source"`
	Kind   ImportKind `json:"kind"`
	Key    uint64     `json:"key"`
	ID     uint64     `json:"id"`
}

// ImportRecords is what applying a plan writes, in archive form and in archive order
// (a record only refers to records before it), and the import map entries of all of
// them.
type ImportRecords struct {
	Users        []ArchivedUser
	Companies    []Company
	Gardens      []ArchivedGarden
	Beds         []ArchivedBed
	CompanyPerms []ArchivedPermission
	GardenPerms  []ArchivedPermission
	Widgets      []ArchivedWidgets
	Map          []ImportMapEntry
}

// PlanImport works out against view what applying in would do. Text no store keeps
// (control characters, invalid UTF-8) is repaired, each repair a warning.
func PlanImport(view ImportView, in Import) (ImportPlan, error) {
	if in.Source == "" || !CleanText(in.Source) {
		return ImportPlan{}, Invalid("source", "an import needs a source name, as text without control characters")
	}
	in, repaired := repairImport(in)
	p := &planner{view: view, in: in, plan: ImportPlan{Kinds: map[ImportKind]*KindPlan{}, Problems: repaired}}
	p.validate()
	p.kinds()
	if p.err != nil {
		return ImportPlan{}, p.err
	}
	return p.plan, nil
}

// ErrNothingToImport is PrepareImport's answer when the plan has no new record: the
// backend writes nothing, not even an empty commit.
var ErrNothingToImport = errors.New("nothing new to import")

// PrepareImport is the first step of a backend's ApplyImport, inside its write
// transaction: it plans in again against view and returns the plan and the records
// to write. expect is the plan the caller acted on (it wrote the images of
// NewGardensWithImage, whose paths are in images by garden key): if the database
// changed meanwhile it is ErrConflict; a plan with errors is ErrInvalid; one with
// nothing new is ErrNothingToImport. now is the date joined of users without one.
func PrepareImport(view ImportView, in Import, expect ImportPlan, images map[uint64]string, now time.Time) (ImportPlan, *ImportRecords, error) {
	plan, err := PlanImport(view, in)
	if err != nil {
		return ImportPlan{}, nil, err
	}
	if !reflect.DeepEqual(plan, expect) {
		return plan, nil, fmt.Errorf("%w: the database changed while the import was prepared; run it again", ErrConflict)
	}
	if plan.Errors() {
		return plan, nil, fmt.Errorf("%w: the import has errors; nothing was written", ErrInvalid)
	}
	if !plan.HasNew() {
		return plan, nil, ErrNothingToImport
	}
	in, _ = repairImport(in) // as PlanImport planned it
	recs, err := plan.records(view, in, images, now)
	return plan, recs, err
}

type planner struct {
	view ImportView
	in   Import
	plan ImportPlan
	// err is the first error reading the view; planning goes on without it and
	// PlanImport returns it.
	err error
}

// keep records the first error of a read of the view.
func (p *planner) keep(err error) {
	if err != nil && p.err == nil {
		p.err = err
	}
}

func (p *planner) problem(kind ImportKind, key uint64, warning bool, format string, args ...any) {
	p.plan.Problems = append(p.plan.Problems, ImportProblem{Kind: kind, Key: key, Message: fmt.Sprintf(format, args...), Warning: warning})
}

// kind plans one kind: keys in source order, taken lists every id in use, and skip
// may leave a new record out (returning why, or "" to import it).
func (p *planner) kind(kind ImportKind, keys []uint64, taken map[uint64]bool, skip func(key uint64) string) *KindPlan {
	kp := &KindPlan{IDs: map[uint64]uint64{}, Skipped: map[uint64]string{}}
	p.plan.Kinds[kind] = kp
	for _, key := range keys {
		id, ok, err := p.view.Imported(p.in.Source, kind, key)
		p.keep(err)
		if ok {
			// Widgets have no id of their own: the user's stands in.
			if taken == nil || taken[id] {
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
	if taken == nil {
		return kp
	}
	// Source ids are kept when every record of the kind came from this source (none
	// at all, on a first import) and none of them is in use.
	ours, err := p.view.ImportedIDs(p.in.Source, kind)
	p.keep(err)
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
	next, err := p.view.LastID(kind)
	p.keep(err)
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

func keysOf[T any](items []T, key func(T) uint64) []uint64 {
	out := make([]uint64, len(items))
	for i, it := range items {
		out[i] = key(it)
	}
	return out
}

// kinds plans every kind, in order: a record left out leaves out what refers to it.
func (p *planner) kinds() {
	in, v := p.in, p.view
	none := func(uint64) string { return "" }
	ids := func(kind ImportKind) map[uint64]bool {
		out, err := v.IDs(kind)
		p.keep(err)
		if out == nil {
			out = map[uint64]bool{}
		}
		return out
	}

	// Users: a username gardend has already (from elsewhere), or one drawn like it
	// (UsernameSkeleton), stops the import; one that shares a look with it but for
	// case (UsernameLooks), or with another user of the source, is worth a warning:
	// gardend, like Django, tells them apart, but people may not.
	users := p.kind(ImportUsers, keysOf(in.Users, func(u ImportUser) uint64 { return u.Key }), ids(ImportUsers), none)
	names, err := v.Usernames()
	p.keep(err)
	drawn := map[string]string{} // skeleton → a stored name drawn so
	looks := map[string]string{} // look → who has it, for the warning
	for _, name := range names {
		drawn[UsernameSkeleton(name)] = name
		for _, look := range UsernameLooks(name) {
			looks[look] = "gardend's user " + strconv.Quote(name)
		}
	}
	for _, u := range in.Users {
		if !slices.Contains(users.New, u.Key) {
			continue
		}
		if _, taken := drawn[UsernameSkeleton(u.Username)]; taken {
			// Taken, or drawn like a taken name: the accounts could not be told apart.
			p.problem(ImportUsers, u.Key, false, "username %q is taken in gardend by a user this source did not bring over, or looks like such a user's name; rename one of them", u.Username)
			continue
		}
		ownLooks := UsernameLooks(u.Username)
		if i := slices.IndexFunc(ownLooks, func(l string) bool { return looks[l] != "" }); i >= 0 {
			p.problem(ImportUsers, u.Key, true, "username %q looks like %s but for case; both can log in, each with their own name", u.Username, looks[ownLooks[i]])
			continue
		}
		for _, look := range ownLooks {
			looks[look] = fmt.Sprintf("%q (id %d)", u.Username, u.Key)
		}
	}

	companies := p.kind(ImportCompanies, keysOf(in.Companies, func(c ImportCompany) uint64 { return c.Key }), ids(ImportCompanies), none)

	gardens := p.kind(ImportGardens, keysOf(in.Gardens, func(g ImportGarden) uint64 { return g.Key }), ids(ImportGardens), func(key uint64) string {
		g := findImport(in.Gardens, key, func(g ImportGarden) uint64 { return g.Key })
		if why, ok := companies.Skipped[g.Company]; ok {
			return "its company was left out: " + why
		}
		return ""
	})

	p.kind(ImportBeds, keysOf(in.Beds, func(b ImportBed) uint64 { return b.Key }), ids(ImportBeds), func(key uint64) string {
		b := findImport(in.Beds, key, func(b ImportBed) uint64 { return b.Key })
		if why, ok := gardens.Skipped[b.Garden]; ok {
			return "its garden was left out: " + why
		}
		if id, ok := gardens.IDs[b.Garden]; ok {
			has, err := v.HasBed(id, b.UUID)
			p.keep(err)
			if has {
				return "its garden has a bed for project " + b.UUID + " already"
			}
		}
		return ""
	})

	permSkip := func(kind ImportKind, on *KindPlan, perms []ImportPermission) func(uint64) string {
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
			if ok1 && ok2 {
				has, err := v.HasPermission(kind, onID, userID)
				p.keep(err)
				if has {
					return "the user holds a permission there already; it is left as it is"
				}
			}
			return ""
		}
	}
	p.kind(ImportCompanyPerms, keysOf(in.CompanyPerms, func(x ImportPermission) uint64 { return x.Key }),
		ids(ImportCompanyPerms), permSkip(ImportCompanyPerms, companies, in.CompanyPerms))
	p.kind(ImportGardenPerms, keysOf(in.GardenPerms, func(x ImportPermission) uint64 { return x.Key }),
		ids(ImportGardenPerms), permSkip(ImportGardenPerms, gardens, in.GardenPerms))

	// Widgets have no ids of their own: one document per user.
	widgets := p.kind(ImportWidgets, keysOf(in.Widgets, func(w ImportWidget) uint64 { return w.Key }), nil, func(key uint64) string {
		w := findImport(in.Widgets, key, func(w ImportWidget) uint64 { return w.Key })
		if why, ok := users.Skipped[w.User]; ok {
			return "its user was left out: " + why
		}
		if id, ok := users.IDs[w.User]; ok {
			has, err := v.HasWidgets(id)
			p.keep(err)
			if has {
				return "the user has saved widgets in gardend already; they are left as they are"
			}
		}
		return ""
	})
	for _, w := range in.Widgets {
		if slices.Contains(widgets.New, w.Key) || slices.Contains(widgets.Already, w.Key) {
			widgets.IDs[w.Key] = users.IDs[w.User]
		}
	}
	p.companyAdmins()
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
		default:
			if err := validationText(validateWidgets(w.Doc, "the document")); err != "" {
				p.problem(ImportWidgets, w.Key, false, "%s", err)
			}
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

// records lists the new records of plan in archive form, with their import map
// entries; gardens with an image get their path from images.
func (plan ImportPlan) records(view ImportView, in Import, images map[uint64]string, now time.Time) (*ImportRecords, error) {
	r := &ImportRecords{}
	isNew := func(kind ImportKind, key uint64) bool { return slices.Contains(plan.Kinds[kind].New, key) }
	id := func(kind ImportKind, key uint64) uint64 {
		id := plan.Kinds[kind].IDs[key]
		r.Map = append(r.Map, ImportMapEntry{Source: in.Source, Kind: kind, Key: key, ID: id})
		return id
	}
	for _, u := range in.Users {
		if !isNew(ImportUsers, u.Key) {
			continue
		}
		joined := u.DateJoined
		if joined.IsZero() {
			joined = now
		}
		r.Users = append(r.Users, ArchivedUser{User: User{ID: id(ImportUsers, u.Key), Username: u.Username, FirstName: u.FirstName,
			LastName: u.LastName, Email: u.Email, DateJoined: joined.UTC(), LastLogin: u.LastLogin, SiteAdmin: u.SiteAdmin},
			PasswordHash: u.PwdHash})
	}
	for _, c := range in.Companies {
		if isNew(ImportCompanies, c.Key) {
			r.Companies = append(r.Companies, Company{ID: id(ImportCompanies, c.Key), Name: c.Name})
		}
	}
	for _, g := range in.Gardens {
		if !isNew(ImportGardens, g.Key) {
			continue
		}
		rec := ArchivedGarden{Garden: Garden{ID: id(ImportGardens, g.Key), Name: g.Name, Company: plan.Kinds[ImportCompanies].IDs[g.Company]}}
		if g.HasImage {
			path, ok := images[g.Key]
			if !ok || path == "" {
				return nil, fmt.Errorf("garden %d: %w: its image was not written", g.Key, ErrInvalid)
			}
			rec.ImagePath, rec.Coordinates = &path, g.Coordinates
		}
		r.Gardens = append(r.Gardens, rec)
	}
	for _, b := range in.Beds {
		if !isNew(ImportBeds, b.Key) {
			continue
		}
		gardenID := plan.Kinds[ImportGardens].IDs[b.Garden]
		r.Beds = append(r.Beds, ArchivedBed{Bed: Bed{ID: id(ImportBeds, b.Key), UUID: b.UUID, Name: b.Name, Garden: gardenID}, Garden: gardenID})
	}
	for _, perms := range []struct {
		kind ImportKind
		on   ImportKind
		list []ImportPermission
		out  *[]ArchivedPermission
	}{{ImportCompanyPerms, ImportCompanies, in.CompanyPerms, &r.CompanyPerms}, {ImportGardenPerms, ImportGardens, in.GardenPerms, &r.GardenPerms}} {
		for _, x := range perms.list {
			if isNew(perms.kind, x.Key) {
				*perms.out = append(*perms.out, ArchivedPermission{ID: id(perms.kind, x.Key), On: plan.Kinds[perms.on].IDs[x.On],
					UserID: plan.Kinds[ImportUsers].IDs[x.User], Level: x.Level})
			}
		}
	}
	for _, w := range in.Widgets {
		if isNew(ImportWidgets, w.Key) {
			r.Widgets = append(r.Widgets, ArchivedWidgets{UserID: id(ImportWidgets, w.Key), Doc: w.Doc})
		}
	}
	return r, nil
}

// Each hands every record to load in archive order, its import map entries last,
// and stops at the first error.
func (r *ImportRecords) Each(load func(kind string, rec any) error) error {
	l := &recordLoader{load: load}
	loadAll(l, KindUser, r.Users)
	loadAll(l, KindWidgets, r.Widgets)
	loadAll(l, KindCompany, r.Companies)
	loadAll(l, KindGarden, r.Gardens)
	loadAll(l, KindCompanyPermission, r.CompanyPerms)
	loadAll(l, KindGardenPermission, r.GardenPerms)
	loadAll(l, KindBed, r.Beds)
	loadAll(l, KindImportMap, r.Map)
	return l.err
}

// recordLoader hands records to load until one fails.
type recordLoader struct {
	load func(kind string, rec any) error
	err  error
}

func loadAll[T any](l *recordLoader, kind string, recs []T) {
	for i := range recs {
		if l.err != nil {
			return
		}
		l.err = l.load(kind, &recs[i])
	}
}

// Changes are the change-feed entries of the records r holds, in SnapshotKinds
// order, for a backend that records them after loading r.
func (r *ImportRecords) Changes() []Change {
	var out []Change
	add := func(kind string, id, ref uint64) { out = append(out, Change{Kind: kind, ID: id, Ref: ref}) }
	for _, u := range r.Users {
		add(KindUser, u.ID, 0)
	}
	for _, w := range r.Widgets {
		add(KindUser, w.UserID, 0)
	}
	for _, c := range r.Companies {
		add(KindCompany, c.ID, 0)
	}
	for _, g := range r.Gardens {
		add(KindGarden, g.ID, g.Company)
	}
	for _, g := range r.Gardens {
		if g.ImagePath != nil {
			add(KindGardenImage, g.ID, g.Company)
		}
	}
	for _, b := range r.Beds {
		add(KindBed, b.ID, b.Garden)
	}
	for _, p := range r.CompanyPerms {
		add(KindCompanyPermission, p.On, p.UserID)
	}
	for _, p := range r.GardenPerms {
		add(KindGardenPermission, p.On, p.UserID)
	}
	return out
}
