//go:build unix

package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gardend/gardend/imagestore"
	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/tiles"
	"github.com/gardend/gardend/store"
)

// verify checks, through the API of the restarted server, that it holds every
// acknowledged write as acknowledged, a write in flight at the kill either way, and
// nothing else; the values found become the acknowledged ones for the next round.
// Then the image directory must hold exactly the files gardens refer to.
func (l *crashLedger) verify(round int, base string) {
	l.t.Helper()
	l.base = base
	l.client = &http.Client{Timeout: 15 * time.Second}
	l.killed.Store(false) // from here on, no answer is a failure
	defer l.client.CloseIdleConnections()
	for _, w := range l.workers {
		w.verifyUsers(round)
	}
	l.verifyCompanies()
	paths := map[string]bool{}
	for _, w := range l.workers {
		for _, c := range w.companies {
			w.verifyGardens(c, paths)
			w.verifyPerms(c, companyPath(c.id), c.perms, true)
			for _, g := range c.gardens {
				w.verifyPerms(c, gardenPath(c.id, g.id), g.perms, false)
				w.verifyImage(c, g)
			}
		}
	}
	if l.dir == "" {
		return // the images are in the database (a cluster): no files to check
	}
	for _, name := range imageFiles(l.t, l.dir) {
		switch rel := server.ImageDirName + "/" + name; {
		case strings.HasPrefix(name, ".tmp-"):
			l.t.Errorf("temporary file %s survived the restart's sweep", rel)
		case !paths[rel]:
			l.t.Errorf("image file %s survived the restart's sweep but no garden refers to it", rel)
		}
	}
	for p := range paths {
		if _, err := os.Stat(filepath.Join(l.dir, filepath.FromSlash(p))); err != nil {
			l.t.Errorf("a garden refers to %s: %v", p, err)
		}
	}
	// Tiles of pictures gone (replaced or deleted before a kill) went with the start's
	// sweep. (Temporary files may be builds the restarted server runs already.)
	entries, err := os.ReadDir(filepath.Join(l.dir, tiles.DirName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		l.t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".tmp-") {
			continue
		}
		picture := server.ImageDirName + "/" + strings.TrimSuffix(name, filepath.Ext(name)) + ".png"
		if !paths[picture] {
			l.t.Errorf("%s/%s survived the restart's sweep but no garden shows %s", tiles.DirName, name, picture)
		}
	}
}

// settle records the value found for m and counts what became of a write in flight.
func (l *crashLedger) settle(m *maybe, v string) {
	switch m.settle(v) {
	case 1:
		l.applied++
	case -1:
		l.notApplied++
	}
}

// get sends a request to the idle restarted server, which must answer.
func (l *crashLedger) get(method, path, token string, body any) (int, []byte) {
	l.t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	code, data, ok := l.send(method, path, token, raw)
	if !ok {
		l.t.FailNow()
	}
	if code >= 500 {
		l.t.Errorf("%s %s: %d %s", method, path, code, data)
	}
	return code, data
}

// getJSON expects 200 and decodes the body into out.
func (l *crashLedger) getJSON(path, token string, out any) bool {
	l.t.Helper()
	code, data := l.get("GET", path, token, nil)
	if code != http.StatusOK {
		l.t.Errorf("GET %s: %d %s", path, code, data)
		return false
	}
	if err := json.Unmarshal(data, out); err != nil {
		l.t.Errorf("GET %s: decode %s: %v", path, data, err)
		return false
	}
	return true
}

