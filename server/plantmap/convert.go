package plantmap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gardend/gardend/store"
)

// Source is the name imports from PlantMap go by in gardend's import map: a second
// import recognises what the first brought over.
const Source = "plantmap"

// Problem is something about one record of the dump, named by its model and pk as the
// dump writes them. An error stops the import; a warning says what was done about it.
type Problem struct {
	Model   string `json:"model"`
	PK      string `json:"pk"`
	Message string `json:"message"`
	Warning bool   `json:"warning,omitempty"`
}

// Converted is a dump in gardend's terms.
type Converted struct {
	Import   store.Import
	Problems []Problem
	// ImageFiles is, per garden pk, the file name its image_path ends in.
	ImageFiles map[uint64]string
	// coordinatePKs is, per garden pk, its coordinates' pks in the order kept.
	coordinatePKs map[uint64][]string
	// CostlyHashes are the users (by pk) whose hash costs more than
	// store.MaxHashCost logins to check: imported unusable.
	CostlyHashes map[uint64]bool
}

type converter struct {
	out   *Converted
	users map[string]uint64 // username → pk, for natural foreign keys
}

func (c *converter) problem(rec Record, warning bool, format string, args ...any) {
	c.out.Problems = append(c.out.Problems, Problem{Model: rec.Model, PK: rec.PKText(), Message: fmt.Sprintf(format, args...), Warning: warning})
}

// fields reads one record's fields; every accessor reports a wrong type as an error
// of the record and marks it bad, so the record is left out of the Import (the error
// stops the import anyway; leaving it out keeps later checks from piling on).
type fields struct {
	c   *converter
	rec Record
	m   map[string]json.RawMessage
	bad bool
}

func (c *converter) fields(rec Record) *fields {
	f := &fields{c: c, rec: rec}
	if err := json.Unmarshal(rec.Fields, &f.m); err != nil {
		c.problem(rec, false, "fields is not an object: %v", err)
		f.bad = true
	}
	return f
}

