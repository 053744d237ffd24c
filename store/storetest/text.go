package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// badText are values no store keeps: U+0000 (PostgreSQL cannot), other control
// characters, invisible format characters (bidi controls, zero-width spaces), invalid
// UTF-8.
var badText = map[string]string{
	"bidi override":    "invoice\u202Egpj.exe",
	"bidi isolate":     "\u2067admin\u2069",
	"zero-width space": "ann\u200B",
	"byte order mark":  "\uFEFFFarm",
	"NUL":              "a\x00b",
	"escape":           "red\x1b[31m",
	"line break":       "two\nlines",
	"DEL":              "x\x7f",
	"C1 control":       "next\u0085line",
	"invalid UTF8":     "bad\xffbyte",
}

// wantInvalidField fails unless err is ErrInvalid naming field.
func wantInvalidField(t *testing.T, what string, err error, field string) {
	t.Helper()
	var v *store.ValidationError
	switch {
	case !errors.Is(err, store.ErrInvalid):
		t.Errorf("%s: %v, want ErrInvalid", what, err)
	case errors.As(err, &v) && v.Fields[field] == "":
		t.Errorf("%s: %v names %v, want %s", what, err, v.Fields, field)
	}
}

// testControlCharacters: every text field a request can set refuses control
// characters and invalid UTF-8 with ErrInvalid naming the field, on every backend
// alike; text that comes from a server (a failure's reason) is stored repaired.
func testControlCharacters(t *testing.T, h Harness) {
	st, _ := open(t, h)
	ann := mustUser(t, st, "ann")
	c := mustCompany(t, st, ann, "Farm")
	g := mustGarden(t, st, c, "Field")
	if _, err := st.CreateBed(g.ID, uuidA, "Bed"); err != nil {
		t.Fatal(err)
	}
	for name, bad := range badText {
		_, err := st.CreateUser(store.NewUser{Username: "bob", FirstName: bad, LastName: "L", PasswordHash: "h"})
		wantInvalidField(t, name+" in a new user's first name", err, "first_name")
		_, err = st.UpdateUser(ann.ID, store.UserUpdate{LastName: &bad})
		wantInvalidField(t, name+" in a last name", err, "last_name")
		email := "ann" + bad + "@example.org"
		_, err = st.UpdateUser(ann.ID, store.UserUpdate{Email: &email})
		wantInvalidField(t, name+" in an email", err, "email")
		_, err = st.CreateCompany(ann.ID, bad)
		wantInvalidField(t, name+" in a company name", err, "name")
		_, err = st.CreateGarden(c.ID, bad)
		wantInvalidField(t, name+" in a garden name", err, "name")
		_, err = st.CreateBed(g.ID, uuidB, bad)
		wantInvalidField(t, name+" in a bed name", err, "name")
		_, err = st.SetGardenImage(g.ID, "images/x.png", append(append(store.Coordinates(nil), corners...), store.Coordinate{Name: bad}))
		wantInvalidField(t, name+" in a coordinate name", err, "coordinates[3].name")
		_, err = st.EnqueueClouds([]store.CloudJob{job(uuidA, "c1", store.CloudInputs{Frame: bad})}, time.Hour)
		wantInvalidField(t, name+" in a frame", err, "frame")
		_, _, _, err = st.ClaimCloudJobs(bad, 1, time.Minute)
		wantInvalidField(t, name+" in a node name", err, "node")
	}
	if u, err := st.UserByID(ann.ID); err != nil || u.LastName != "L" || u.Email != "" {
		t.Errorf("ann after the refused updates: %+v, %v", u, err)
	}

	// A reason quoting a server's words is kept, repaired.
	if _, err := st.EnqueueClouds([]store.CloudJob{job(uuidA, "c1", inputsMap)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.RecordCloudFailure(uuidA, "c1", inputsMap, "server said \x00\x1b", policy); err != nil {
		t.Fatalf("a failure whose reason holds control characters: %v", err)
	}
	jobs, err := st.CloudJobs()
	if err != nil || len(jobs) != 1 || jobs[0].LastError != "server said \uFFFD\uFFFD" {
		t.Errorf("queued download after the failure: %+v, %v", jobs, err)
	}
	if err := st.CompleteCloudJob(store.PlantPosition{Project: uuidA, Cloud: "c1", CloudInputs: inputsMap, Reason: "no\x00point"}); err != nil {
		t.Fatalf("a position whose reason holds control characters: %v", err)
	}
	state, err := st.CloudState(uuidA)
	if err != nil || state.Positions["c1"].Reason != "no\uFFFDpoint" {
		t.Errorf("position: %+v, %v", state.Positions["c1"], err)
	}
}

// testArchiveRepairsText: an archive whose names hold control characters (written by
// an older gardend on bbolt) loads whole, with U+FFFD in their place, and each
// repaired field is reported; coordinate names stay unique.
func testArchiveRepairsText(t *testing.T, h Harness) {
	src, clock := open(t, h)
	Fill(t, src, clock)
	var edited bytes.Buffer
	for line := range strings.SplitAfterSeq(string(export(t, src)), "\n") {
		if line == "" {
			continue
		}
		var l struct {
			Kind   string         `json:"kind"`
			Record map[string]any `json:"record"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		r := l.Record
		switch {
		case l.Kind == store.KindUser && r["username"] == "ann":
			r["first_name"], r["email"] = "A\x00nn", "ann\x00@example.org"
		case l.Kind == store.KindCompany && r["name"] == "Green Roofs":
			r["name"] = "Green\nRoofs"
		case l.Kind == store.KindGarden && r["name"] == "Roof 1":
			r["name"] = "Roof\x001"
			cs := r["coordinates"].([]any)
			cs[3].(map[string]any)["name"] = "top_left\x00" // becomes top_left\uFFFD
			cs = append(cs, map[string]any{"name": "top_left\uFFFD", "latitude": 0.0, "longitude": 0.0})
			r["coordinates"] = cs
		case l.Kind == store.KindBed && r["name"] == "north":
			r["name"] = "no\x1brth"
		case l.Kind == store.KindCloudJob && r["last_error"] != nil:
			r["last_error"] = "time\x00out"
		case (l.Kind == store.KindAlert || l.Kind == store.KindHistorySeries) && r["bed_name"] == "north":
			r["bed_name"] = "no\x1brth"
		case l.Kind == store.KindHistorySeries && r["name"] == "north":
			r["name"] = "no\x1brth"
		}
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		edited.Write(append(data, '\n'))
	}
	dst, _ := openNodes(t, h, 1)
	var repairs []store.Repair
	err := dst[0].Import(context.Background(), &edited, store.ImportOptions{Repaired: func(r store.Repair) { repairs = append(repairs, r) }})
	if err != nil {
		t.Fatalf("an archive with control characters in names: %v", err)
	}
	var report []string
	for _, r := range repairs {
		if r.Line < 2 || strings.ContainsAny(r.String(), "\x00\x1b\n") {
			t.Errorf("repair %+v: no archive line, or control characters in its text", r)
		}
		report = append(report, r.Record+" "+r.Field)
	}
	got := strings.Join(report, "\n")
	for _, want := range []string{"user 1 first_name", "user 1 email", "company 1 name", "garden 1 name", "garden 1 coordinates[3].name", "bed 1 name", "last_error", "bed_name", "history of bed 1 name"} {
		if !strings.Contains(got, want) {
			t.Errorf("no repair of %q reported in:\n%s", want, got)
		}
	}
	st := dst[0]
	if u, err := st.UserByUsername("ann"); err != nil || u.FirstName != "A\uFFFDnn" || u.Email != "ann\uFFFD@example.org" {
		t.Errorf("ann: %+v, %v", u, err)
	}
	if c, err := st.Company(1); err != nil || c.Name != "Green\uFFFDRoofs" {
		t.Errorf("company: %+v, %v", c, err)
	}
	if _, cs, err := st.GardenImage(1); err != nil || len(cs) != 5 || cs[3].Name != "top_left\uFFFD (2)" || cs[4].Name != "top_left\uFFFD" {
		t.Errorf("coordinates: %+v, %v", cs, err)
	}
	for _, open := range []bool{true, false} {
		for _, a := range mustAlerts(t, st, 1, open) {
			if a.BedName != "no\uFFFDrth" {
				t.Errorf("alert %d names its bed %q", a.ID, a.BedName)
			}
		}
	}
	if err := st.CheckIndexes(); err != nil {
		t.Error(err)
	}
	if again := export(t, st); bytes.ContainsAny(again, "\x00\x1b") {
		t.Errorf("the repaired store exports control characters")
	}
}

// testImportRepairsText: an import whose names hold control characters plans with a
// warning for each (not an error) and stores them repaired.
func testImportRepairsText(t *testing.T, h Harness) {
	st, _ := open(t, h)
	in := sampleImport()
	in.Users[0].FirstName = "A\x00"
	in.Users[1].PwdHash = "pbkdf2_sha256$1$s\x00$h"
	in.Companies[0].Name = "co\n4"
	in.Gardens[0].Name = "g\x004"
	in.Beds[0].Name = "b\x1bed"
	p := plan(t, st, in)
	got := problems(p)
	if p.Errors() {
		t.Fatalf("control characters in names block the import:\n%s", got)
	}
	for _, want := range []string{"warning users 4: first_name", "warning users 5: password_hash", "warning companies 4: name", "warning gardens 4: name", "warning beds " + strconv.FormatUint(in.Beds[0].Key, 10) + ": name"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.ContainsAny(got, "\x00\x1b") {
		t.Errorf("the problems quote control characters raw:\n%s", got)
	}
	if _, err := st.ApplyImport(in, p, map[uint64]string{4: "images/0123456789abcdef0123456789abcdef.png"}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if in.Companies[0].Name != "co\n4" {
		t.Errorf("the import changed its caller's records")
	}
	if u, err := st.UserByUsername("Admin"); err != nil || u.FirstName != "A\uFFFD" {
		t.Errorf("imported user: %+v, %v", u, err)
	}
	if u, err := st.UserByUsername("gardener"); err != nil || u.PasswordHash != "!" {
		t.Errorf("a user whose hash held a NUL: %+v, %v (want the unusable hash)", u, err)
	}
	cs, err := st.Companies()
	if err != nil || !hasCompany(cs, "co\uFFFD4") {
		t.Errorf("companies: %+v, %v", cs, err)
	}
}

func hasCompany(cs []store.Company, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}
