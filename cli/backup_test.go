package cli_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gardend/gardend/cli"
	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/server/backup/backuptest"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// standIns are files the image and point-cloud features will write; the backup must
// carry them byte for byte without knowing what they are.
var standIns = map[string][]byte{
	"images/3f2a9c0d1e4b5a6978877665544332211.png": append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0xAB, 0x01}, 5000)...),
	"pointclouds/7/geom-12.ply":                    append([]byte("ply\nformat binary_little_endian 1.0\nend_header\n"), bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, 3000)...),
	"pointclouds/7/geom-13.ply":                    []byte("ply\nformat ascii 1.0\nend_header\n"),
}

func dropStandIns(t *testing.T, dir string) {
	t.Helper()
	for rel, body := range standIns {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func checkStandIns(t *testing.T, dir string) {
	t.Helper()
	for rel, body := range standIns {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("%s: restored %d bytes (%v), want %d identical", rel, len(got), err, len(body))
		}
	}
}

// call sends a request with an optional token and JSON or raw body.
func call(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

type gardener struct {
	name, password, token string
	widgets               string
}

// populate registers users through HTTP, saves their widgets and logs them in twice.
func populate(t *testing.T, base string) []gardener {
	t.Helper()
	var gs []gardener
	for i, name := range []string{"ann", "bob", "chidi"} {
		g := gardener{name: name, password: "pw-" + name + "-garden",
			// Spacing and key order are kept byte for byte.
			widgets: fmt.Sprintf(`{ "layout":[%d, 2,3], "z":"ü", "a" : null }`, i)}
		code, body := call(t, "POST", base+"/register", "", fmt.Sprintf(`{"username":%q,"password":%q,"first_name":"F","last_name":"L"}`, g.name, g.password))
		if code != http.StatusCreated {
			t.Fatalf("register %s: %d %s", name, code, body)
		}
		var tok struct{ Token string }
		json.Unmarshal(body, &tok)
		g.token = tok.Token
		if code, body := call(t, "POST", base+"/user/widgets", g.token, g.widgets); code != http.StatusCreated {
			t.Fatalf("widgets %s: %d %s", name, code, body)
		}
		if code, _ := login(t, base, g.name, g.password); code != http.StatusOK {
			t.Fatalf("login %s: %d", name, code)
		}
		gs = append(gs, g)
	}
	return gs
}

// checkGardeners logs every user in on the restored server and compares widgets; the
// tokens issued before the backup still work too.
func checkGardeners(t *testing.T, base string, gs []gardener) {
	t.Helper()
	for _, g := range gs {
		code, token := login(t, base, g.name, g.password)
		if code != http.StatusOK {
			t.Fatalf("%s cannot log in after restore: %d", g.name, code)
		}
		for _, tok := range []string{token, g.token} {
			code, body := call(t, "GET", base+"/user/widgets", tok, "")
			if code != http.StatusOK || string(body) != g.widgets {
				t.Fatalf("%s widgets after restore: %d %q, want %q", g.name, code, body, g.widgets)
			}
		}
	}
}

func TestBackupWhileServingThenRestoreAndServe(t *testing.T) {
	dir := t.TempDir()
	base := serve(t, dir)
	gs := populate(t, base)
	dropStandIns(t, dir)

	// The server holds the database lock, so this can only succeed through the socket.
	archive := filepath.Join(t.TempDir(), "gardend.tar")
	out, err := run(t, "", "backup", "--data", dir, archive)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "wrote "+archive) || !strings.Contains(out, "pointclouds/ 2 files") || !strings.Contains(out, "images/ 1 file") {
		t.Fatalf("backup output %q", out)
	}
	backupOut := out
	if info, err := os.Stat(archive); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("archive %v, %v: want mode 0600", info, err)
	}
	if _, err := os.Stat(archive + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("FILE.tmp left behind: %v", err)
	}

	target := filepath.Join(t.TempDir(), "restored")
	out, err = run(t, "", "restore", archive, "--data", target)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "restored "+archive) || !strings.Contains(out, fmt.Sprintf("schema %d", bolt.SchemaVersion())) {
		t.Fatalf("restore output %q", out)
	}
	// Both name the size of the data (the archive's own size is larger: tar headers).
	dataSize := regexp.MustCompile(`[0-9.]+ [KMGT]?i?B of data`)
	if w, r := dataSize.FindString(backupOut), dataSize.FindString(out); w == "" || w != r {
		t.Fatalf("backup says %q, restore %q:\n%s\n%s", w, r, backupOut, out)
	}
	checkStandIns(t, target)
	checkGardeners(t, serve(t, target), gs)
}

