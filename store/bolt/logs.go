package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// The logbook's layout. A log is stored once (bucketLogs, in archive form) and listed
// under index terms: garden|term|0|suffix → nil in bucketLogIndex, where suffix
// orders newest first (logSuffix) and the terms are allTerm plus store.LogTerms
// (type, status, author, bed, plant, assignee and every word). A listing is then the
// intersection of the posting lists of its filters' terms, walked in order with
// seeks (a leapfrog join): a page costs a few seeks per log on it, however many logs
// the garden holds and however rare the matches.

// allTerm lists every log of a garden.
const allTerm = "*"

// logSuffix is the order of a listing: at descending, then id descending, as 16
// bytes that sort that way.
func logSuffix(at time.Time, id uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, ^atKey(at))
	binary.BigEndian.PutUint64(k[8:], ^id)
	return k
}

// atKey maps a time to an unsigned key that sorts as the times do.
func atKey(at time.Time) uint64 { return uint64(at.UnixMicro()) ^ 1<<63 }

func suffixID(s []byte) uint64 { return ^binary.BigEndian.Uint64(s[8:16]) }

// termPrefix is garden|term|0; no term holds a 0 byte (words are letters and digits,
// plant ids uuid characters).
func termPrefix(gardenID uint64, term string) []byte {
	k := make([]byte, 0, 8+len(term)+1+16)
	k = append(k, itob(gardenID)...)
	k = append(k, term...)
	return append(k, 0)
}

func logTerms(a store.ArchivedLog, assignee uint64) []string {
	l := a.Log()
	l.AssigneeID = assignee
	out := append([]string{allTerm}, store.LogTerms(l)...)
	if a.ClientKey != "" {
		out = append(out, keyTerm(a.AuthorID, a.ClientKey))
	}
	return out
}

// taskKey indexes a pending task by its assignee: assignee|at ascending|id.
func taskKey(assignee uint64, at time.Time, id uint64) []byte {
	return tripleKey(assignee, atKey(at), id)
}

func getLog(tx *bbolt.Tx, id uint64) (store.ArchivedLog, error) {
	return getRecord[store.ArchivedLog](tx, bucketLogs, "log", id)
}

// logOf loads a log addressed under a garden: one of another garden is ErrNotFound.
func logOf(tx *bbolt.Tx, gardenID, logID uint64) (store.ArchivedLog, error) {
	a, err := getLog(tx, logID)
	if err != nil {
		return a, err
	}
	if a.Garden != gardenID {
		return store.ArchivedLog{}, fmt.Errorf("log %d of garden %d: %w", logID, gardenID, store.ErrNotFound)
	}
	return a, nil
}

// putLogIndex writes (or, with del, deletes) every index entry of a.
func putLogIndex(tx *bbolt.Tx, a store.ArchivedLog, del bool) error {
	return eachLogIndexEntry(a, func(bucket, k, v []byte) error {
		if del {
			return tx.Bucket(bucket).Delete(k)
		}
		return tx.Bucket(bucket).Put(k, v)
	})
}

// eachLogIndexEntry hands every index entry of a to fn: its bucket, key and value.
func eachLogIndexEntry(a store.ArchivedLog, fn func(bucket, k, v []byte) error) error {
	suffix := logSuffix(a.At, a.ID)
	for _, term := range logTerms(a, a.AssigneeID) {
		if err := fn(bucketLogIndex, append(termPrefix(a.Garden, term), suffix...), present); err != nil {
			return err
		}
	}
	if a.Type == store.LogTask && a.Status == store.LogPending && a.AssigneeID != 0 {
		return fn(bucketTasks, taskKey(a.AssigneeID, a.At, a.ID), itob(a.Garden))
	}
	return nil
}

// logView turns a stored log into the API's: usernames, company, whether its bed is
// gone, its photos. users caches usernames across the logs of one read.
func logView(tx *bbolt.Tx, a store.ArchivedLog, users map[uint64]string) (store.Log, error) {
	l := a.Log()
	g, err := getGarden(tx, a.Garden)
	if err != nil {
		return store.Log{}, err
	}
	l.Company = g.Company
	if l.Author, err = usernameOf(tx, a.AuthorID, users); err != nil {
		return store.Log{}, err
	}
	if a.AssigneeID != 0 {
		name, err := usernameOf(tx, a.AssigneeID, users)
		if err != nil {
			return store.Log{}, err
		}
		l.Assignee = &name
	}
	if a.Bed != nil {
		l.BedRemoved = tx.Bucket(bucketGardenBeds).Get(pairKey(a.Garden, *a.Bed)) == nil
	}
	l.Photos = idsUnder(tx.Bucket(bucketLogPhotos), itob(a.ID))
	if l.Photos == nil {
		l.Photos = []uint64{}
	}
	return l, nil
}

