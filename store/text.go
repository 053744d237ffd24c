package store

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text a store keeps (names, emails, what a spatial server called a frame) must be
// valid UTF-8 without control characters (Unicode Cc: U+0000–U+001F, U+007F–U+009F)
// or invisible format characters (invisibleFormat) on every backend: PostgreSQL cannot store U+0000 or invalid UTF-8 at all, and a line
// break or an escape sequence in a name garbles every listing and log that shows it.
// New text that breaks the rule is refused (a 400 naming the field); text already
// stored that breaks it (an older bbolt install, an import) is repaired on the way
// into a store (RepairText), and the repair reported, never refused whole.

// textProblem says what is wrong with v as stored text ("" when nothing): the first
// control character or invalid byte, and where.
func textProblem(v string) string {
	chars := 0
	for i, r := range v {
		chars++
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(v[i:], "\uFFFD"):
			return fmt.Sprintf("must be UTF-8 text (invalid byte 0x%02X at character %d)", v[i], chars)
		case unicode.IsControl(r):
			return fmt.Sprintf("must not contain control characters (%U at character %d)", r, chars)
		case invisibleFormat(r):
			return fmt.Sprintf("must not contain invisible format characters such as bidi controls or zero-width spaces (%U at character %d)", r, chars)
		}
	}
	return ""
}

// Blank reports whether v shows nothing: it holds only white space, format
// characters (Unicode Cf: zero-width spaces and joiners, direction marks, U+FEFF)
// and the fillers that render as nothing (Hangul fillers, the blank Braille cell).
// strings.TrimSpace leaves "\u200b" or "\u3164" standing: a title nobody can see.
func Blank(v string) bool {
	for _, r := range v {
		switch {
		case unicode.IsSpace(r), unicode.Is(unicode.Cf, r):
		case r == '\u115F', r == '\u1160', r == '\u3164', r == '\uFFA0', r == '\u2800':
		default:
			return false
		}
	}
	return true
}

// oneLine reports whether v has no control character and no line or paragraph
// separator (U+2028, U+2029), which break a line as a newline does.
func oneLine(v string) bool {
	return strings.IndexFunc(v, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }) < 0
}

// invisibleFormat reports the format characters (Unicode Cf) text may not hold: bidi
// controls (U+202E turns "gpj.exe" around), zero-width spaces and joiners of words
// (U+200B, U+2060, U+FEFF), soft hyphens and the like, which make two names that look
// alike differ, or one name look like another. The zero-width (non-)joiners
// U+200C and U+200D stay: Persian, Indic scripts and emoji sequences need them.
func invisibleFormat(r rune) bool {
	return r >= 0xAD && r != 0x200C && r != 0x200D && unicode.Is(unicode.Cf, r)
}

// CleanText reports whether v is fit to store as text (see textProblem).
func CleanText(v string) bool { return textProblem(v) == "" }

// RepairText replaces every control character and invalid UTF-8 sequence of v by
// U+FFFD, the replacement character, so that what stood there stays visible;
// changed reports that there was any.
func RepairText(v string) (repaired string, changed bool) {
	if CleanText(v) {
		return v, false
	}
	var b strings.Builder
	for i, r := range v {
		if r == utf8.RuneError && !strings.HasPrefix(v[i:], "\uFFFD") || unicode.IsControl(r) || invisibleFormat(r) {
			b.WriteRune(utf8.RuneError)
			continue
		}
		b.WriteRune(r)
	}
	return b.String(), true
}

// Repair is a field an import or a restore changed to load it: text no store keeps,
// made fit by RepairText (or a password hash that could never verify, made
// unusable).
type Repair struct {
	// Line is the archive line of the record; 0 for a PlantMap import.
	Line int
	// Record names it: "user 3", "garden 7", "queued download of P/C".
	Record string
	Field  string
	// Was is the value as it came, quoted (Go syntax: control characters escaped).
	Was string
	// Now is what was stored instead, quoted likewise.
	Now string
}

func (r Repair) String() string {
	where := r.Record
	if r.Line > 0 {
		where = fmt.Sprintf("archive line %d: %s", r.Line, r.Record)
	}
	return fmt.Sprintf("%s: %s %s held control characters or invalid UTF-8; stored as %s", where, r.Field, r.Was, r.Now)
}

// repairer repairs the text fields of one record and lists what it changed.
type repairer struct {
	record string
	out    []Repair
}

// text repairs *v, the field named field.
func (rp *repairer) text(field string, v *string) {
	if fixed, changed := RepairText(*v); changed {
		rp.out = append(rp.out, Repair{Record: rp.record, Field: field, Was: strconv.Quote(*v), Now: strconv.Quote(fixed)})
		*v = fixed
	}
}

