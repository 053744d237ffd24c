package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// testUpdateUserIfUnchanged: an update checked against the account as read applies
// only while its username and credentials are still those, so a concurrent rename or
// password change cannot break the password ≠ username rule.
func testUpdateUserIfUnchanged(t *testing.T, h Harness) {
	st, _ := open(t, h)
	read := mustUser(t, st, "ann")
	if _, err := st.UpdateUser(read.ID, store.UserUpdate{PasswordHash: ptr("other-hash")}); err != nil {
		t.Fatal(err)
	}
	_, err := st.UpdateUser(read.ID, store.UserUpdate{Username: ptr("annie"), IfUnchanged: &read})
	wantErr(t, err, store.ErrConflict)
	current, _ := st.UserByUsername("ann")
	renamed, err := st.UpdateUser(read.ID, store.UserUpdate{Username: ptr("annie"), IfUnchanged: &current})
	if err != nil || renamed.Username != "annie" {
		t.Fatalf("rename checked against the current account: %+v, %v", renamed, err)
	}
	_, err = st.UpdateUser(read.ID, store.UserUpdate{PasswordHash: ptr("third"), IfUnchanged: &current})
	wantErr(t, err, store.ErrConflict)
}

// testReplacePasswordHash: the swap happens only over the hash it expects (a change
// of password made meanwhile wins) and keeps the user's tokens.
func testReplacePasswordHash(t *testing.T, h Harness) {
	st, clock := open(t, h)
	u := mustUser(t, st, "imported")
	digest := sha256.Sum256([]byte("token"))
	if err := st.CreateToken(u.ID, digest, clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.ReplacePasswordHash(u.ID, u.PasswordHash, "$argon2id$new"); !ok || err != nil {
		t.Fatalf("replace: %v, %v", ok, err)
	}
	if ok, err := st.ReplacePasswordHash(u.ID, u.PasswordHash, "$argon2id$stale"); ok || err != nil {
		t.Fatalf("replace over a changed hash: %v, %v", ok, err)
	}
	got, _ := st.UserByID(u.ID)
	if got.PasswordHash != "$argon2id$new" || got.CredentialsGen != u.CredentialsGen {
		t.Errorf("after the rehash: %+v", got)
	}
	if _, err := st.Authenticate(digest); err != nil {
		t.Errorf("the token went with the rehash: %v", err)
	}
	_, err := st.ReplacePasswordHash(999, "a", "b")
	wantErr(t, err, store.ErrNotFound)
}

// testWidgetsUTF8: a document with invalid UTF-8 is refused, naming the byte,
// though it would pass json.Valid.
func testWidgetsUTF8(t *testing.T, h Harness) {
	st, _ := open(t, h)
	u := mustUser(t, st, "ann")
	for _, bad := range []string{"\"\xff\"", "{\"a\":\"\xc3\"}", "\"\xed\xa0\x80\""} {
		err := st.SaveWidgets(u.ID, []byte(bad))
		wantErr(t, err, store.ErrInvalid)
		if !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("SaveWidgets(%q): %v, want it to say UTF-8", bad, err)
		}
	}
	if doc, _ := st.Widgets(u.ID); doc != nil {
		t.Errorf("a refused document was stored: %q", doc)
	}
}