// usernameOf reads a user's name only (decoding a whole account per log would cost
// more than the rest of a listing).
func usernameOf(tx *bbolt.Tx, id uint64, cache map[uint64]string) (string, error) {
	if name, ok := cache[id]; ok {
		return name, nil
	}
	data := tx.Bucket(bucketUsers).Get(itob(id))
	if data == nil {
		return "", fmt.Errorf("user %d of a log: %w", id, store.ErrNotFound)
	}
	var u struct {
		Username string `json:"username"`
	}
	if err := json.Unmarshal(data, &u); err != nil {
		return "", fmt.Errorf("decode user %d: %w", id, err)
	}
	if cache != nil {
		cache[id] = u.Username
	}
	return u.Username, nil
}

// hasRoleOn reports whether the user holds a role on the garden: a permission on it
// or on its company, or site admin.
func hasRoleOn(tx *bbolt.Tx, g store.Garden, userID uint64) (bool, error) {
	u, err := getUser(tx, userID)
	if err != nil {
		return false, err
	}
	return u.SiteAdmin || tx.Bucket(bucketPermCompany).Get(pairKey(g.Company, userID)) != nil ||
		tx.Bucket(bucketPermGarden).Get(pairKey(g.ID, userID)) != nil, nil
}

// checkLogRefs checks the references of next that differ from old's (all of them for
// a new log) and resolves the assignee's id.
func checkLogRefs(tx *bbolt.Tx, g store.Garden, old *store.Log, next *store.Log) error {
	changed := func(field string) bool {
		return old == nil || slices.Contains(store.ChangedLogFields(*old, *next), field)
	}
	var b store.Bed
	if next.Bed != nil && (changed("bed") || changed("plant")) {
		var err error
		if b, err = bedOf(tx, g.ID, *next.Bed); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return store.LogBedNotInGarden(*next.Bed, g.ID)
			}
			return err
		}
	}
	if next.Plant != nil && (changed("bed") || changed("plant")) {
		if tx.Bucket(bucketPlantIDNames).Get(cloudKey(b.UUID, *next.Plant)) == nil {
			return store.LogPlantNotInBed(*next.Plant, *next.Bed)
		}
	}
	if next.Assignee != nil && changed("assignee") {
		id, ok := userIDByName(tx, *next.Assignee)
		if !ok {
			return store.LogAssigneeWithoutRole(*next.Assignee, g.ID)
		}
		has, err := hasRoleOn(tx, g, id)
		if err != nil {
			return err
		}
		if !has {
			return store.LogAssigneeWithoutRole(*next.Assignee, g.ID)
		}
		name, err := usernameOf(tx, id, nil)
		if err != nil {
			return err
		}
		next.AssigneeID, next.Assignee = id, &name
	}
	return nil
}

// CreateLog stores a new log of the garden (store.LogStore).
func (s *Store) CreateLog(gardenID, authorID uint64, p store.LogPatch, authorize store.LogAuthorizer) (store.Log, error) {
	l, _, err := s.createLog(gardenID, authorID, "", p, authorize)
	return l, err
}

// CreateLogOnce stores a new log of the garden unless the author made one with that
// key (store.LogStore). The key is an index term of the log: it goes with the log.
func (s *Store) CreateLogOnce(gardenID, authorID uint64, key string, p store.LogPatch, authorize store.LogAuthorizer) (store.Log, bool, error) {
	if err := store.ValidClientKey(key); err != nil {
		return store.Log{}, false, err
	}
	return s.createLog(gardenID, authorID, key, p, authorize)
}

// keyTerm is the index term of an author's idempotency key.
func keyTerm(authorID uint64, key string) string {
	return "k:" + strconv.FormatUint(authorID, 10) + ":" + key
}

