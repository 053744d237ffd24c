package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gardend/gardend/store"
)

// TestLogIdempotencyKey: a POST of a log repeated with its Idempotency-Key (a phone's
// retry after a lost answer) answers the log the first made, marked as replayed,
// and records nothing more; the key is the caller's own; a bad key is a 400 naming
// the header; on both stores.
func TestLogIdempotencyKey(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		f := newLogbookFarm(t, b)
		ts := f.ts
		post := func(token, key, body string) response {
			t.Helper()
			data := []byte(body)
			if !json.Valid(data) {
				t.Fatalf("body %s", body)
			}
			return ts.send("POST", f.path+"/logs", token, "application/json", data, "Idempotency-Key", key)
		}
		key := "0b7c6f0e-1d2a-4c3b-9e8f-7a6b5c4d3e2f"
		first := post(f.reader, key, `{"type":"harvest","title":"Chard","quantity":{"value":2,"unit":"kg"}}`)
		if first.code != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %v %s", first.code, first.header, first.body)
		}
		var l1 store.Log
		first.decode(t, &l1)
		again := post(f.reader, key, `{"type":"harvest","title":"Chard","quantity":{"value":2,"unit":"kg"}}`)
		var l2 store.Log
		again.decode(t, &l2)
		if again.code != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || l2.ID != l1.ID ||
			again.header.Get("Location") != first.header.Get("Location") {
			t.Fatalf("retry: %d %v %s", again.code, again.header, again.body)
		}
		var page struct{ Logs []store.Log }
		ts.must(http.StatusOK, "GET", f.path+"/logs", f.reader, nil).decode(t, &page)
		if len(page.Logs) != 1 {
			t.Fatalf("%d logs after a retry", len(page.Logs))
		}
		// Another user's same key is theirs.
		other := post(f.creader, key, `{"type":"observation","title":"Chard"}`)
		var l3 store.Log
		other.decode(t, &l3)
		if other.code != http.StatusCreated || other.header.Get("Idempotent-Replayed") != "" || l3.ID == l1.ID {
			t.Fatalf("another user's key: %d %v %s", other.code, other.header, other.body)
		}
		// A refused log is not recorded under the key: a reader's task stays refused.
		res := post(f.reader, "task-key", `{"type":"task","title":"Weed"}`)
		wantProblem(t, res, http.StatusForbidden, "only admins")
		// Bad keys.
		for _, bad := range []string{"", "two words", "schlüssel", string(make([]byte, 65))} {
			fields := wantProblem(t, post(f.reader, bad, `{"type":"observation","title":"x"}`), http.StatusBadRequest, "")
			if fields["Idempotency-Key"] == "" || len(fields) != 1 {
				t.Errorf("key %q: fields %v", bad, fields)
			}
		}
	})
}

// TestPhotoIdempotencyKey: a photo POST repeated with its Idempotency-Key answers the
// photo the first added, and the repeat's content is not kept; on both stores.
func TestPhotoIdempotencyKey(t *testing.T) {
	bothBackends(t, func(t *testing.T, b backend) {
		f := newLogbookFarm(t, b)
		ts := f.ts
		l := f.create(f.reader, map[string]any{"type": "observation", "title": "Blight"})
		photos := f.logPath(l.ID) + "/photos"
		file := phonePhoto(t, 640, 480)
		first := ts.send("POST", photos, f.reader, "image/jpeg", file, "Idempotency-Key", "photo-1")
		var p1, p2 photoAnswer
		first.decode(t, &p1)
		if first.code != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %v %s", first.code, first.header, first.body)
		}
		again := ts.send("POST", photos, f.reader, "image/jpeg", file, "Idempotency-Key", "photo-1")
		again.decode(t, &p2)
		if again.code != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || p2 != p1 {
			t.Fatalf("retry: %d %v %s, want %+v", again.code, again.header, again.body, p1)
		}
		var got store.Log
		ts.must(http.StatusOK, "GET", f.logPath(l.ID), f.reader, nil).decode(t, &got)
		if len(got.Photos) != 1 {
			t.Fatalf("photos after a retry: %v", got.Photos)
		}
		// The retry's own content went: only the first photo and its thumbnail stay.
		paths, err := ts.store().PhotoPaths()
		if err != nil || len(paths) != 2 {
			t.Fatalf("photo content %v, %v", paths, err)
		}
		fields := wantProblem(t, ts.send("POST", photos, f.reader, "image/jpeg", file, "Idempotency-Key", "two words"), http.StatusBadRequest, "")
		if fields["Idempotency-Key"] == "" {
			t.Fatalf("fields %v", fields)
		}
	})
}
