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