func (f *fields) fail(format string, args ...any) {
	f.c.problem(f.rec, false, format, args...)
	f.bad = true
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// str is a string field; null and absent are "" with ok false.
func (f *fields) str(name string) (v string, ok bool) {
	raw := f.m[name]
	if isNull(raw) {
		return "", false
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		f.fail("%s must be a string", name)
		return "", false
	}
	return v, true
}

func (f *fields) boolean(name string, def bool) bool {
	raw := f.m[name]
	if isNull(raw) {
		return def
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		f.fail("%s must be true or false", name)
	}
	return v
}

// number reads a float field, written as a JSON number or (Django's DecimalField
// and some FloatField dumps) a string.
func (f *fields) number(name string) (float64, bool) {
	raw := f.m[name]
	if isNull(raw) {
		f.fail("%s is missing", name)
		return 0, false
	}
	text := string(bytes.TrimSpace(raw))
	if text[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			f.fail("%s must be a number", name)
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil {
		f.fail("%s must be a number, not %s", name, raw)
		return 0, false
	}
	return v, true
}

// ref reads a foreign key: a pk, or (dumpdata --natural-foreign) a user's natural key
// ["username"].
func (f *fields) ref(name, what string) (uint64, bool) {
	raw := f.m[name]
	if isNull(raw) {
		f.fail("it has no %s; gardend needs one", what)
		return 0, false
	}
	if id, ok := parsePK(raw); ok {
		return id, true
	}
	var natural []string
	if json.Unmarshal(raw, &natural) == nil && len(natural) == 1 && what == "user" {
		if id, ok := f.c.users[natural[0]]; ok {
			return id, true
		}
		f.fail("its user %q is not in the dump", natural[0])
		return 0, false
	}
	f.fail("%s must be the pk of a %s, not %s", name, what, raw)
	return 0, false
}

// stamp reads a Django datetime: ISO 8601 with a zone ("…Z", "…+01:00"), or without
// one (USE_TZ = False), which is taken as UTC.
func (f *fields) stamp(name string) *time.Time {
	text, ok := f.str(name)
	if !ok {
		return nil
	}
	if t, err := time.Parse(time.RFC3339Nano, text); err == nil {
		t = t.UTC()
		return &t
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, text); err == nil {
			t = t.UTC()
			return &t
		}
	}
	f.fail("%s %q is not a date and time (ISO 8601)", name, text)
	return nil
}

// parsePK reads a positive integer id.
func parsePK(raw json.RawMessage) (uint64, bool) {
	v, err := strconv.ParseUint(string(bytes.TrimSpace(raw)), 10, 64)
	return v, err == nil && v > 0
}

// each calls fn for every record with a usable pk and fields object; the others are
// reported and left out.
func (c *converter) each(recs []Record, fn func(rec Record, id uint64, f *fields)) {
	for _, rec := range recs {
		id, ok := c.pk(rec)
		f := c.fields(rec)
		if ok && !f.bad {
			fn(rec, id, f)
		}
	}
}

func (c *converter) pk(rec Record) (uint64, bool) {
	id, ok := parsePK(rec.PK)
	if !ok {
		why := "its pk must be a positive integer"
		if len(rec.PK) == 0 {
			why = "it has no pk (was the dump made with --natural-primary? make it without)"
		}
		c.problem(rec, false, "%s", why)
	}
	return id, ok
}

// Convert turns a dump into an Import and the problems found on the way. The store
// checks gardend's rules when it plans the Import; Convert checks what only the dump
// can tell (types, references to records the dump lacks, how Django spelled things).
func Convert(d *Dump) *Converted {
	out := &Converted{Import: store.Import{Source: Source}, ImageFiles: map[uint64]string{}, coordinatePKs: map[uint64][]string{},
		CostlyHashes: map[uint64]bool{}}
	c := &converter{out: out, users: map[string]uint64{}}
	for _, rec := range d.Records[ModelUser] {
		var u struct {
			Username string `json:"username"`
		}
		_ = json.Unmarshal(rec.Fields, &u) // convertUsers reports a malformed record
		if id, ok := parsePK(rec.PK); ok && u.Username != "" {
			c.users[u.Username] = id
		}
	}
	c.convertUsers(d.Records[ModelUser])
	c.convertCompanies(d.Records[ModelCompany])
	c.convertGardens(d.Records[ModelGarden], d.Records[ModelCoordinate])
	c.convertBeds(d.Records[ModelBed])
	c.convertPerms(d.Records[ModelCompanyPerm], "company", &out.Import.CompanyPerms)
	c.convertPerms(d.Records[ModelGardenPerm], "garden", &out.Import.GardenPerms)
	c.convertWidgets(d.Records[ModelWidget])
	for _, m := range d.SkippedModels() {
		if strings.HasPrefix(m, "restapi.") {
			c.out.Problems = append(c.out.Problems, Problem{Model: m, PK: "*", Warning: true,
				Message: fmt.Sprintf("%d records left out: gardend does not know this PlantMap model", d.Skipped[m])})
		}
	}
	return out
}

func (c *converter) convertUsers(recs []Record) {
	c.each(recs, func(rec Record, id uint64, f *fields) {
		u := store.ImportUser{Key: id}
		u.Username, _ = f.str("username")
		u.FirstName, _ = f.str("first_name")
		u.LastName, _ = f.str("last_name")
		u.Email, _ = f.str("email")
		hash, _ := f.str("password")
		u.SiteAdmin = f.boolean("is_superuser", false)
		active := f.boolean("is_active", true)
		if t := f.stamp("date_joined"); t != nil {
			u.DateJoined = *t
		}
		u.LastLogin = f.stamp("last_login")
		if f.bad {
			return
		}
		_, cost, _ := store.HashKind(hash)
		switch alg, supported := store.DjangoHashAlgorithm(hash); {
		case supported && cost > store.MaxHashCost:
			// Every wrong password would cost seconds of CPU, every login by anyone
			// who guesses the name too (the decoy of unknown names matches the
			// slowest kind stored). Kept, but unusable: an administrator sets a new
			// password.
			hash = "!" + hash
			c.out.CostlyHashes[id] = true
			c.problem(rec, true, "its password hash (%s) costs %.0f logins to check, more than the %d gardend allows: imported without a usable password; set one with gardend user reset-password", alg, cost, store.MaxHashCost)
		case hash == "":
			hash = "!"
			c.problem(rec, true, "no password hash: imported without a usable password")
		case !active && !store.UnusablePassword(hash):
			hash = "!" + hash
			c.problem(rec, true, "inactive in PlantMap: imported, but its password is kept unusable, so it cannot log in")
		case alg == "unusable":
		case !supported:
			c.problem(rec, true, "its password hash (%q) is not one gardend verifies; the user cannot log in until an administrator sets a new password", alg)
		}
		u.PwdHash = hash
		if u.DateJoined.IsZero() {
			c.problem(rec, true, "no date_joined: the time of the import is taken")
		}
		c.out.Import.Users = append(c.out.Import.Users, u)
	})
}

// name reads a company's or garden's name; PlantMap allowed none, gardend needs one,
// so a missing one becomes "<Kind> <pk>" and is reported.
func (c *converter) name(f *fields, rec Record, id uint64, kind string) string {
	name, _ := f.str("name")
	if strings.TrimSpace(name) == "" {
		name = kind + " " + strconv.FormatUint(id, 10)
		c.problem(rec, true, "it has no name; imported as %q", name)
	}
	return name
}

func (c *converter) convertCompanies(recs []Record) {
	c.each(recs, func(rec Record, id uint64, f *fields) {
		c.out.Import.Companies = append(c.out.Import.Companies, store.ImportCompany{Key: id, Name: c.name(f, rec, id, "Company")})
	})
}

func (c *converter) convertGardens(recs, coords []Record) {
	// Coordinates by garden, in dump order (the order they were uploaded).
	byGarden := map[uint64]store.Coordinates{}
	pks := map[uint64][]string{}
	gardens := map[uint64]bool{}
	for _, rec := range recs {
		if id, ok := parsePK(rec.PK); ok {
			gardens[id] = true
		}
	}
	for _, rec := range coords {
		f := c.fields(rec)
		if f.bad {
			continue
		}
		// Some PlantMap versions made the coordinate's name its primary key.
		name, ok := f.str("name")
		if !ok {
			if err := json.Unmarshal(rec.PK, &name); err != nil {
				f.fail("it has no name")
			}
		}
		lat, _ := f.number("latitude")
		lon, _ := f.number("longitude")
		garden, _ := f.ref("garden", "garden")
		if f.bad {
			continue
		}
		if !gardens[garden] {
			c.problem(rec, false, "its garden %d is not in the dump", garden)
			continue
		}
		byGarden[garden] = append(byGarden[garden], store.Coordinate{Name: name, Latitude: lat, Longitude: lon})
		pks[garden] = append(pks[garden], rec.PKText())
	}
	c.each(recs, func(rec Record, id uint64, f *fields) {
		g := store.ImportGarden{Key: id, Name: c.name(f, rec, id, "Garden")}
		g.Company, _ = f.ref("company", "company")
		path, _ := f.str("image_path")
		if f.bad {
			return
		}
		if strings.TrimSpace(path) != "" {
			base := imageFileName(path)
			if base == "" {
				c.problem(rec, false, "image_path %q names no file", path)
				return
			}
			c.out.ImageFiles[id] = base
			g.HasImage = true
			g.Coordinates = byGarden[id]
			c.out.coordinatePKs[id] = pks[id]
		} else if n := len(byGarden[id]); n > 0 {
			c.problem(rec, true, "it has no image: its %d coordinates are left out (gardend keeps coordinates with an image only)", n)
		}
		c.out.Import.Gardens = append(c.out.Import.Gardens, g)
	})
}

// imageFileName is the last element of the old server's path, whichever separator it
// used; "" when there is none usable.
func imageFileName(path string) string {
	i := strings.LastIndexAny(path, `/\`)
	name := path[i+1:]
	if name == "" || name == "." || name == ".." {
		return ""
	}
	return name
}

func (c *converter) convertBeds(recs []Record) {
	c.each(recs, func(rec Record, id uint64, f *fields) {
		b := store.ImportBed{Key: id}
		b.UUID, _ = f.str("uuid")
		b.Name, _ = f.str("name")
		b.Garden, _ = f.ref("garden", "garden")
		if !f.bad {
			c.out.Import.Beds = append(c.out.Import.Beds, b)
		}
	})
}

func (c *converter) convertPerms(recs []Record, on string, dst *[]store.ImportPermission) {
	c.each(recs, func(rec Record, id uint64, f *fields) {
		p := store.ImportPermission{Key: id}
		letter, _ := f.str("permission")
		p.Level = store.Level(letter)
		p.On, _ = f.ref(on, on)
		p.User, _ = f.ref("user", "user")
		if !f.bad {
			*dst = append(*dst, p)
		}
	})
}

func (c *converter) convertWidgets(recs []Record) {
	c.each(recs, func(rec Record, id uint64, f *fields) {
		w := store.ImportWidget{Key: id}
		w.User, _ = f.ref("user", "user")
		raw := f.m["data"]
		switch {
		case f.bad:
			return
		case isNull(raw):
			c.problem(rec, false, "it has no data")
			return
		}
		// The document as the client saved it; compacted, as a client sends it.
		var doc bytes.Buffer
		if err := json.Compact(&doc, raw); err != nil {
			c.problem(rec, false, "its data is not JSON: %v", err)
			return
		}
		w.Doc = doc.Bytes()
		c.out.Import.Widgets = append(c.out.Import.Widgets, w)
	})
}
