package sitesync

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gardend/gardend/server/sitesync/synctest"
	"github.com/gardend/gardend/store"
)

// TestPictureNamedAgain: while the link is down a garden gets its picture and then
// new corners, each change published on its own, so both messages name the same
// picture; the office applies one change per batch. The second must find the
// picture at the hub although the first was applied (the office used to delete it
// there at once, and then waited for it forever).
func TestPictureNamedAgain(t *testing.T) {
	t.Parallel()
	hub, ost := officeWithHub(t)
	proxy := synctest.NewProxy(t, strings.TrimPrefix(hub.LeafURL(), "nats-leaf://"))
	startOfficeWith(t, hub, OfficeConfig{Store: ost, Node: "office-1", Batch: 1})
	b := newBoxStore(t)
	b.join(t, ost, "farm-a", "nats-leaf://"+proxy.Addr())
	converge(t, 30*time.Second, b, ost)
	proxy.Cut()
	published := b.box.Published()
	owner := must[store.User](t)(b.st.CreateUser(store.NewUser{Username: "owner", FirstName: "O", LastName: "W", PasswordHash: "h"}))
	c := must[store.Company](t)(b.st.CreateCompany(owner.ID, "c"))
	g := must[store.Garden](t)(b.st.CreateGarden(c.ID, "g"))
	path, _, err := b.images.PutImage(context.Background(), g.ID, bytes.NewReader(randomBytes(200<<10)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.SetGardenImage(g.ID, path, corners); err != nil {
		t.Fatal(err)
	}
	pending, err := b.st.ChangesAfter(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the box to publish the picture", func() bool {
		return b.box.Published() >= published+uint64(len(pending))
	})
	moved := slices.Clone(corners)
	for i := range moved {
		moved[i].Latitude += 0.001
	}
	if _, err := b.st.SetGardenImage(g.ID, path, moved); err != nil {
		t.Fatal(err)
	}
	proxy.Restore()
	converge(t, 30*time.Second, b, ost)
	gotPath, got, err := ost.GardenImage(b.gid(g.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, moved) {
		t.Errorf("corners at the office: %+v, want %+v", got, moved)
	}
	rc, n, err := b.images.OpenImage(context.Background(), path)
	want := readAll(t, rc, n, err)
	rc, n, err = ost.OpenImage(context.Background(), gotPath)
	if have := readAll(t, rc, n, err); !bytes.Equal(have, want) {
		t.Errorf("the office's picture differs from the box's (%d bytes, want %d)", len(have), len(want))
	}

	// Once the box has let the picture go, the hub keeps none of its chunks.
	nc, err := nats.Connect(hub.ClientURL(), officeCredsOption(t, ost))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var held uint64
	waitFor(t, 20*time.Second, "the hub to purge the picture's chunks", func() bool {
		s, err := js.Stream(context.Background(), "OBJ_"+PictureBucket(b.site.Number))
		if err != nil {
			return false
		}
		info, err := s.Info(context.Background())
		if err != nil {
			return false
		}
		held = info.State.Bytes
		return held < 16<<10
	})
	t.Logf("the hub's picture bucket holds %d bytes", held)
}
