package sitesync

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// TestTopology checks the NATS plumbing the sync loops rely on, against the hub's
// own configuration: a box's stream sourced by the hub across the leaf node, the
// office's stream read by the box, and a box's credentials confined to its subjects.
func TestTopology(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	k := testKeys(t)
	dir := t.TempDir()
	hub := startHub(t, k, filepath.Join(dir, "hub"), nil)
	creds, _, err := k.SiteCreds(3, "farm-a")
	if err != nil {
		t.Fatal(err)
	}
	id, err := ParseSiteCreds(creds)
	if err != nil || id.Number != 3 || id.Name != "farm-a" {
		t.Fatalf("ParseSiteCreds = %+v, %v", id, err)
	}
	credsFile := filepath.Join(dir, "farm-a.creds")
	if err := os.WriteFile(credsFile, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	log := zerolog.Nop()
	if testing.Verbose() {
		log = zerolog.New(zerolog.NewTestWriter(t)).With().Str("nats", "box").Logger()
	}
	box, err := StartBoxServer(BoxServerOptions{Site: id, StoreDir: filepath.Join(dir, "box"), Uplink: hub.LeafURL(), CredsFile: credsFile, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Shutdown()
	waitFor(t, 10*time.Second, "leaf node connected", func() bool { return box.NumLeafNodes() == 1 })

	bnc, err := ConnectInProcess(box, "box", nats.CustomInboxPrefix(InboxPrefix(3)))
	if err != nil {
		t.Fatal(err)
	}
	defer bnc.Close()
	bjs, err := jetstream.New(bnc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bjs.CreateStream(ctx, jetstream.StreamConfig{Name: OutStream, Subjects: []string{OutSubject(3)}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	onc := officeConn(t, k, hub.ClientURL())
	ojs, err := jetstream.New(onc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ojs.CreateStream(ctx, jetstream.StreamConfig{Name: SiteStream(3), Storage: jetstream.FileStorage,
		Sources: []*jetstream.StreamSource{{Name: OutStream, External: &jetstream.ExternalStream{
			APIPrefix: "$JS." + SiteDomain(3) + ".API", DeliverPrefix: DeliverPrefix(3)}}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := bjs.Publish(ctx, OutSubject(3), []byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	s3, err := ojs.Stream(ctx, SiteStream(3))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the hub sourced the box's changes", func() bool {
		info, err := s3.Info(ctx)
		return err == nil && info.State.Msgs == 3
	})

	// The office's stream, read by the box across the leaf node.
	if _, err := ojs.CreateStream(ctx, jetstream.StreamConfig{Name: OfficeStream, Subjects: []string{officeSubject + ".>"},
		Storage: jetstream.FileStorage, MaxMsgsPerSubject: 1}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1", "2"} {
		if _, err := ojs.Publish(ctx, officeSubject+".user.7", []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	hjs, err := jetstream.NewWithDomain(bnc, HubDomain)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := hjs.OrderedConsumer(ctx, OfficeStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("the box reads the office's stream: %v", err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil || string(msg.Data()) != "2" {
		t.Fatalf("office stream at the box: %v, %v", msg, err)
	}

	// Confinement: the box cannot reach the hub's JetStream API beyond that, nor
	// another site's subjects.
	if _, err := bnc.Request("$JS."+HubDomain+".API.STREAM.DELETE."+SiteStream(3), nil, time.Second); err == nil {
		t.Error("the box deleted a hub stream")
	}
	sub, err := onc.SubscribeSync(StatusSubject(4))
	if err != nil {
		t.Fatal(err)
	}
	if err := onc.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the interest crosses to the box
	if err := bnc.Publish(StatusSubject(4), []byte("forged")); err != nil {
		t.Fatal(err)
	}
	if err := bnc.Flush(); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(500 * time.Millisecond); err == nil {
		t.Errorf("site 3 published on site 4's subject: %q", m.Data)
	}
	if _, err := ojs.Stream(ctx, SiteStream(3)); err != nil {
		t.Errorf("the hub's stream of site 3 is gone: %v", err)
	}
}
