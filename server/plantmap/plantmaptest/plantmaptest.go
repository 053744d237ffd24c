// Package plantmaptest makes PlantMap (the Django service gardend replaces) exports
// for tests: Generate builds a whole installation shaped like the original project's
// fixtures (users with Django password hashes computed on the spot, companies,
// gardens with a JPEG picture, coordinates, beds, permissions, widgets), so the
// repository tests its import by itself. Original reads the original project's sample
// data too when it is at hand (beside the repository or named by $GARDEND_PLANTMAP_DIR);
// no test needs it.
//
// It is an ordinary package rather than files under testdata/: the go command leaves
// testdata/ out of every package pattern, so Go code there could be neither imported
// by the tests of server/plantmap and cli nor vetted; a package whose name ends in
// "test" is imported by tests only and never reaches the binary.
package plantmaptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"testing"
)

// Entry is one dumpdata entry.
type Entry struct {
	Model  string         `json:"model"`
	PK     any            `json:"pk"`
	Fields map[string]any `json:"fields"`
}

// Sample is a PlantMap installation: its dump and its media directory.
type Sample struct {
	// Name says where it came from: "generated" or "original".
	Name string
	// Password is every user's password.
	Password string
	// ImageFile is the name of the picture the gardens' image_path names, a JPEG
	// named .png as the original's was; MediaDir holds it.
	ImageFile     string
	MediaDir      string
	Width, Height int
	// Image is the picture as its JPEG decodes.
	Image image.Image
	dump  []byte
}

// Entries returns the dump's entries in loaddata order (users, companies, gardens,
// coordinates, beds, permissions, widgets), numbers as json.Number, as a dump file
// decodes. Each call returns a fresh copy the caller may change.
func (s *Sample) Entries(tb testing.TB) []Entry {
	tb.Helper()
	return Decode(tb, s.dump)
}

// Models returns the entries of one model, in dump order.
func (s *Sample) Models(tb testing.TB, model string) []Entry {
	tb.Helper()
	var out []Entry
	for _, e := range s.Entries(tb) {
		if e.Model == model {
			out = append(out, e)
		}
	}
	return out
}

// Dump is the dump file's bytes.
func (s *Sample) Dump() []byte { return bytes.Clone(s.dump) }

// Encode writes entries as a dump file's bytes.
func Encode(tb testing.TB, entries []Entry) []byte {
	tb.Helper()
	data, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// Decode reads a dump file's bytes, numbers as json.Number.
func Decode(tb testing.TB, data []byte) []Entry {
	tb.Helper()
	var entries []Entry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&entries); err != nil {
		tb.Fatalf("decode the dump: %v", err)
	}
	return entries
}

// FullDump is entries as a real server's `dumpdata` exports them: every auth.user
// field Django has (is_superuser true for user pk 1, dates, groups; user pk 2 logged
// in once and is in a group), the models the import leaves out (content types,
// permissions, sessions, the admin log, knox tokens) around them, and extra fields on
// PlantMap's own models. The users' dates joined are 2022-11-10T09:00:00.123Z for the
// first, a day and a minute later for each next one.
func FullDump(tb testing.TB, entries []Entry) []Entry {
	tb.Helper()
	var out []Entry
	out = append(out,
		Entry{Model: "contenttypes.contenttype", PK: 1, Fields: map[string]any{"app_label": "admin", "model": "logentry"}},
		Entry{Model: "contenttypes.contenttype", PK: 4, Fields: map[string]any{"app_label": "auth", "model": "user"}},
		Entry{Model: "auth.permission", PK: 1, Fields: map[string]any{"name": "Can add log entry", "content_type": 1, "codename": "add_logentry"}},
		Entry{Model: "auth.group", PK: 1, Fields: map[string]any{"name": "gardeners", "permissions": []any{1}}},
	)
	users := 0
	for _, e := range entries {
		switch e.Model {
		case "auth.user":
			pk := fmt.Sprint(e.PK)
			e.Fields["last_login"] = nil
			e.Fields["is_superuser"] = pk == "1"
			e.Fields["is_staff"] = pk == "1"
			e.Fields["is_active"] = true
			e.Fields["date_joined"] = fmt.Sprintf("2022-11-%02dT09:%02d:00.123Z", 10+users, users)
			e.Fields["groups"] = []any{}
			e.Fields["user_permissions"] = []any{}
			if pk == "2" {
				e.Fields["last_login"] = "2023-02-01T12:30:45.678Z"
				e.Fields["groups"] = []any{1}
			}
			users++
		case "restapi.bed":
			e.Fields["created"] = "2022-11-20T10:00:00Z"
		}
		out = append(out, e)
	}
	out = append(out,
		Entry{Model: "sessions.session", PK: "k2sd9v0mq3x7c0n6ujb1h8w4p5e2t9ra", Fields: map[string]any{"session_data": "e30:1pQ…", "expire_date": "2023-03-01T00:00:00Z"}},
		Entry{Model: "admin.logentry", PK: 1, Fields: map[string]any{"action_time": "2023-01-01T00:00:00Z", "user": 1, "content_type": 4, "object_id": "2", "object_repr": "user 2", "action_flag": 2, "change_message": "[]"}},
		Entry{Model: "knox.authtoken", PK: "8b1a9953c4611296a827abf8c47804d7e6c49c6b0d7ad1bd1d1b8a2d3a0b5f47e5f1d7c0d5b3a39a0c2d1e0f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b", Fields: map[string]any{"token_key": "8b1a9953", "user": 1, "created": "2023-01-01T00:00:00Z", "expiry": "2023-01-01T10:00:00Z"}},
		Entry{Model: "knox.authtoken", PK: "c2", Fields: map[string]any{"token_key": "c2", "user": 2, "created": "2023-01-02T00:00:00Z", "expiry": nil}},
	)
	return out
}
