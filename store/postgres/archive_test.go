package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
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

// TestImportLoadsImageContent: an import with Images stores each garden's image
// content in the same transaction, streams it back byte for byte, leaves out content
// that is missing, and a failure to read one stores nothing at all.
func TestImportLoadsImageContent(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock()
	open := func() *postgres.Store {
		st, err := postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := st.CheckIndexes(); err != nil {
				t.Error(err)
			}
			st.Close()
		})
		return st
	}
	src := open()
	u, _ := src.CreateUser(store.NewUser{Username: "ann", FirstName: "A", LastName: "L", PasswordHash: "x"})
	c, _ := src.CreateCompany(u.ID, "c")
	corners := store.Coordinates{{Name: "top_left", Latitude: 1, Longitude: 1}, {Name: "top_right", Latitude: 1, Longitude: 2}, {Name: "bottom_left", Longitude: 1}}
	content := map[string][]byte{}
	for i, size := range []int{10, postgres.ImageChunkSize*2 + 7, 3} {
		g, _ := src.CreateGarden(c.ID, fmt.Sprintf("g%d", i))
		data := bytes.Repeat([]byte{byte(i + 1)}, size)
		path, _, err := src.PutImage(ctx, g.ID, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.SetGardenImage(g.ID, path, corners); err != nil {
			t.Fatal(err)
		}
		content[path] = data
	}
	var archive bytes.Buffer
	if err := src.Export(ctx, &archive); err != nil {
		t.Fatal(err)
	}
	var missing string
	for p := range content {
		missing = p
		break
	}
	images := func(fail string) func(string) (io.ReadCloser, error) {
		return func(path string) (io.ReadCloser, error) {
			switch path {
			case missing:
				return nil, fmt.Errorf("gone: %w", fs.ErrNotExist)
			case fail:
				return nil, errors.New("disk error")
			}
			return io.NopCloser(bytes.NewReader(content[path])), nil
		}
	}
	dst := open()
	var other string
	for p := range content {
		if p != missing {
			other = p
		}
	}
	if err := dst.Import(ctx, bytes.NewReader(archive.Bytes()), store.ImportOptions{Images: images(other)}); err == nil {
		t.Fatal("an import whose image cannot be read succeeded")
	}
	if us, _ := dst.ListUsers(); len(us) != 0 {
		t.Fatalf("a failed import left %d users", len(us))
	}
	if err := dst.Import(ctx, bytes.NewReader(archive.Bytes()), store.ImportOptions{Images: images("")}); err != nil {
		t.Fatal(err)
	}
	for path, data := range content {
		rc, size, err := dst.OpenImage(ctx, path)
		if path == missing {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("missing content %s: %v", path, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if size != int64(len(data)) || !bytes.Equal(got, data) {
			t.Errorf("%s: %d bytes (size %d), want %d", path, len(got), size, len(data))
		}
	}
}