// verifyUsers: acknowledged users and their tokens work; this round's users (and one
// older one) log in with their passwords; a registration in flight either happened
// completely or not at all; widgets are byte for byte one that was sent.
func (w *crashWorker) verifyUsers(round int) {
	l := w.l
	login := func(u *crashUser) (string, bool) {
		code, data := l.get("POST", "/login", "", map[string]string{"username": u.name, "password": u.password})
		var res struct{ Token string }
		json.Unmarshal(data, &res)
		return res.Token, code == http.StatusOK && res.Token != ""
	}
	older := -1
	if len(w.users) > 1 {
		older = w.rng.IntN(len(w.users) - 1)
	}
	kept := w.users[:0]
	for i, u := range w.users {
		if u.exists.acked != "1" {
			// Registered, if at all, by a request in flight at the kill.
			token, ok := login(u)
			if !ok {
				l.settle(&u.exists, "")
				continue
			}
			l.settle(&u.exists, "1")
			u.token = token
		} else if u.round == round || i == older {
			if _, ok := login(u); !ok {
				l.t.Errorf("acknowledged user %s cannot log in", u.name)
			}
		}
		var me store.User
		if l.getJSON("/user", u.token, &me) && me.Username != u.name {
			l.t.Errorf("GET /user with %s's token: %+v", u.name, me)
		}
		_, doc := l.get("GET", "/user/widgets", u.token, nil)
		got := string(doc)
		if got == "{}" {
			got = "" // nothing saved
		}
		if !u.widgets.allows(got) {
			l.t.Errorf("%s's widgets are %.60q, want %s", u.name, got, &u.widgets)
		}
		l.settle(&u.widgets, got)
		kept = append(kept, u)
	}
	w.users = kept
}

// verifyCompanies: every acknowledged company is listed for its owner, a creation in
// flight shows up at most once, and no user sees a company nobody created.
func (l *crashLedger) verifyCompanies() {
	lists := map[string][]store.Company{}
	for _, w := range l.workers {
		for _, u := range w.users {
			var cs []store.Company
			l.getJSON("/companies", u.token, &cs)
			lists[u.name] = cs
		}
	}
	known := map[uint64]bool{}
	for _, w := range l.workers {
		kept := w.companies[:0]
		for _, c := range w.companies {
			var found *store.Company
			for i, co := range lists[c.owner.name] {
				if (c.id != 0 && co.ID == c.id) || (c.id == 0 && co.Name == c.name) {
					found = &lists[c.owner.name][i]
				}
			}
			switch {
			case found == nil && c.id != 0:
				l.t.Errorf("acknowledged company %d %q is not listed for its owner %s", c.id, c.name, c.owner.name)
			case found == nil:
				l.settle(&c.exists, "")
				continue // its creation was in flight and did not happen
			case found.Name != c.name:
				l.t.Errorf("company %d is named %q, want %q", c.id, found.Name, c.name)
			}
			if found != nil {
				c.id = found.ID
			}
			l.settle(&c.exists, "1")
			known[c.id] = true
			kept = append(kept, c)
		}
		w.companies = kept
	}
	for user, cs := range lists {
		for _, co := range cs {
			if !known[co.ID] {
				l.t.Errorf("%s sees company %d %q, which no write created", user, co.ID, co.Name)
			}
		}
	}
}

// verifyGardens: the company's gardens are exactly those acknowledged as created and
// not deleted, give or take the one write in flight; it collects their image paths.
func (w *crashWorker) verifyGardens(c *crashCompany, paths map[string]bool) {
	l := w.l
	var gs []store.Garden
	if !l.getJSON(companyPath(c.id)+"/gardens", c.owner.token, &gs) {
		return
	}
	matched := map[uint64]bool{}
	kept := c.gardens[:0]
	for _, g := range c.gardens {
		var found *store.Garden
		for i, sg := range gs {
			if (g.id != 0 && sg.ID == g.id) || (g.id == 0 && sg.Name == g.name) {
				found = &gs[i]
			}
		}
		present := ""
		if found != nil {
			present = "1"
		}
		if !g.exists.allows(present) {
			l.t.Errorf("garden %d %q of company %d: present=%v, want %s", g.id, g.name, c.id, found != nil, &g.exists)
		}
		if found == nil {
			l.settle(&g.exists, "")
			continue
		}
		if found.Name != g.name || found.Company != c.id {
			l.t.Errorf("garden %d: %+v, want %q of company %d", found.ID, found, g.name, c.id)
		}
		g.id = found.ID
		l.settle(&g.exists, "1")
		g.path = ""
		if found.ImagePath != nil {
			g.path = *found.ImagePath
			paths[g.path] = true
		}
		matched[g.id] = true
		kept = append(kept, g)
	}
	c.gardens = kept
	for _, sg := range gs {
		if !matched[sg.ID] {
			l.t.Errorf("company %d lists garden %d %q, which no write created (or one deleted)", c.id, sg.ID, sg.Name)
		}
	}
}