func (s *Store) createLog(gardenID, authorID uint64, key string, p store.LogPatch, authorize store.LogAuthorizer) (store.Log, bool, error) {
	now := s.now()
	next := store.ApplyLogPatch(store.Log{Garden: gardenID, AuthorID: authorID, ClientKey: key}, p, true, now)
	if err := store.ValidateLog(next, now); err != nil {
		return store.Log{}, false, err
	}
	var out store.Log
	created := false
	err := s.db.Update(func(tx *bbolt.Tx) error {
		g, err := getGarden(tx, gardenID)
		if err != nil {
			return err
		}
		if key != "" {
			prefix := termPrefix(gardenID, keyTerm(authorID, key))
			if k, _ := tx.Bucket(bucketLogIndex).Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
				a, err := getLog(tx, suffixID(k[len(prefix):]))
				if err != nil {
					return err
				}
				out, err = logView(tx, a, nil)
				return err
			}
		}
		created = true
		author, err := usernameOf(tx, authorID, nil)
		if err != nil {
			return err
		}
		next.Company, next.Author = g.Company, author
		if authorize != nil {
			if err := authorize(nil, next); err != nil {
				return err
			}
		}
		if err := checkLogRefs(tx, g, nil, &next); err != nil {
			return err
		}
		logs := tx.Bucket(bucketLogs)
		id, err := logs.NextSequence()
		if err != nil {
			return err
		}
		next.ID = id
		next.Created = store.LogTime(now)
		next.Updated = next.Created
		a := store.ArchivedLogOf(next)
		if err := putJSON(logs, itob(id), a); err != nil {
			return err
		}
		if err := putLogIndex(tx, a, false); err != nil {
			return err
		}
		if err := recordChange(tx, now, store.KindLog, id, gardenID, false); err != nil {
			return err
		}
		out, err = logView(tx, a, nil)
		return err
	})
	if err != nil {
		return store.Log{}, false, err
	}
	return out, created, nil
}

// Log returns a log of the garden.
func (s *Store) Log(gardenID, logID uint64) (store.Log, error) {
	var out store.Log
	err := s.db.View(func(tx *bbolt.Tx) error {
		a, err := logOf(tx, gardenID, logID)
		if err != nil {
			return err
		}
		out, err = logView(tx, a, nil)
		return err
	})
	return out, err
}

// UpdateLog applies p to a log of the garden (store.LogStore).
func (s *Store) UpdateLog(gardenID, logID uint64, p store.LogPatch, authorize store.LogAuthorizer) (store.Log, error) {
	now := s.now()
	var out store.Log
	err := s.db.Update(func(tx *bbolt.Tx) error {
		g, err := getGarden(tx, gardenID)
		if err != nil {
			return err
		}
		a, err := logOf(tx, gardenID, logID)
		if err != nil {
			return err
		}
		old, err := logView(tx, a, nil)
		if err != nil {
			return err
		}
		next := store.ApplyLogPatch(old, p, false, now)
		if err := store.ValidateLog(next, now); err != nil {
			return err
		}
		if authorize != nil {
			if err := authorize(&old, next); err != nil {
				return err
			}
		}
		if err := checkLogRefs(tx, g, &old, &next); err != nil {
			return err
		}
		if len(store.ChangedLogFields(old, next)) == 0 {
			out = old
			return nil
		}
		next.Updated = store.LogTime(now)
		if err := putLogIndex(tx, a, true); err != nil {
			return err
		}
		b := store.ArchivedLogOf(next)
		if err := putJSON(tx.Bucket(bucketLogs), itob(b.ID), b); err != nil {
			return err
		}
		if err := putLogIndex(tx, b, false); err != nil {
			return err
		}
		if err := recordChange(tx, now, store.KindLog, b.ID, b.Garden, false); err != nil {
			return err
		}
		out, err = logView(tx, b, nil)
		return err
	})
	return out, err
}

// DeleteLog deletes a log of the garden with its photos.
func (s *Store) DeleteLog(gardenID, logID uint64, authorize func(store.Log) error) (store.Removed, error) {
	return s.deleteInTx(func(tx *bbolt.Tx, r *store.Removed) error {
		a, err := logOf(tx, gardenID, logID)
		if err != nil {
			return err
		}
		if authorize != nil {
			l, err := logView(tx, a, nil)
			if err != nil {
				return err
			}
			if err := authorize(l); err != nil {
				return err
			}
		}
		if err := deleteLog(tx, a, r); err != nil {
			return err
		}
		return recordChange(tx, s.now(), store.KindLog, a.ID, a.Garden, true)
	})
}

func deleteLog(tx *bbolt.Tx, a store.ArchivedLog, r *store.Removed) error {
	for _, photoID := range idsUnder(tx.Bucket(bucketLogPhotos), itob(a.ID)) {
		if err := deletePhoto(tx, photoID, r); err != nil {
			return err
		}
	}
	if err := putLogIndex(tx, a, true); err != nil {
		return err
	}
	return tx.Bucket(bucketLogs).Delete(itob(a.ID))
}

// deleteGardenLogs deletes every log of the garden and its index (deleteGarden's).
func deleteGardenLogs(tx *bbolt.Tx, gardenID uint64, r *store.Removed) error {
	idx := tx.Bucket(bucketLogIndex)
	all := termPrefix(gardenID, allTerm)
	var ids []uint64
	c := idx.Cursor()
	for k, _ := c.Seek(all); k != nil && bytes.HasPrefix(k, all); k, _ = c.Next() {
		ids = append(ids, suffixID(k[len(all):]))
	}
	for _, id := range ids {
		a, err := getLog(tx, id)
		if err != nil {
			return err
		}
		if err := deleteLog(tx, a, r); err != nil {
			return err
		}
	}
	return nil
}

