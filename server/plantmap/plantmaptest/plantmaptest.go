// Package plantmaptest finds the original PlantMap project's sample data (its Django
// fixtures and garden image, kept outside this repository) and builds dumps from it
// for tests: the fixtures as they are, and a fuller `manage.py dumpdata` with the
// models and fields a real server's export holds besides.
package plantmaptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
)

// EnvDir names the sample data directory explicitly.
const EnvDir = "GARDEND_PLANTMAP_DIR"

// FixtureFiles are the PlantMap fixtures, in loaddata order.
var FixtureFiles = []string{"user.json", "company.json", "garden.json", "coordinate.json", "bed.json", "permissions.json", "widget.json"}

// ImageFile is the sample garden image the fixtures' gardens refer to (a JPEG, named
// .png).
const ImageFile = "goeoentueuegs_ibbenbueren.png"

// FixturePassword is every fixture user's password.
const FixturePassword = "1234"

// Dir returns the sample data directory: $GARDEND_PLANTMAP_DIR, or shared/plantmap in
// the nearest directory above the working directory that has one. Without it the
// test is skipped, except in CI (GARDEND_CI set), where it fails.
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(dir, "shared", "plantmap")
		if st, err := os.Stat(filepath.Join(candidate, "fixtures")); err == nil && st.IsDir() {
			return candidate
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	msg := fmt.Sprintf("PlantMap sample data not found: set %s or put shared/plantmap above %s", EnvDir, wd)
	if os.Getenv("GARDEND_CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

// MediaDir is the directory of the sample image.
func MediaDir(tb testing.TB) string { return filepath.Join(Dir(tb), "images") }

// Entry is one dumpdata entry.
type Entry struct {
	Model  string         `json:"model"`
	PK     any            `json:"pk"`
	Fields map[string]any `json:"fields"`
}

// Fixtures returns the fixture files' entries, in loaddata order.
func Fixtures(tb testing.TB) []Entry {
	tb.Helper()
	dir := filepath.Join(Dir(tb), "fixtures")
	var all []Entry
	for _, name := range FixtureFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			tb.Fatal(err)
		}
		var entries []Entry
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&entries); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		all = append(all, entries...)
	}
	return all
}

// Encode writes entries as a dump file's bytes.
func Encode(tb testing.TB, entries []Entry) []byte {
	tb.Helper()
	data, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// FullDump is the fixtures as a real server's `dumpdata` exports them: every
// auth.user field Django has (is_superuser true for Admin, dates, groups), the
// models the import leaves out (content types, permissions, sessions, the admin log,
// knox tokens) around them, and extra fields on PlantMap's own models.
func FullDump(tb testing.TB) []Entry {
	tb.Helper()
	var out []Entry
	out = append(out,
		Entry{Model: "contenttypes.contenttype", PK: 1, Fields: map[string]any{"app_label": "admin", "model": "logentry"}},
		Entry{Model: "contenttypes.contenttype", PK: 4, Fields: map[string]any{"app_label": "auth", "model": "user"}},
		Entry{Model: "auth.permission", PK: 1, Fields: map[string]any{"name": "Can add log entry", "content_type": 1, "codename": "add_logentry"}},
		Entry{Model: "auth.group", PK: 1, Fields: map[string]any{"name": "gardeners", "permissions": []any{1}}},
	)
	for i, e := range Fixtures(tb) {
		switch e.Model {
		case "auth.user":
			e.Fields["last_login"] = nil
			e.Fields["is_superuser"] = e.Fields["username"] == "Admin"
			e.Fields["is_staff"] = e.Fields["username"] == "Admin"
			e.Fields["is_active"] = true
			e.Fields["date_joined"] = fmt.Sprintf("2022-11-%02dT09:%02d:00.123Z", 10+i, i)
			e.Fields["groups"] = []any{}
			e.Fields["user_permissions"] = []any{}
			if e.Fields["username"] == "Gardener-1" {
				e.Fields["last_login"] = "2023-02-01T12:30:45.678Z"
				e.Fields["groups"] = []any{1}
			}
		case "restapi.bed":
			e.Fields["created"] = "2022-11-20T10:00:00Z"
		}
		out = append(out, e)
	}
	out = append(out,
		Entry{Model: "sessions.session", PK: "k2sd9v0mq3x7c0n6ujb1h8w4p5e2t9ra", Fields: map[string]any{"session_data": "e30:1pQ…", "expire_date": "2023-03-01T00:00:00Z"}},
		Entry{Model: "admin.logentry", PK: 1, Fields: map[string]any{"action_time": "2023-01-01T00:00:00Z", "user": 1, "content_type": 4, "object_id": "2", "object_repr": "Gardener-1", "action_flag": 2, "change_message": "[]"}},
		Entry{Model: "knox.authtoken", PK: "8b1a9953c4611296a827abf8c47804d7e6c49c6b0d7ad1bd1d1b8a2d3a0b5f47e5f1d7c0d5b3a39a0c2d1e0f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b", Fields: map[string]any{"token_key": "8b1a9953", "user": 1, "created": "2023-01-01T00:00:00Z", "expiry": "2023-01-01T10:00:00Z"}},
		Entry{Model: "knox.authtoken", PK: "c2", Fields: map[string]any{"token_key": "c2", "user": 2, "created": "2023-01-02T00:00:00Z", "expiry": nil}},
	)
	return out
}

// SmallMedia writes a media directory holding a small JPEG under the fixtures' image
// name (the real one takes seconds to convert, minutes with the race detector) and
// returns the directory and the image.
func SmallMedia(tb testing.TB) (dir string, img image.Image) {
	tb.Helper()
	m := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for y := 0; y < 30; y++ {
		for x := 0; x < 40; x++ {
			m.Set(x, y, color.RGBA{R: uint8(x * 6), G: uint8(120 + y*4), B: uint8((x + y) * 3), A: 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 90}); err != nil {
		tb.Fatal(err)
	}
	dir = tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ImageFile), buf.Bytes(), 0o600); err != nil {
		tb.Fatal(err)
	}
	decoded, err := jpeg.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		tb.Fatal(err)
	}
	return dir, decoded
}
