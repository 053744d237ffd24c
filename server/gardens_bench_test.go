package server_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// BenchmarkListGardens lists GET /gardens for two users of a database of 10,000
// gardens: one who can read 1,000 of them, one who can read 3. The cost should follow
// what the user can read, not what is stored.
func BenchmarkListGardens(b *testing.B) {
	const companies, perCompany = 10, 1000
	dir := b.TempDir()
	seedGardens(b, dir, companies, perCompany)
	ts := newTestServer(b, func(c *server.Config) { c.DataDir = dir })
	login := func(name string) string {
		var res struct{ Token string }
		ts.must(http.StatusOK, "POST", "/login", "", map[string]string{"username": name, "password": "pw-of-" + name}).decode(b, &res)
		return res.Token
	}
	for _, tc := range []struct {
		user    string
		visible int
	}{{"many", 1000}, {"few", 3}} {
		token := login(tc.user)
		b.Run(fmt.Sprintf("visible=%d", tc.visible), func(b *testing.B) {
			var gs []store.Garden
			ts.must(http.StatusOK, "GET", "/gardens", token, nil).decode(b, &gs)
			if len(gs) != tc.visible {
				b.Fatalf("%s sees %d gardens, want %d", tc.user, len(gs), tc.visible)
			}
			b.ReportAllocs()
			for b.Loop() {
				if res := ts.do("GET", "/gardens", token, nil); res.code != http.StatusOK {
					b.Fatalf("status %d", res.code)
				}
			}
		})
	}
}

// seedGardens writes companies×perCompany gardens without fsync (a throwaway file).
// "many" reads company 3 through a company permission and ten of its gardens through
// garden permissions as well (listed once); "few" holds garden permissions on three
// gardens of different companies.
func seedGardens(b *testing.B, dir string, companies, perCompany int) {
	b.Helper()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	pw := store.NewPasswords(cheapArgon2, 1)
	users := map[string]store.User{}
	for _, name := range []string{"owner", "many", "few"} {
		hash, err := pw.Hash(context.Background(), "pw-of-"+name)
		if err != nil {
			b.Fatal(err)
		}
		if users[name], err = st.CreateUser(store.NewUser{Username: name, FirstName: "F", LastName: "L", PasswordHash: hash}); err != nil {
			b.Fatal(err)
		}
	}
	owner := users["owner"].ID
	for i := range companies {
		c, err := st.CreateCompany(owner, fmt.Sprintf("company %d", i))
		if err != nil {
			b.Fatal(err)
		}
		for j := range perCompany {
			g, err := st.CreateGarden(c.ID, fmt.Sprintf("garden %d.%d", i, j))
			if err != nil {
				b.Fatal(err)
			}
			switch {
			case i == 3 && j < 10:
				_, err = st.SetGardenPermission(g.ID, owner, "many", store.LevelUser)
			case j == 500 && i%4 == 1:
				_, err = st.SetGardenPermission(g.ID, owner, "few", store.LevelUser)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if i == 3 {
			if _, err := st.SetCompanyPermission(c.ID, owner, "many", store.LevelUser); err != nil {
				b.Fatal(err)
			}
		}
	}
}