// verifyPerms: the permissions listed at path (c itself, or one of its gardens) are
// exactly the granted ones at their last level, give or take the write in flight; the
// company's creator stays its admin.
func (w *crashWorker) verifyPerms(c *crashCompany, path string, perms map[string]*maybe, onCompany bool) {
	l := w.l
	var list []store.Permission
	if !l.getJSON(path+"/permissions", c.owner.token, &list) {
		return
	}
	got := map[string]string{}
	for _, p := range list {
		if _, dup := got[p.Username]; dup {
			l.t.Errorf("%s: %s listed twice", path, p.Username)
		}
		got[p.Username] = string(p.Level)
	}
	if onCompany {
		if got[c.owner.name] != "a" {
			l.t.Errorf("%s: the creator %s has %q, want a", path, c.owner.name, got[c.owner.name])
		}
		delete(got, c.owner.name)
	}
	for who, level := range got {
		if perms[who] == nil {
			l.t.Errorf("%s: %s has %q, never granted", path, who, level)
		}
	}
	names := make([]string, 0, len(perms))
	for who := range perms {
		names = append(names, who)
	}
	slices.Sort(names)
	for _, who := range names {
		m := perms[who]
		if !m.allows(got[who]) {
			l.t.Errorf("%s: %s has %q, want %s", path, who, got[who], m)
		}
		l.settle(m, got[who])
		if got[who] == "" {
			delete(perms, who)
		}
	}
}

// verifyImage: the garden's image is the last acknowledged upload or the one in
// flight, with that upload's coordinates, and agrees with the garden's image_path.
func (w *crashWorker) verifyImage(c *crashCompany, g *crashGarden) {
	l := w.l
	path := gardenPath(c.id, g.id) + "/image"
	code, data := l.get("GET", path, c.owner.token, nil)
	switch code {
	case http.StatusNotFound:
		if !g.image.allows("") {
			l.t.Errorf("%s: 404, want %s", path, &g.image)
		}
		if g.path != "" {
			l.t.Errorf("%s: 404, but the garden's image_path is %s", path, g.path)
		}
		l.settle(&g.image, "")
		return
	case http.StatusOK:
	default:
		l.t.Errorf("GET %s: %d %s", path, code, data)
		return
	}
	var doc struct {
		Image       string            `json:"image"`
		Coordinates store.Coordinates `json:"coordinates"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		l.t.Errorf("GET %s: decode: %v", path, err)
		return
	}
	png, err := imagestore.DecodeDataURL(doc.Image)
	if err != nil {
		l.t.Errorf("GET %s: %v", path, err)
		return
	}
	candidates := []string{g.image.acked}
	if g.image.pending != nil {
		candidates = append(candidates, *g.image.pending)
	}
	for _, key := range candidates {
		v, ok := l.uploads.Load(key)
		if !ok {
			continue
		}
		up := v.(*crashUpload)
		if bytes.Equal(png, up.png) && slices.Equal(doc.Coordinates, up.coords) {
			l.settle(&g.image, key)
			if g.path == "" {
				l.t.Errorf("%s: an image is served but the garden has no image_path", path)
			}
			return
		}
	}
	l.t.Errorf("%s: the image (%d bytes) with %v is not %s", path, len(png), doc.Coordinates, &g.image)
}
