package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// testLogPageText: a page of long logs ends once it holds MaxLogPageText of text,
// with the cursor of the next, and the pages together hold every log once, in
// order; the pending tasks stop there too. A page of 200 logs of 20,000 characters
// (16 MB of text) took 120 MiB of heap to answer, and /tasks up to 1,000 of them.
func testLogPageText(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	base := lb.clock.Now()
	// 20,000 characters of four bytes, none a word (nothing to index).
	notes := strings.Repeat("\U0001F955", store.MaxLogNotes)
	perLog := len("long") + len(notes)
	const n = 30
	want := make([]uint64, n)
	for i := range n {
		p := patch(store.LogTask, "long")
		p.Notes, p.At, p.Assignee = &notes, ptr(base.Add(time.Duration(i)*time.Hour)), ptr("reader")
		l, err := lb.st.CreateLog(lb.garden.ID, lb.owner.ID, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[n-1-i] = l.ID // newest first
	}
	most := store.MaxLogPageText/perLog + 1 // the log that crosses the bound ends the page
	var got []uint64
	f := store.LogFilter{Limit: store.MaxLogPage}
	for pages := 0; ; pages++ {
		page, err := lb.st.ListLogs(lb.garden.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Logs) == 0 || len(page.Logs) > most {
			t.Fatalf("page %d holds %d logs of %d bytes of text; want 1 to %d", pages, len(page.Logs), perLog, most)
		}
		for _, l := range page.Logs {
			got = append(got, l.ID)
		}
		if page.Next == nil {
			break
		}
		f.After = page.Next
	}
	if len(got) != n || !equalIDs(got, want) {
		t.Fatalf("pages listed %v, want %v", got, want)
	}
	tasks, err := lb.st.PendingTasks(lb.reader.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) == 0 || len(tasks) > most {
		t.Fatalf("%d pending tasks of %d bytes of text; want 1 to %d", len(tasks), perLog, most)
	}
}

func equalIDs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// testLogPhotosBounded: a log holds at most MaxLogPhotos photos; the next is
// refused naming the photo, a replay of a key it holds still answers, and a
// deleted photo makes room. Any author could add photos to their log without end,
// and every page listing it carried all their ids.
func testLogPhotosBounded(t *testing.T, h Harness) {
	lb := newLogbook(t, h)
	l := lb.create(t, lb.reader, patch(store.LogObservation, "Blight"))
	var first store.Photo
	for i := range store.MaxLogPhotos {
		var (
			ph  store.Photo
			err error
		)
		if i == 0 {
			ph, _, err = lb.st.AddPhotoOnce(lb.garden.ID, l.ID, "k-0", photo(i), 0, nil)
		} else {
			ph, err = lb.st.AddPhoto(lb.garden.ID, l.ID, photo(i), 0, nil)
		}
		if err != nil {
			t.Fatalf("photo %d: %v", i, err)
		}
		if i == 0 {
			first = ph
		}
	}
	_, err := lb.st.AddPhoto(lb.garden.ID, l.ID, photo(store.MaxLogPhotos), 0, nil)
	wantField(t, err, "photo", "the most a log may hold")
	_, _, err = lb.st.AddPhotoOnce(lb.garden.ID, l.ID, "k-new", photo(store.MaxLogPhotos), 0, nil)
	wantField(t, err, "photo", "the most a log may hold")
	if again, added, err := lb.st.AddPhotoOnce(lb.garden.ID, l.ID, "k-0", photo(store.MaxLogPhotos), 0, nil); err != nil || added || again.ID != first.ID {
		t.Fatalf("a replay at the bound: %+v, %v, %v", again, added, err)
	}
	if _, err := lb.st.DeletePhoto(lb.garden.ID, l.ID, first.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.st.AddPhoto(lb.garden.ID, l.ID, photo(store.MaxLogPhotos), 0, nil); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	got, err := lb.st.Log(lb.garden.ID, l.ID)
	if err != nil || len(got.Photos) != store.MaxLogPhotos {
		t.Fatalf("the log holds %d photos (%v)", len(got.Photos), err)
	}
}
