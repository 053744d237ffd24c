package sitesync

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gardend/gardend/store"
)

// TestLowerMaxBytes: a box restarted with a lower --sync-max-bytes than its last
// start's starts (it used to refuse: "insufficient storage resources", its whole
// API down with it), holds its stream and bucket to the new limit, and goes on
// syncing.
func TestLowerMaxBytes(t *testing.T) {
	t.Parallel()
	hub, ost := officeWithHub(t)
	startOffice(t, hub, ost, "office-1")
	b := newBoxStore(t)
	b.maxBytes = 1 << 30
	b.join(t, ost, "farm-a", hub.LeafURL())
	converge(t, 30*time.Second, b, ost)
	b.stop()
	if got := LastMaxBytes(filepath.Join(b.dir, "nats")); got != 1<<30 {
		t.Errorf("recorded limit %d, want %d", got, 1<<30)
	}

	b.maxBytes = 16 << 20
	b.start(t) // fails the test if the box does not start
	owner := must[store.User](t)(b.st.CreateUser(store.NewUser{Username: "after", FirstName: "A", LastName: "F", PasswordHash: "h"}))
	must[store.Company](t)(b.st.CreateCompany(owner.ID, "after the restart"))
	converge(t, 30*time.Second, b, ost)
	for _, name := range []string{OutStream, "OBJ_" + PictureBucket(b.site.Number)} {
		s, err := b.box.js.Stream(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if info, err := s.Info(context.Background()); err != nil || info.Config.MaxBytes != 16<<20 {
			t.Errorf("%s: MaxBytes %v, %v; want %d", name, infoMaxBytes(info), err, 16<<20)
		}
	}
	b.stop()
	if got := LastMaxBytes(filepath.Join(b.dir, "nats")); got != 16<<20 {
		t.Errorf("recorded limit %d, want %d", got, 16<<20)
	}
	b.start(t)
}

func infoMaxBytes(info *jetstream.StreamInfo) int64 {
	if info == nil {
		return -1
	}
	return info.Config.MaxBytes
}
