package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/storetest"
)

// TestArchiveAcrossBackends moves an install from bbolt to PostgreSQL and back:
// bolt → archive → PostgreSQL → archive → bolt gives the same records at every step.
func TestArchiveAcrossBackends(t *testing.T) {
	clock := storetest.NewClock()
	openBolt := func() *bolt.Store {
		st, err := bolt.Open(filepath.Join(t.TempDir(), bolt.FileName), bolt.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := st.CheckIndexes(); err != nil {
				t.Errorf("bbolt relations: %v", err)
			}
			st.Close()
		})
		return st
	}
	export := func(st store.Archiver) []byte {
		var buf bytes.Buffer
		if err := st.Export(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	ctx := context.Background()

	box := openBolt()
	storetest.Fill(t, box, clock)
	fromBox := export(box)

	cluster := openNodes(t, clock.Now, 1)[0]
	defer cluster.Close()
	if err := cluster.Import(ctx, bytes.NewReader(fromBox), store.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.CheckIndexes(); err != nil {
		t.Fatal(err)
	}
	fromCluster := export(cluster)
	if !bytes.Equal(storetest.Records(fromBox), storetest.Records(fromCluster)) {
		t.Fatalf("bbolt wrote\n%s\nPostgreSQL gave back\n%s", fromBox, fromCluster)
	}

	back := openBolt()
	if err := back.Import(ctx, bytes.NewReader(fromCluster), store.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if again := export(back); !bytes.Equal(storetest.Records(fromBox), storetest.Records(again)) {
		t.Fatalf("bbolt wrote\n%s\nand after the round trip\n%s", fromBox, again)
	}
	// The moved install answers as the original did.
	for _, st := range []store.Backend{box, cluster, back} {
		u, err := st.Authenticate(store.TokenDigest(tokenOf("ann")))
		if err != nil || u.Username != "ann" || u.LastLogin == nil {
			t.Errorf("%T: ann's token: %+v, %v", st, u, err)
		}
		gs, _ := st.GardensVisibleTo(u.ID)
		if len(gs) != 2 {
			t.Errorf("%T: ann sees %d gardens", st, len(gs))
		}
	}
}

// tokenOf is the token storetest.Fill gives the user (64 hex digits).
func tokenOf(name string) string { return fmt.Sprintf("%064x", name) }