// hash makes a password hash that holds anything but printable ASCII unusable ("!"):
// no hash format has such characters, so it could never verify.
func (rp *repairer) hash(v *string) {
	for i := 0; i < len(*v); i++ {
		if c := (*v)[i]; c < 0x21 || c > 0x7e {
			rp.out = append(rp.out, Repair{Record: rp.record, Field: "password_hash", Was: "(not shown)", Now: `"!" (unusable: reset the password)`})
			*v = "!"
			return
		}
	}
}

// coordinates repairs the names of a coordinate set, keeping them unique: a
// repaired name that another one already has gets " (2)", " (3)", … appended.
func (rp *repairer) coordinates(cs Coordinates) {
	taken := make(map[string]bool, len(cs))
	for _, c := range cs {
		taken[c.Name] = true
	}
	for i := range cs {
		was := cs[i].Name
		fixed, changed := RepairText(was)
		if !changed {
			continue
		}
		delete(taken, was)
		name := fixed
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("%s (%d)", fixed, n)
		}
		taken[name] = true
		cs[i].Name = name
		rp.out = append(rp.out, Repair{Record: rp.record, Field: fmt.Sprintf("coordinates[%d].name", i), Was: strconv.Quote(was), Now: strconv.Quote(name)})
	}
}

// repairArchived repairs the text of an archived record in place and returns what
// it changed.
func repairArchived(record any) []Repair {
	var rp repairer
	switch r := record.(type) {
	case *ArchivedUser:
		rp.record = fmt.Sprintf("user %d", r.ID)
		rp.text("first_name", &r.FirstName)
		rp.text("last_name", &r.LastName)
		rp.text("email", &r.Email)
		rp.hash(&r.PasswordHash)
	case *Company:
		rp.record = fmt.Sprintf("company %d", r.ID)
		rp.text("name", &r.Name)
	case *ArchivedGarden:
		rp.record = fmt.Sprintf("garden %d", r.ID)
		rp.text("name", &r.Name)
		rp.coordinates(r.Coordinates)
	case *ArchivedBed:
		rp.record = fmt.Sprintf("bed %d", r.ID)
		rp.text("name", &r.Name)
	case *PlantPosition:
		rp.record = fmt.Sprintf("position of %s/%s", r.Project, r.Cloud)
		rp.text("frame", &r.Frame)
		rp.text("reason", &r.Reason)
	case *ArchivedAlert:
		rp.record = fmt.Sprintf("alert %d", r.ID)
		rp.text("bed_name", &r.BedName)
	case *ArchivedSeries:
		rp.record = fmt.Sprintf("history of bed %d", r.Bed)
		if r.Plant != "" {
			rp.record += ", plant " + strconv.Quote(r.Plant)
		}
		rp.text("name", &r.Name)
	case *CloudJob:
		rp.record = fmt.Sprintf("queued download of %s/%s", r.Project, r.Cloud)
		rp.text("frame", &r.Frame)
		rp.text("last_error", &r.LastError)
		rp.text("claimed_by", &r.ClaimedBy)
	}
	return rp.out
}

// repairImport returns in with the text of every record repaired (in is left as it
// is), and a warning for each repair.
func repairImport(in Import) (Import, []ImportProblem) {
	var problems []ImportProblem
	note := func(kind ImportKind, key uint64, rs []Repair) {
		for _, r := range rs {
			problems = append(problems, ImportProblem{Kind: kind, Key: key, Warning: true,
				Message: fmt.Sprintf("%s %s held control characters or invalid UTF-8; it is imported as %s", r.Field, r.Was, r.Now)})
		}
	}
	in.Users = append([]ImportUser(nil), in.Users...)
	for i := range in.Users {
		u := &in.Users[i]
		var rp repairer
		rp.text("first_name", &u.FirstName)
		rp.text("last_name", &u.LastName)
		rp.text("email", &u.Email)
		if u.PwdHash != "" {
			rp.hash(&u.PwdHash)
		}
		note(ImportUsers, u.Key, rp.out)
	}
	in.Companies = append([]ImportCompany(nil), in.Companies...)
	for i := range in.Companies {
		var rp repairer
		rp.text("name", &in.Companies[i].Name)
		note(ImportCompanies, in.Companies[i].Key, rp.out)
	}
	in.Gardens = append([]ImportGarden(nil), in.Gardens...)
	for i := range in.Gardens {
		g := &in.Gardens[i]
		var rp repairer
		rp.text("name", &g.Name)
		g.Coordinates = append(Coordinates(nil), g.Coordinates...)
		rp.coordinates(g.Coordinates)
		note(ImportGardens, g.Key, rp.out)
	}
	in.Beds = append([]ImportBed(nil), in.Beds...)
	for i := range in.Beds {
		var rp repairer
		rp.text("name", &in.Beds[i].Name)
		note(ImportBeds, in.Beds[i].Key, rp.out)
	}
	return in, problems
}

// TextProblem is textProblem for callers outside the package that must say what is
// wrong with text before it reaches a store in a form that would hide it (JSON
// encoding turns invalid UTF-8 into U+FFFD).
func TextProblem(v string) string { return textProblem(v) }