// ListLogs returns a page of the garden's logs that f selects, by walking the posting
// lists of f's terms together (see the top of this file).
func (s *Store) ListLogs(gardenID uint64, f store.LogFilter) (store.LogPage, error) {
	var page store.LogPage
	err := s.db.View(func(tx *bbolt.Tx) error {
		if _, err := getGarden(tx, gardenID); err != nil {
			return err
		}
		page = store.LogPage{Logs: []store.Log{}}
		limit := f.PageSize()
		terms := store.FilterTerms(f)
		if len(terms) == 0 {
			terms = []string{allTerm}
		}
		j := newJoin(tx.Bucket(bucketLogIndex), gardenID, terms, f)
		users := map[uint64]string{}
		for text := 0; len(page.Logs) < limit && text < store.MaxLogPageText; {
			id, ok := j.next()
			if !ok {
				return nil
			}
			a, err := getLog(tx, id)
			if err != nil {
				return err
			}
			l, err := logView(tx, a, users)
			if err != nil {
				return err
			}
			page.Logs = append(page.Logs, l)
			text += l.TextSize()
		}
		// One more match means one more page.
		if _, more := j.next(); more {
			last := page.Logs[len(page.Logs)-1]
			page.Next = &store.LogCursor{At: last.At, ID: last.ID}
		}
		return nil
	})
	return page, err
}

// join walks the intersection of posting lists in listing order.
type join struct {
	prefixes [][]byte
	cursors  []*bbolt.Cursor
	target   []byte // the next suffix to consider
	stop     []byte // suffixes above it are out of range (older than From); nil: none
	done     bool
}

func newJoin(idx *bbolt.Bucket, gardenID uint64, terms []string, f store.LogFilter) *join {
	j := &join{target: make([]byte, 16)}
	for _, t := range terms {
		j.prefixes = append(j.prefixes, termPrefix(gardenID, t))
		j.cursors = append(j.cursors, idx.Cursor())
	}
	if !f.Until.IsZero() {
		// at < Until: the newest allowed is Until less a microsecond, with any id.
		binary.BigEndian.PutUint64(j.target, ^atKey(f.Until.Add(-time.Microsecond)))
	}
	if f.After != nil {
		after := logSuffix(f.After.At, f.After.ID)
		if increment(after) && bytes.Compare(after, j.target) > 0 {
			j.target = after
		}
	}
	if !f.From.IsZero() {
		j.stop = logSuffix(f.From, 0) // at ≥ From, any id
	}
	return j
}

// increment adds one to a big-endian number; false when it overflows.
func increment(b []byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return true
		}
	}
	return false
}

// next returns the id of the next log in every list, in order.
func (j *join) next() (uint64, bool) {
	if j.done {
		return 0, false
	}
	agree := 0
	for i := 0; agree < len(j.cursors); i = (i + 1) % len(j.cursors) {
		seek := append(bytes.Clone(j.prefixes[i]), j.target...)
		k, _ := j.cursors[i].Seek(seek)
		if k == nil || !bytes.HasPrefix(k, j.prefixes[i]) || len(k) != len(j.prefixes[i])+16 {
			j.done = true
			return 0, false
		}
		s := k[len(j.prefixes[i]):]
		if bytes.Equal(s, j.target) {
			agree++
			continue
		}
		j.target = bytes.Clone(s)
		agree = 1
		if j.stop != nil && bytes.Compare(j.target, j.stop) > 0 {
			break
		}
	}
	if j.stop != nil && bytes.Compare(j.target, j.stop) > 0 {
		j.done = true
		return 0, false
	}
	id := suffixID(j.target)
	if !increment(j.target) {
		j.done = true
	}
	return id, true
}

// PendingTasks returns the pending tasks assigned to the user (store.LogStore).
func (s *Store) PendingTasks(assigneeID uint64, visible map[uint64]bool) ([]store.Log, error) {
	out := []store.Log{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		users := map[uint64]string{}
		c := tx.Bucket(bucketTasks).Cursor()
		prefix := itob(assigneeID)
		text := 0
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out) < store.MaxTasks && text < store.MaxLogPageText; k, v = c.Next() {
			if visible != nil && !visible[btoi(v)] {
				continue
			}
			a, err := getLog(tx, btoi(k[16:]))
			if err != nil {
				return err
			}
			l, err := logView(tx, a, users)
			if err != nil {
				return err
			}
			out = append(out, l)
			text += l.TextSize()
		}
		return nil
	})
	return out, err
}