// testDataID: the identity is made once, by whichever node asks first, and every
// node reads the same.
func testDataID(t *testing.T, h Harness) {
	nodes, _ := openNodes(t, h, 2)
	ids := make([]string, 8)
	created := make([]bool, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			var err error
			ids[i], created[i], err = nodes[i%2].DataID()
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	n := 0
	for i, id := range ids {
		if len(id) != 32 || id != ids[0] {
			t.Fatalf("ids %q", ids)
		}
		if created[i] {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d calls made the id, want 1", n)
	}
	if id, made, err := nodes[1].DataID(); err != nil || made || id != ids[0] {
		t.Errorf("again: %q %v %v", id, made, err)
	}
	if err := nodes[0].Ping(); err != nil {
		t.Errorf("ping: %v", err)
	}
}

// testCreateBedUpTo: the limit is per garden and checked with the insert; a garden
// over a lowered limit keeps its beds and gets no more.
func testCreateBedUpTo(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice := mustUser(t, st, "alice")
	c := mustCompany(t, st, alice, "c")
	g := mustGarden(t, st, c, "g")
	other := mustGarden(t, st, c, "other")
	for i := range 3 {
		if _, err := st.CreateBedUpTo(g.ID, bedUUID(i), "", 3); err != nil {
			t.Fatal(err)
		}
	}
	_, err := st.CreateBedUpTo(g.ID, bedUUID(3), "", 3)
	wantErr(t, err, store.ErrTooManyBeds)
	wantErr(t, err, store.ErrInvalid)
	if !strings.Contains(err.Error(), "has 3, at most 3") {
		t.Errorf("message %q", err)
	}
	// A uuid the garden has is the conflict it is without a limit.
	_, err = st.CreateBedUpTo(g.ID, bedUUID(0), "", 3)
	wantErr(t, err, store.ErrConflict)
	if _, err := st.CreateBedUpTo(other.ID, bedUUID(0), "", 3); err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateBedUpTo(g.ID, bedUUID(3), "", 2)
	wantErr(t, err, store.ErrTooManyBeds)
	if beds, _ := st.BedsOfGarden(g.ID); len(beds) != 3 {
		t.Fatalf("%d beds", len(beds))
	}
	// Without a limit (the operator's `gardend beds add`).
	if _, err := st.CreateBed(g.ID, bedUUID(3), ""); err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateBedUpTo(999, bedUUID(0), "", 3)
	wantErr(t, err, store.ErrNotFound)
}

// testBedLimitAcrossNodes: nodes adding beds to one garden at once never take it
// past the limit together.
func testBedLimitAcrossNodes(t *testing.T, h Harness) {
	nodes, _ := openNodes(t, h, 3)
	alice := mustUser(t, nodes[0], "alice")
	g := mustGarden(t, nodes[0], mustCompany(t, nodes[0], alice, "c"), "g")
	const limit, tries = 4, 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	made := 0
	for i := range tries {
		wg.Go(func() {
			_, err := nodes[i%len(nodes)].CreateBedUpTo(g.ID, bedUUID(i), "", limit)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				made++
			case !errors.Is(err, store.ErrTooManyBeds):
				t.Errorf("bed %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	beds, err := nodes[1].BedsOfGarden(g.ID)
	if err != nil || made != limit || len(beds) != limit {
		t.Fatalf("%d made, %d stored (%v); want %d", made, len(beds), err, limit)
	}
}

func bedUUID(i int) string { return fmt.Sprintf("3fa85f64-5717-4562-b3fc-%012d", i) }

// testCloudQueueCounts: pending counts the jobs due, backing off and claimed; failed
// those out of attempts.
func testCloudQueueCounts(t *testing.T, h Harness) {
	st, _ := open(t, h)
	alice := mustUser(t, st, "alice")
	g := mustGarden(t, st, mustCompany(t, st, alice, "c"), "g")
	if _, err := st.CreateBed(g.ID, uuidA, ""); err != nil {
		t.Fatal(err)
	}
	if p, f, err := st.CloudQueueCounts(); err != nil || p != 0 || f != 0 {
		t.Fatalf("empty: %d %d %v", p, f, err)
	}
	if _, err := st.EnqueueClouds([]store.CloudJob{job(uuidA, "c1", inputsMap), job(uuidA, "c2", inputsMap), job(uuidA, "c3", inputsMap)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	for range policy.MaxAttempts {
		if _, _, err := st.RecordCloudFailure(uuidA, "c1", inputsMap, "gone", policy); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := st.ClaimCloudJobs("node-1", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if p, f, err := st.CloudQueueCounts(); err != nil || p != 2 || f != 1 {
		t.Fatalf("counts %d pending, %d failed, %v; want 2, 1", p, f, err)
	}
}

// testArchiveFormat1: an archive written before the import map was part of it (format
// 1) still loads; so do accounts named before usernames were normalised, which keep
// their names and are found by their plain form.
func testArchiveFormat1(t *testing.T, h Harness) {
	st, _ := open(t, h)
	archive := `{"kind":"gardend-archive","record":{"format":1,"exported":"2026-01-02T03:04:05Z"}}
{"kind":"user","record":{"id":3,"username":"ｂｏｂ","first_name":"B","last_name":"B","email":"","date_joined":"2025-01-01T00:00:00Z","last_login":null,"password_hash":"h"}}
{"kind":"company","record":{"id":2,"name":"c"}}
{"kind":"company_permission","record":{"id":5,"on":2,"user_id":3,"level":"a"}}
`
	if err := st.Import(context.Background(), strings.NewReader(archive), store.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := st.UserByUsername("bob")
	if err != nil || u.ID != 3 || u.Username != "ｂｏｂ" {
		t.Fatalf("legacy account by its plain name: %+v, %v", u, err)
	}
	if _, err := st.CreateUser(store.NewUser{Username: "bob", FirstName: "F", LastName: "L", PasswordHash: "h"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a new bob beside the legacy ｂｏｂ: %v", err)
	}
	if perms, _ := st.CompanyPermissions(2); len(perms) != 1 || perms[0].ID != 5 {
		t.Errorf("permissions %+v", perms)
	}
}

// testImportImagesNeedsContent: a backend that keeps no image content (not Shared)
// refuses to be handed some rather than drop it; one that keeps it fails the whole
// import when an image cannot be read, writing nothing.
func testImportImagesNeedsContent(t *testing.T, h Harness) {
	st, _ := open(t, h)
	archive := `{"kind":"gardend-archive","record":{"format":2,"exported":"2026-01-02T03:04:05Z"}}
{"kind":"user","record":{"id":3,"username":"bob","first_name":"B","last_name":"B","email":"","date_joined":"2025-01-01T00:00:00Z","last_login":null,"password_hash":"h"}}
{"kind":"company","record":{"id":2,"name":"c"}}
{"kind":"garden","record":{"id":4,"name":"g","image_path":"images/0123456789abcdef0123456789abcdef.png","company":2,"coordinates":[{"name":"top_left","latitude":1,"longitude":1},{"name":"top_right","latitude":1,"longitude":2},{"name":"bottom_left","latitude":0,"longitude":1}]}}
{"kind":"company_permission","record":{"id":5,"on":2,"user_id":3,"level":"a"}}
`
	err := st.Import(context.Background(), strings.NewReader(archive), store.ImportOptions{
		Images: func(string) (io.ReadCloser, error) { return nil, errors.New("disk error") }})
	if _, shared := st.(store.Shared); !shared {
		wantErr(t, err, store.ErrInvalid)
	} else if err == nil {
		t.Error("an import whose image content cannot be read succeeded")
	}
	if users, _ := st.ListUsers(); len(users) != 0 {
		t.Errorf("a refused import wrote %d users", len(users))
	}
}
