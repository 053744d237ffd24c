// Package backuptest crafts backup archives for tests: valid ones, and ones broken in
// exactly one chosen way.
package backuptest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/gardend/gardend/server/backup"
)

// Entry is one data file of a crafted archive.
type Entry struct {
	Path string
	Body []byte
	// Header, when set, edits the tar header before it is written.
	Header func(*tar.Header)
}

// Created is the creation time of crafted manifests.
var Created = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

// Archive returns an archive whose manifest lists entries (the first is the
// database) with their true sizes and checksums; edit, when set, changes the
// manifest before it is written.
func Archive(entries []Entry, edit func(*backup.Manifest)) []byte {
	m := backup.Manifest{
		Format: backup.FormatName, FormatVersion: backup.FormatVersion, GardendVersion: "test",
		Created: Created, SchemaVersion: 1, Entries: []backup.Entry{},
	}
	if len(entries) > 0 {
		m.Database = entries[0].Path
	}
	for _, e := range entries {
		sum := sha256.Sum256(e.Body)
		m.Entries = append(m.Entries, backup.Entry{Path: e.Path, Size: int64(len(e.Body)), SHA256: hex.EncodeToString(sum[:])})
	}
	if edit != nil {
		edit(&m)
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	put := func(hdr *tar.Header, body []byte) {
		if err := tw.WriteHeader(hdr); err != nil {
			panic(err)
		}
		if _, err := tw.Write(body); err != nil {
			panic(err)
		}
	}
	put(&tar.Header{Typeflag: tar.TypeReg, Name: backup.ManifestName, Size: int64(len(manifest)), Mode: 0o600, ModTime: Created}, manifest)
	for _, e := range entries {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: backup.DataPrefix + e.Path, Size: int64(len(e.Body)), Mode: 0o600, ModTime: Created}
		if e.Header != nil {
			e.Header(hdr)
		}
		body := e.Body
		if hdr.Typeflag != tar.TypeReg {
			body = nil
		}
		put(hdr, body)
	}
	if err := tw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
