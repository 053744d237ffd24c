package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/gardend/gardend/store"
)

// testLogClientKeys: CreateLogOnce answers the log an author made with a key instead
// of recording it twice, per author and garden, until the log is deleted; at once
// from several nodes it makes one log.
func testLogClientKeys(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	once := func(st store.Backend, gardenID uint64, author store.User, key string, p store.LogPatch, authorize store.LogAuthorizer) (store.Log, bool) {
		t.Helper()
		l, created, err := st.CreateLogOnce(gardenID, author.ID, key, p, authorize)
		if err != nil {
			t.Fatalf("CreateLogOnce %s: %v", key, err)
		}
		return l, created
	}
	count := func(gardenID uint64) int {
		t.Helper()
		page, err := lb.st.ListLogs(gardenID, store.LogFilter{Limit: store.MaxLogPage})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Logs)
	}

	p := patch(store.LogObservation, "Aphids")
	p.Bed, p.Plant = ptr(lb.bed.ID), ptr("m-1")
	first, created := once(lb.st, lb.garden.ID, lb.reader, "3f2c0e4a-9b1d-4e5f-8a7b-6c5d4e3f2a1b", p, nil)
	if !created || first.ClientKey != "3f2c0e4a-9b1d-4e5f-8a7b-6c5d4e3f2a1b" || first.Title != "Aphids" {
		t.Fatalf("first: created %v, %+v", created, first)
	}
	// A retry, even with another body and an authorizer that would refuse: the same
	// log, nothing written.
	refuse := func(*store.Log, store.Log) error { return errors.New("refused") }
	again, created := once(lb.st, lb.garden.ID, lb.reader, first.ClientKey, patch(store.LogActivity, "Watered"), refuse)
	if created || logJSON(again) != logJSON(first) {
		t.Fatalf("retry: created %v\n%+v\nwant %+v", created, again, first)
	}
	if n := count(lb.garden.ID); n != 1 {
		t.Fatalf("%d logs after a retry", n)
	}
	// The key is the author's, in the garden: another author or garden makes its own.
	other, created := once(lb.st, lb.garden.ID, lb.owner, first.ClientKey, p, nil)
	if !created || other.ID == first.ID {
		t.Fatalf("another author's key: created %v, id %d", created, other.ID)
	}
	elsewhere, created := once(lb.st, lb.elsewhere.ID, lb.reader, first.ClientKey, patch(store.LogObservation, "x"), nil)
	if !created || elsewhere.ID == first.ID {
		t.Fatalf("another garden's key: created %v, id %d", created, elsewhere.ID)
	}
	// The key stays through an update; the retry answers the log as it is now.
	if _, err := lb.st.UpdateLog(lb.garden.ID, first.ID, store.LogPatch{Title: ptr("Aphids, many")}, nil); err != nil {
		t.Fatal(err)
	}
	if again, created = once(lb.st, lb.garden.ID, lb.reader, first.ClientKey, p, nil); created || again.ID != first.ID || again.Title != "Aphids, many" {
		t.Fatalf("after an update: created %v, %+v", created, again)
	}
	// A plain log has no key; CreateLog ignores keys.
	if plain := lb.create(t, lb.reader, p); plain.ClientKey != "" {
		t.Fatalf("plain log with key %q", plain.ClientKey)
	}
	// An invalid patch is refused before the key is looked at; an invalid key too.
	_, _, err := lb.st.CreateLogOnce(lb.garden.ID, lb.reader.ID, first.ClientKey, patch(store.LogObservation, " "), nil)
	wantField(t, err, "title", "must not be blank")
	for _, key := range []string{"", "a b", "a\x00b", "ä", strings.Repeat("k", store.MaxClientKey+1)} {
		_, _, err := lb.st.CreateLogOnce(lb.garden.ID, lb.reader.ID, key, p, nil)
		wantField(t, err, "Idempotency-Key", "1 to 64 characters")
	}
	if _, created := once(lb.st, lb.garden.ID, lb.reader, strings.Repeat("k", store.MaxClientKey), p, nil); !created {
		t.Fatal("a key of the longest length was not taken")
	}
	// Once the log is deleted, its key makes a new one.
	if _, err := lb.st.DeleteLog(lb.garden.ID, first.ID, nil); err != nil {
		t.Fatal(err)
	}
	if renewed, created := once(lb.st, lb.garden.ID, lb.reader, first.ClientKey, p, nil); !created || renewed.ID == first.ID {
		t.Fatalf("after the delete: created %v, id %d", created, renewed.ID)
	}

}