func TestBackupWithoutServerThenRestore(t *testing.T) {
	dir := t.TempDir()
	base, stop := serveUntil(t, dir)
	gs := populate(t, base)
	stop()
	dropStandIns(t, dir)

	archive := filepath.Join(t.TempDir(), "b.tar")
	// A stale FILE.tmp from a power cut, with a loose mode, is replaced.
	if err := os.WriteFile(archive+".tmp", []byte("half a backup"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "", "backup", "--data", dir, archive); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(archive); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("archive %v, %v", info, err)
	}
	target := t.TempDir() // exists and is empty: no --force needed
	if _, err := run(t, "", "restore", archive, "--data", target); err != nil {
		t.Fatal(err)
	}
	checkStandIns(t, target)
	checkGardeners(t, serve(t, target), gs)
}

// serveUntil is serve with an early stop, for tests that need the server gone.
func serveUntil(t *testing.T, dir string) (base string, stop func()) {
	t.Helper()
	srv, err := newServerIn(server.Config{
		DataDir: dir, Addr: "127.0.0.1:0", AdminSocket: true,
		Argon2: store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	<-srv.Ready()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			srv.Close()
		})
	}
	t.Cleanup(stop)
	return "http://" + srv.Addr(), stop
}

func TestBackupToStdoutAndRestoreFromStdin(t *testing.T) {
	dir := t.TempDir()
	newDatabase(t, dir)
	dropStandIns(t, dir)
	cmd := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetArgs([]string{"backup", "--data", dir, "-"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "wrote standard output") {
		t.Fatalf("summary on stderr: %q", errOut.String())
	}
	m, err := backup.Verify(bytes.NewReader(out.Bytes()), backup.ReadOptions{})
	if err != nil || len(m.Entries) != 1+len(standIns) {
		t.Fatalf("stdout archive: %v, %+v", err, m)
	}
	target := filepath.Join(t.TempDir(), "d")
	if _, err := run(t, out.String(), "restore", "-", "--data", target); err != nil {
		t.Fatal(err)
	}
	checkStandIns(t, target)
}

func TestFailedBackupLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	newDatabase(t, dir)
	archive := filepath.Join(t.TempDir(), "b.tar")
	if err := os.WriteFile(archive, []byte("yesterday's backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the backup stops at its first write
	cmd := cli.NewRootCommand()
	cmd.SetArgs([]string{"backup", "--data", dir, archive})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "nothing was written there") {
		t.Fatalf("got %v", err)
	}
	if b, _ := os.ReadFile(archive); string(b) != "yesterday's backup" {
		t.Fatalf("FILE changed: %q", b)
	}
	if _, err := os.Stat(archive + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("FILE.tmp left behind: %v", err)
	}
}

// newDatabase creates dir's database with one user, without paying for a password hash.
func newDatabase(t *testing.T, dir string) {
	t.Helper()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.CreateUser(store.NewUser{Username: "root", FirstName: "R", LastName: "T", PasswordHash: "not-a-hash"})
	if err != nil {
		t.Fatal(err)
	}
	// A bed of project 7 keeps the stand-in clouds under pointclouds/7 referenced, so
	// serve's start-up sweep (which deletes clouds no bed refers to) leaves them.
	c, err := st.CreateCompany(u.ID, "Farm")
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.CreateGarden(c.ID, "Garden")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateBed(g.ID, "7", "Bed"); err != nil {
		t.Fatal(err)
	}
}

// realArchive backs up a small data directory in-process and returns the archive and
// the database snapshot in it.
func realArchive(t *testing.T) (archive []byte, db []byte) {
	t.Helper()
	dir := t.TempDir()
	newDatabase(t, dir)
	dropStandIns(t, dir)
	path := filepath.Join(t.TempDir(), "b.tar")
	if _, err := run(t, "", "backup", "--data", dir, path); err != nil {
		t.Fatal(err)
	}
	archive, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("no database in the archive: %v", err)
		}
		if hdr.Name == backup.DataPrefix+bolt.FileName {
			db, _ := io.ReadAll(tr)
			return archive, db
		}
	}
}

// withDB crafts a valid archive (true checksums) around a database file.
func withDB(db []byte, edit func(*backup.Manifest)) []byte {
	return backuptest.Archive([]backuptest.Entry{
		{Path: bolt.FileName, Body: db},
		{Path: "images/a.png", Body: []byte("png")},
	}, edit)
}

