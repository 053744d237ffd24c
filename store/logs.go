package store

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The garden logbook: what a gardener saw (observation), did (activity), harvested
// (harvest) or someone must do (task), each a Log of one garden that may point at one
// bed of it and one plant of that bed.

// LogType is the kind of a log.
type LogType string

// The log types.
const (
	LogObservation LogType = "observation"
	LogActivity    LogType = "activity"
	LogHarvest     LogType = "harvest"
	LogTask        LogType = "task"
)

// LogTypes lists the types in the order the API names them.
var LogTypes = []LogType{LogObservation, LogActivity, LogHarvest, LogTask}

// LogStatus is whether a log still asks for something to be done.
type LogStatus string

// The statuses.
const (
	LogPending LogStatus = "pending"
	LogDone    LogStatus = "done"
)

// Quantity is an amount with its unit: "3.5 kg", "12 pieces".
type Quantity struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Log is a record of a garden's logbook as the API answers it. Author and Assignee
// are usernames, resolved when the log is read (a user may be renamed); the store
// keeps their ids.
type Log struct {
	ID      uint64  `json:"id"`
	Company uint64  `json:"company"`
	Garden  uint64  `json:"garden"`
	Type    LogType `json:"type"`
	Title   string  `json:"title"`
	Notes   string  `json:"notes"`
	// At is when it happened, or when a task is due (UTC, microseconds).
	At  time.Time `json:"at"`
	Bed *uint64   `json:"bed"`
	// BedRemoved: the bed was deleted since; the log keeps its id.
	BedRemoved bool      `json:"bed_removed"`
	Plant      *string   `json:"plant"`
	Quantity   *Quantity `json:"quantity"`
	Assignee   *string   `json:"assignee"`
	AssigneeID uint64    `json:"-"`
	Status     LogStatus `json:"status"`
	Author     string    `json:"author"`
	AuthorID   uint64    `json:"-"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	// Photos are the ids of the log's photos, oldest first.
	Photos []uint64 `json:"photos"`
	// ClientKey is the idempotency key the log was created with (CreateLogOnce), ""
	// without one; the API does not show it.
	ClientKey string `json:"-"`
}

// MaxClientKey is the longest idempotency key.
const MaxClientKey = 64

// ValidClientKey checks an idempotency key: 1 to MaxClientKey characters of
// A–Z a–z 0–9 and "-_.:" (a UUID fits; no byte a backend's index key could trip on).
func ValidClientKey(key string) error {
	ok := key != "" && len(key) <= MaxClientKey
	for i := 0; ok && i < len(key); i++ {
		c := key[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
	}
	if !ok {
		return Invalid("Idempotency-Key", fmt.Sprintf("the Idempotency-Key must be 1 to %d characters of letters, digits and - _ . : (a UUID does)", MaxClientKey))
	}
	return nil
}

// PhotoKeyOfAnother refuses an idempotency key another user added a photo of the
// log with: a retry answers the caller's own photo, never someone else's.
func PhotoKeyOfAnother() error {
	return Invalid("Idempotency-Key", "another user added a photo to this log with this Idempotency-Key; send a key of your own (a new UUID)")
}

// Limits of a log's fields.
const (
	MaxLogTitle = 200
	MaxLogNotes = 20000
	MaxLogUnit  = 16
	// MaxLogAhead is how far in the future a log other than a task may be dated.
	MaxLogAhead = 366 * 24 * time.Hour
	// MaxLogPage is the most logs one page may hold; DefaultLogPage is a page's size
	// without limit.
	MaxLogPage     = 200
	DefaultLogPage = 50
	// MaxLogPageText bounds the text (titles and notes, in bytes) of a page of logs
	// and of the pending tasks: a page ends early, with its cursor, once it holds
	// this much. 200 logs of 20,000 characters each are 16 MB of text, and answering
	// them took 120 MiB of heap; ordinary pages never come near it.
	MaxLogPageText = 2 << 20
	// MaxQueryWords bounds the words of a search.
	MaxQueryWords = 8
	// maxWordLen: longer "words" (hashes, pasted junk) are not indexed or searched.
	maxWordLen = 40
)

// The range a log's time must lie in: wide enough for any garden's records, narrow
// enough that every backend orders it the same.
var (
	minLogTime = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	maxLogTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// LogPatch is the input of CreateLog (over an empty log) and UpdateLog (over the
// stored one): a nil field is left as it is; a set optional field (Bed, Plant,
// Quantity, Assignee) pointing at its zero value (0, "", nil) clears it.
type LogPatch struct {
	Type     *LogType
	Title    *string
	Notes    *string
	At       *time.Time
	Bed      *uint64
	Plant    *string
	Quantity **Quantity
	// Assignee is a username.
	Assignee *string
	Status   *LogStatus
}

// LogAuthorizer decides whether the caller may turn old into next (old is nil for a
// new log). The store calls it inside the writing transaction, after the fields are
// valid and before the references are checked; it must not block.
type LogAuthorizer func(old *Log, next Log) error

// LogFilter selects the logs of one garden; zero fields do not filter.
type LogFilter struct {
	Type       LogType
	Status     LogStatus
	Bed        uint64
	Plant      string
	AssigneeID uint64
	AuthorID   uint64
	// From and Until bound At: From ≤ At < Until.
	From, Until time.Time
	// Words must all be words of the title or the notes (QueryWords).
	Words []string
	// After continues a listing after that log (LogPage.Next).
	After *LogCursor
	// Limit is the page's size: DefaultLogPage when 0, at most MaxLogPage; a page of
	// long logs ends before, at MaxLogPageText.
	Limit int
}

// TextSize is what a log's text counts against MaxLogPageText.
func (l Log) TextSize() int { return len(l.Title) + len(l.Notes) }

// PageSize is the filter's page size.
func (f LogFilter) PageSize() int {
	switch {
	case f.Limit <= 0:
		return DefaultLogPage
	case f.Limit > MaxLogPage:
		return MaxLogPage
	}
	return f.Limit
}

// LogPage is one page of a listing, newest At first (then highest id); Next is the
// cursor of the next page, nil on the last.
type LogPage struct {
	Logs []Log
	Next *LogCursor
}

// LogCursor is the position of a log in the listing order.
type LogCursor struct {
	At time.Time
	ID uint64
}

// String encodes the cursor for a client: opaque, URL-safe.
func (c LogCursor) String() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(c.At.UnixMicro()))
	binary.BigEndian.PutUint64(b[8:], c.ID)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ParseLogCursor reads a cursor String made.
func ParseLogCursor(s string) (LogCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return LogCursor{}, Invalid("cursor", "cursor is not one this server gave; list again without it")
	}
	at := time.UnixMicro(int64(binary.BigEndian.Uint64(b[:8]))).UTC()
	id := binary.BigEndian.Uint64(b[8:])
	if at.Before(minLogTime) || !at.Before(maxLogTime) || id == 0 {
		return LogCursor{}, Invalid("cursor", "cursor is not one this server gave; list again without it")
	}
	return LogCursor{At: at, ID: id}, nil
}

// Before reports whether l comes after the cursor in the listing order (older, or as
// old with a lower id).
func (c LogCursor) Before(at time.Time, id uint64) bool {
	return at.Before(c.At) || at.Equal(c.At) && id < c.ID
}

// LogTime is t as a log keeps it: UTC, microseconds (what PostgreSQL keeps).
func LogTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// ParseLogType reads a log type; the error names what is allowed.
func ParseLogType(field, v string) (LogType, error) {
	t := LogType(v)
	if slices.Contains(LogTypes, t) {
		return t, nil
	}
	return "", Invalid(field, fmt.Sprintf("%s %q is not a log type; use observation, activity, harvest or task", field, v))
}

// ParseLogStatus reads a status.
func ParseLogStatus(field, v string) (LogStatus, error) {
	switch s := LogStatus(v); s {
	case LogPending, LogDone:
		return s, nil
	}
	return "", Invalid(field, fmt.Sprintf("%s %q is not a status; use pending or done", field, v))
}

// ApplyLogPatch applies p to base (a copy) and normalises what it set: the title and
// unit trimmed, times in UTC microseconds, the default status of a new log. Usernames
// are not resolved here.
func ApplyLogPatch(base Log, p LogPatch, isNew bool, now time.Time) Log {
	l := base
	if p.Type != nil {
		l.Type = *p.Type
	}
	if p.Title != nil {
		l.Title = strings.TrimSpace(*p.Title)
	}
	if p.Notes != nil {
		l.Notes = *p.Notes
	}
	if p.At != nil {
		l.At = LogTime(*p.At)
	} else if isNew {
		l.At = LogTime(now)
	}
	if p.Bed != nil {
		l.Bed = nil
		if *p.Bed != 0 {
			l.Bed = new(*p.Bed)
		}
		l.BedRemoved = false
	}
	if p.Plant != nil {
		l.Plant = nil
		if *p.Plant != "" {
			l.Plant = new(*p.Plant)
		}
	}
	if p.Quantity != nil {
		l.Quantity = nil
		if q := *p.Quantity; q != nil {
			l.Quantity = &Quantity{Value: q.Value, Unit: strings.TrimSpace(q.Unit)}
		}
	}
	if p.Assignee != nil {
		name := NormalizeUsername(*p.Assignee)
		switch {
		case *p.Assignee == "":
			l.Assignee, l.AssigneeID = nil, 0
		case l.Assignee != nil && (*l.Assignee == *p.Assignee || *l.Assignee == name):
			// The same assignee: nothing changes, their id stays.
		default:
			l.Assignee, l.AssigneeID = &name, 0
		}
	}
	if p.Status != nil {
		l.Status = *p.Status
	} else if isNew {
		l.Status = LogDone
		if l.Type == LogTask {
			l.Status = LogPending
		}
	}
	return l
}

// ValidateLog checks a log's own fields (the references to a bed, a plant and an
// assignee are the backend's to check, CheckLogReferences) against now. Each problem
// names its field with a message of its own.
func ValidateLog(l Log, now time.Time) error {
	v := &ValidationError{}
	switch {
	case l.Type == "":
		v.Add("type", "type is required: observation, activity, harvest or task")
	case !slices.Contains(LogTypes, l.Type):
		v.Add("type", fmt.Sprintf("type %q is not a log type; use observation, activity, harvest or task", l.Type))
	}
	switch n := utf8.RuneCountInString(l.Title); {
	case Blank(l.Title):
		v.Add("title", "title is required and must not be blank")
	case n > MaxLogTitle:
		v.Add("title", fmt.Sprintf("title must be at most %d characters (it has %d)", MaxLogTitle, n))
	case !oneLine(l.Title):
		v.Add("title", "title must be one line without control characters")
	}
	if n := utf8.RuneCountInString(l.Notes); n > MaxLogNotes {
		v.Add("notes", fmt.Sprintf("notes must be at most %d characters (they have %d)", MaxLogNotes, n))
	} else if strings.IndexFunc(l.Notes, badNotesRune) >= 0 {
		v.Add("notes", "notes must not contain control characters other than line breaks and tabs")
	}
	switch {
	case l.At.Before(minLogTime) || !l.At.Before(maxLogTime):
		v.Add("at", "at must lie between 1900 and 2199")
	case l.Type != LogTask && l.At.After(now.Add(MaxLogAhead)):
		v.Add("at", fmt.Sprintf("at is more than a year ahead; only a task may be dated that far in the future (a %s records what happened)", l.Type))
	}
	if l.Bed != nil && *l.Bed == 0 {
		v.Add("bed", "bed must be a positive bed id")
	}
	if l.Plant != nil {
		switch {
		case l.Bed == nil:
			v.Add("plant", "plant needs bed: name the bed the plant grows in")
		case !ValidUUID(*l.Plant):
			v.Add("plant", "plant must be a plant id as the bed's plants endpoint reports it")
		}
	}
	if q := l.Quantity; q != nil {
		switch n := utf8.RuneCountInString(q.Unit); {
		case n == 0:
			v.Add("quantity.unit", "quantity.unit is required: kg, g, pieces, l …")
		case Blank(q.Unit):
			v.Add("quantity.unit", "quantity.unit must not be blank: kg, g, pieces, l …")
		case n > MaxLogUnit:
			v.Add("quantity.unit", fmt.Sprintf("quantity.unit must be 1 to %d characters", MaxLogUnit))
		case !oneLine(q.Unit):
			v.Add("quantity.unit", "quantity.unit must be one line without control characters")
		}
		if math.IsNaN(q.Value) || math.IsInf(q.Value, 0) || q.Value < 0 || q.Value > 1e15 {
			v.Add("quantity.value", "quantity.value must be a number from 0 to 10^15")
		}
	} else if l.Type == LogHarvest {
		v.Add("quantity", "quantity is required for a harvest: {\"value\": 2.5, \"unit\": \"kg\"}")
	}
	if l.Assignee != nil && l.Type != LogTask {
		v.Add("assignee", "assignee is for tasks only; send \"assignee\": null, or make the log a task")
	}
	switch l.Status {
	case LogPending, LogDone:
	case "":
		v.Add("status", "status is required: pending or done")
	default:
		v.Add("status", fmt.Sprintf("status %q is not a status; use pending or done", l.Status))
	}
	return v.OrNil()
}

func badNotesRune(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' }

// The refusals of a log's references, the same from every backend.

// LogBedNotInGarden: the bed is not a bed of the garden (or no longer is one).
func LogBedNotInGarden(bedID, gardenID uint64) error {
	return Invalid("bed", fmt.Sprintf("bed %d is not a bed of garden %d", bedID, gardenID))
}

// LogPlantNotInBed: the plant id is none gardend has reported for the bed's project.
func LogPlantNotInBed(plant string, bedID uint64) error {
	return Invalid("plant", fmt.Sprintf("plant %s is not a plant of bed %d; use an id the bed's plants endpoint reports", plant, bedID))
}

// LogAssigneeWithoutRole: the assignee is no user with a role on the garden.
func LogAssigneeWithoutRole(username string, gardenID uint64) error {
	return Invalid("assignee", fmt.Sprintf("assignee %q has no role on garden %d; give them a permission first", username, gardenID))
}

// ChangedLogFields lists the API fields whose values differ between a and b, in the
// order of the API.
func ChangedLogFields(a, b Log) []string {
	var out []string
	add := func(name string, changed bool) {
		if changed {
			out = append(out, name)
		}
	}
	add("type", a.Type != b.Type)
	add("title", a.Title != b.Title)
	add("notes", a.Notes != b.Notes)
	add("at", !a.At.Equal(b.At))
	add("bed", !equalPtr(a.Bed, b.Bed))
	add("plant", !equalPtr(a.Plant, b.Plant))
	add("quantity", !equalPtr(a.Quantity, b.Quantity))
	add("assignee", !equalPtr(a.Assignee, b.Assignee))
	add("status", a.Status != b.Status)
	return out
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// LogWords lists the distinct words of a log's title and notes, for search: lower
// case, split at anything that is not a letter or a digit, words longer than
// maxWordLen left out. Backends index exactly these.
func LogWords(title, notes string) []string {
	seen := map[string]bool{}
	var out []string
	for _, text := range []string{title, notes} {
		for _, w := range words(text) {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	slices.Sort(out)
	return out
}

// QueryWords reads the words of a search (q) as LogWords splits text, each once.
func QueryWords(q string) ([]string, error) {
	ws := LogWords(q, "")
	switch {
	case len(ws) == 0:
		return nil, Invalid("q", "q must contain a word (letters or digits) to search for")
	case len(ws) > MaxQueryWords:
		return nil, Invalid("q", fmt.Sprintf("q may hold at most %d words", MaxQueryWords))
	}
	return ws, nil
}

func words(text string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if utf8.RuneCountInString(f) <= maxWordLen {
			out = append(out, f)
		}
	}
	return out
}

// LogTerms are the index terms of a log besides its words: one per value a listing
// can filter on. A backend that keeps posting lists (bbolt) lists a log under each
// term and each word (prefixed "w:"), so that any combination of filters is an
// intersection of sorted lists.
func LogTerms(l Log) []string {
	out := []string{"t:" + string(l.Type), "s:" + string(l.Status), "a:" + strconv.FormatUint(l.AuthorID, 10)}
	if l.Bed != nil {
		out = append(out, "b:"+strconv.FormatUint(*l.Bed, 10))
	}
	if l.Plant != nil {
		out = append(out, "p:"+*l.Plant)
	}
	if l.AssigneeID != 0 {
		out = append(out, "u:"+strconv.FormatUint(l.AssigneeID, 10))
	}
	for _, w := range LogWords(l.Title, l.Notes) {
		out = append(out, "w:"+w)
	}
	return out
}

// FilterTerms are the terms every log a filter selects is listed under (the time
// range and the cursor aside).
func FilterTerms(f LogFilter) []string {
	var out []string
	if f.Type != "" {
		out = append(out, "t:"+string(f.Type))
	}
	if f.Status != "" {
		out = append(out, "s:"+string(f.Status))
	}
	if f.AuthorID != 0 {
		out = append(out, "a:"+strconv.FormatUint(f.AuthorID, 10))
	}
	if f.Bed != 0 {
		out = append(out, "b:"+strconv.FormatUint(f.Bed, 10))
	}
	if f.Plant != "" {
		out = append(out, "p:"+f.Plant)
	}
	if f.AssigneeID != 0 {
		out = append(out, "u:"+strconv.FormatUint(f.AssigneeID, 10))
	}
	for _, w := range f.Words {
		out = append(out, "w:"+w)
	}
	return out
}

// MaxTasks bounds the answer of PendingTasks.
const MaxTasks = 1000