// testLogClientKeysTogether: many calls with one key at once, spread over the nodes,
// make one log, and every call answers it.
func testLogClientKeysTogether(t *testing.T, h Harness) {
	nodes, _ := openNodes(t, h, 2)
	author := mustUser(t, nodes[0], "author")
	g := mustGarden(t, nodes[0], mustCompany(t, nodes[0], author, "Farm"), "North")
	const calls = 6
	ids := make([]uint64, calls)
	made := make([]bool, calls)
	errs := make([]error, calls)
	var fns []func()
	for i := range calls {
		st := nodes[i%len(nodes)]
		fns = append(fns, func() {
			var l store.Log
			l, made[i], errs[i] = st.CreateLogOnce(g.ID, author.ID, "together", patch(store.LogObservation, "Frost"), nil)
			ids[i] = l.ID
		})
	}
	together(fns...)
	createdN := 0
	for i := range calls {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("calls answered logs %v", ids)
		}
		if made[i] {
			createdN++
		}
	}
	page, err := nodes[1].ListLogs(g.ID, store.LogFilter{})
	if err != nil || createdN != 1 || len(page.Logs) != 1 {
		t.Fatalf("%d calls say they created; %d logs (%v)", createdN, len(page.Logs), err)
	}
}

// testPhotoClientKeys: AddPhotoOnce answers the photo a log has under a key instead
// of adding it twice, per log, until the photo is deleted; at once from several
// nodes it adds one.
func testPhotoClientKeys(t *testing.T, h Harness) {
	nodes, _ := openNodes(t, h, 2)
	st := nodes[0]
	author := mustUser(t, st, "author")
	g := mustGarden(t, st, mustCompany(t, st, author, "Farm"), "North")
	l, err := st.CreateLog(g.ID, author.ID, patch(store.LogObservation, "Blight"), nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateLog(g.ID, author.ID, patch(store.LogObservation, "Frost"), nil)
	if err != nil {
		t.Fatal(err)
	}
	first, added, err := st.AddPhotoOnce(g.ID, l.ID, "k-1", photo(1), 0, nil)
	if err != nil || !added || first.ClientKey != "k-1" {
		t.Fatalf("first: %+v, added %v, %v", first, added, err)
	}
	// A retry with the content of its own try: the first photo, nothing added,
	// neither the budget nor the authorizer asked.
	refuse := func(store.Log) error { return errors.New("refused") }
	again, added, err := st.AddPhotoOnce(g.ID, l.ID, "k-1", photo(2), 1, refuse)
	if err != nil || added || again != first {
		t.Fatalf("retry: %+v, added %v, %v; want %+v", again, added, err, first)
	}
	got, err := st.Log(g.ID, l.ID)
	if err != nil || len(got.Photos) != 1 {
		t.Fatalf("log after a retry: %v, %v", got.Photos, err)
	}
	if n, err := st.PhotoBytes(); err != nil || n != first.Bytes() {
		t.Fatalf("photo bytes %d, %v; want %d", n, err, first.Bytes())
	}
	// Another user's photo with the same key is refused: a retry answers the
	// caller's own photo, never another's (nor drops the caller's picture).
	someoneElse := photo(7)
	someoneElse.Uploader = first.Uploader + 1
	_, _, err = st.AddPhotoOnce(g.ID, l.ID, "k-1", someoneElse, 0, nil)
	wantField(t, err, "Idempotency-Key", "another user")
	// Another log's same key, and a plain photo, are photos of their own.
	if ph, added, err := st.AddPhotoOnce(g.ID, other.ID, "k-1", photo(3), 0, nil); err != nil || !added || ph.ID == first.ID {
		t.Fatalf("another log's key: %+v, %v, %v", ph, added, err)
	}
	p4 := photo(4)
	p4.ClientKey = "k-1"
	if ph, err := st.AddPhoto(g.ID, l.ID, p4, 0, nil); err != nil || ph.ClientKey != "" || ph.ID == first.ID {
		t.Fatalf("plain photo: %+v, %v", ph, err)
	}
	for _, key := range []string{"", "a b", strings.Repeat("k", store.MaxClientKey+1)} {
		_, _, err := st.AddPhotoOnce(g.ID, l.ID, key, photo(5), 0, nil)
		wantField(t, err, "Idempotency-Key", "1 to 64 characters")
	}
	// A deleted photo frees its key.
	if _, err := st.DeletePhoto(g.ID, l.ID, first.ID, nil); err != nil {
		t.Fatal(err)
	}
	if ph, added, err := st.AddPhotoOnce(g.ID, l.ID, "k-1", photo(6), 0, nil); err != nil || !added || ph.ID == first.ID {
		t.Fatalf("after the delete: %+v, %v, %v", ph, added, err)
	}

	// At once, spread over the nodes: one photo.
	const calls = 6
	ids := make([]uint64, calls)
	made := make([]bool, calls)
	errs := make([]error, calls)
	var fns []func()
	for i := range calls {
		node := nodes[i%len(nodes)]
		fns = append(fns, func() {
			var ph store.Photo
			ph, made[i], errs[i] = node.AddPhotoOnce(g.ID, other.ID, "together", photo(10+i), 0, nil)
			ids[i] = ph.ID
		})
	}
	together(fns...)
	addedN := 0
	for i := range calls {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("call %d: photo %d, %v; the first answered %d", i, ids[i], errs[i], ids[0])
		}
		if made[i] {
			addedN++
		}
	}
	if got, err := nodes[1].Log(g.ID, other.ID); err != nil || addedN != 1 || len(got.Photos) != 2 {
		t.Fatalf("%d calls added; the log has photos %v (%v)", addedN, got.Photos, err)
	}
}