// corruptPages breaks the type flags of every leaf page after the meta pages:
// the file still opens (its meta pages are intact) but fails bbolt's check.
func corruptPages(t *testing.T, db []byte) []byte {
	t.Helper()
	db = bytes.Clone(db)
	// bbolt's meta page: 16-byte page header, then magic, version, page size.
	pageSize := int(binary.LittleEndian.Uint32(db[24:]))
	n := 0
	for off := 2 * pageSize; off+pageSize <= len(db); off += pageSize {
		if binary.LittleEndian.Uint16(db[off+8:]) == 0x02 { // leafPageFlag
			binary.LittleEndian.PutUint16(db[off+8:], 0x40)
			n++
		}
	}
	if n == 0 {
		t.Fatal("no leaf page to corrupt")
	}
	return db
}

// newerSchema rewrites the stored schema version in place: in a bbolt leaf a value
// follows its key directly, and pages carry no checksum. Freed pages may hold stale
// copies of the key, so every copy is rewritten.
func newerSchema(t *testing.T, db []byte) []byte {
	t.Helper()
	db = bytes.Clone(db)
	key := []byte("schema_version")
	n := 0
	for i := bytes.Index(db, key); i >= 0; {
		v := db[i+len(key):][:8]
		if binary.BigEndian.Uint64(v) == bolt.SchemaVersion() {
			binary.BigEndian.PutUint64(v, bolt.SchemaVersion()+1)
			n++
		}
		j := bytes.Index(db[i+1:], key)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if n == 0 {
		t.Fatal("no schema_version value found")
	}
	return db
}

func TestRestoreRefusals(t *testing.T) {
	valid, db := realArchive(t)
	flipped := bytes.Clone(valid)
	flipped[bytes.Index(flipped, standIns["pointclouds/7/geom-13.ply"])+5] ^= 1
	traversal := withDB(db, func(m *backup.Manifest) { m.Entries[1].Path = "../../etc/cron.d/evil" })
	var symlink bytes.Buffer
	{
		tw := tar.NewWriter(&symlink)
		m, _ := json.Marshal(backup.Manifest{Format: backup.FormatName, FormatVersion: 1, Database: "gardend.db",
			Entries: []backup.Entry{{Path: "gardend.db", Size: 0, SHA256: strings.Repeat("0", 64)}}})
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: backup.ManifestName, Size: int64(len(m)), Mode: 0o600})
		tw.Write(m)
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "data/gardend.db", Linkname: "/etc/passwd"})
		tw.Close()
	}

	cases := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"corrupted byte in a file", flipped, "does not match its checksum: pointclouds/7/geom-13.ply"},
		{"truncated archive", valid[:len(valid)*2/3], "truncated"},
		{"path traversal", traversal, `unsafe entry in backup: path "../../etc/cron.d/evil"`},
		{"symlink entry", symlink.Bytes(), "not a regular file"},
		{"database fails its check", withDB(corruptPages(t, db), nil), "the database in the backup is damaged: consistency check"},
		{"database from a newer schema", withDB(newerSchema(t, db), nil), fmt.Sprintf("newer gardend: its database has schema version %d", bolt.SchemaVersion()+1)},
		{"manifest from a newer schema", withDB(db, func(m *backup.Manifest) { m.SchemaVersion = 99 }), "schema version 99"},
		{"not an archive", []byte("just some text, not a tar at all"), "not a valid gardend backup"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := t.TempDir()
			if err := os.WriteFile(filepath.Join(target, "keep.txt"), []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "b.tar")
			os.WriteFile(file, tc.archive, 0o600)
			_, err := run(t, "", "restore", file, "--data", target, "--force")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want it to mention %q", err, tc.want)
			}
			entries, _ := os.ReadDir(target)
			if len(entries) != 1 || entries[0].Name() != "keep.txt" {
				t.Fatalf("target changed: %v", entries)
			}
		})
	}
}

func TestRestoreRefusesNonEmptyAndLockedDirectories(t *testing.T) {
	valid, _ := realArchive(t)
	file := filepath.Join(t.TempDir(), "b.tar")
	os.WriteFile(file, valid, 0o600)

	target := t.TempDir()
	dropStandIns(t, target)
	_, err := run(t, "", "restore", file, "--data", target)
	if err == nil || !strings.Contains(err.Error(), target+" holds images, pointclouds") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("non-empty: %v", err)
	}

	checkStandIns(t, target)
	serve(t, target) // holds target's database
	// Its start-up sweep removed the stand-in clouds, which no bed refers to: put
	// them back while it runs.
	dropStandIns(t, target)
	_, err = run(t, "", "restore", file, "--data", target, "--force")
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "stop gardend serve") {
		t.Fatalf("locked: %v", err)
	}
	checkStandIns(t, target)

	if _, err := run(t, "", "restore", file); err == nil || !strings.Contains(err.Error(), "--data") {
		t.Fatalf("without --data: %v", err)
	}
}
