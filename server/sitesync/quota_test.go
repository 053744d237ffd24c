package sitesync

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestSiteQuotaAndRemoval: a site that sends the hub pictures no change names (a
// hostile or broken box) fills only its own share of the hub (--sync-site-max-bytes)
// while another site syncs on; once the site is removed, the hub keeps nothing it
// sent.
func TestSiteQuotaAndRemoval(t *testing.T) {
	t.Parallel()
	hub, ost := officeWithHub(t)
	const quota = 1 << 20
	startOfficeWith(t, hub, OfficeConfig{Store: ost, Node: "office-1", SiteMaxBytes: quota})
	ctx := context.Background()

	// farm-a's credentials in a box of the attacker's making: 3 MiB of pictures
	// nothing will ever name.
	siteA, credsA, err := AddSite(ost, "farm-a")
	if err != nil {
		t.Fatal(err)
	}
	_, _, js := impostor(t, hub, credsA)
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: PictureBucket(siteA.Number), Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"junk/1", "junk/2", "junk/3"} {
		if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(randomBytes(1<<20))); err != nil {
			t.Fatal(err)
		}
	}

	// farm-b syncs as usual meanwhile.
	b := newBoxStore(t)
	writes(t, b, 0, 4)
	b.join(t, ost, "farm-b", hub.LeafURL())
	converge(t, 30*time.Second, b, ost)

	onc, err := nats.Connect(hub.ClientURL(), officeCredsOption(t, ost))
	if err != nil {
		t.Fatal(err)
	}
	defer onc.Close()
	hjs, err := jetstream.New(onc)
	if err != nil {
		t.Fatal(err)
	}
	held := func(name string) (uint64, error) {
		s, err := hjs.Stream(ctx, name)
		if err != nil {
			return 0, err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return 0, err
		}
		return info.State.Bytes, nil
	}
	waitFor(t, 20*time.Second, "the hub sourcing farm-a's pictures", func() bool {
		n, err := held("OBJ_" + PictureBucket(siteA.Number))
		return err == nil && n > 0
	})
	// JetStream holds each to its share: the site's streams at the hub are set up
	// with it, refusing what comes past it.
	for _, name := range []string{SiteStream(siteA.Number), "OBJ_" + PictureBucket(siteA.Number)} {
		s, err := hjs.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.MaxBytes != quota || info.Config.Discard != jetstream.DiscardNew || info.State.Bytes > quota {
			t.Errorf("%s at the hub: max %d bytes (discard %v), holds %d; want at most %d, new ones refused",
				name, info.Config.MaxBytes, info.Config.Discard, info.State.Bytes, quota)
		}
	}

	if _, err := ost.RemoveSite("farm-a"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "farm-a's copies at the hub deleted", func() bool {
		_, errS := held(SiteStream(siteA.Number))
		_, errO := held("OBJ_" + PictureBucket(siteA.Number))
		return errors.Is(errS, jetstream.ErrStreamNotFound) && errors.Is(errO, jetstream.ErrStreamNotFound)
	})
	// farm-b goes on.
	writes(t, b, 1, 2)
	converge(t, 30*time.Second, b, ost)
}
