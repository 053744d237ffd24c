package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// pageCountingStore records the most records one store call of a list returned.
type pageCountingStore struct {
	store.Backend
	mu   sync.Mutex
	most int
}

func counted[T any](s *pageCountingStore, out []T, err error) ([]T, error) {
	s.mu.Lock()
	s.most = max(s.most, len(out))
	s.mu.Unlock()
	return out, err
}

func (s *pageCountingStore) Companies() ([]store.Company, error) {
	out, err := s.Backend.Companies()
	return counted(s, out, err)
}

func (s *pageCountingStore) CompaniesPage(p store.Page) ([]store.Company, error) {
	out, err := s.Backend.CompaniesPage(p)
	return counted(s, out, err)
}

func (s *pageCountingStore) CompaniesOfUser(id uint64) ([]store.Company, error) {
	out, err := s.Backend.CompaniesOfUser(id)
	return counted(s, out, err)
}

func (s *pageCountingStore) CompaniesOfUserPage(id uint64, p store.Page) ([]store.Company, error) {
	out, err := s.Backend.CompaniesOfUserPage(id, p)
	return counted(s, out, err)
}

func (s *pageCountingStore) Gardens() ([]store.Garden, error) {
	out, err := s.Backend.Gardens()
	return counted(s, out, err)
}

func (s *pageCountingStore) GardensPage(p store.Page) ([]store.Garden, error) {
	out, err := s.Backend.GardensPage(p)
	return counted(s, out, err)
}

func (s *pageCountingStore) GardensVisibleTo(id uint64) ([]store.Garden, error) {
	out, err := s.Backend.GardensVisibleTo(id)
	return counted(s, out, err)
}

func (s *pageCountingStore) GardensVisibleToPage(id uint64, p store.Page) ([]store.Garden, error) {
	out, err := s.Backend.GardensVisibleToPage(id, p)
	return counted(s, out, err)
}

func (s *pageCountingStore) GardensOfCompany(id uint64) ([]store.Garden, error) {
	out, err := s.Backend.GardensOfCompany(id)
	return counted(s, out, err)
}

func (s *pageCountingStore) GardensOfCompanyPage(id uint64, p store.Page) ([]store.Garden, error) {
	out, err := s.Backend.GardensOfCompanyPage(id, p)
	return counted(s, out, err)
}

func (s *pageCountingStore) CompanyGardensVisibleTo(c, u uint64) ([]store.Garden, error) {
	out, err := s.Backend.CompanyGardensVisibleTo(c, u)
	return counted(s, out, err)
}

func (s *pageCountingStore) CompanyGardensVisibleToPage(c, u uint64, p store.Page) ([]store.Garden, error) {
	out, err := s.Backend.CompanyGardensVisibleToPage(c, u, p)
	return counted(s, out, err)
}

func (s *pageCountingStore) CompanyPermissions(id uint64) ([]store.Permission, error) {
	out, err := s.Backend.CompanyPermissions(id)
	return counted(s, out, err)
}

func (s *pageCountingStore) CompanyPermissionsPage(id uint64, p store.Page) ([]store.Permission, error) {
	out, err := s.Backend.CompanyPermissionsPage(id, p)
	return counted(s, out, err)
}

func (s *pageCountingStore) GardenPermissions(id uint64) ([]store.Permission, error) {
	out, err := s.Backend.GardenPermissions(id)
	return counted(s, out, err)
}

func (s *pageCountingStore) GardenPermissionsPage(id uint64, p store.Page) ([]store.Permission, error) {
	out, err := s.Backend.GardenPermissionsPage(id, p)
	return counted(s, out, err)
}

// TestListsReadInPages: every list whose length follows the stored data is read from
// the store a page at a time (the gardens GET /tasks looks in too) and answered whole, the same array as the store's whole
// list, for a member and for a site admin (issue 15, D1: a user who sees 45,000
// companies made GET /companies hold all of them, several times over, per request).
func TestListsReadInPages(t *testing.T) {
	const pageSize, n = 4, 13 // three full pages and one more
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	users := map[string]store.User{}
	for i, name := range []string{"member", "root"} {
		u, err := st.CreateUser(store.NewUser{Username: name, FirstName: "F", LastName: "L", PasswordHash: "!", SiteAdmin: name == "root"})
		if err != nil {
			t.Fatal(err)
		}
		users[name], tokens[name] = u, strings.Repeat(fmt.Sprintf("%02x", i+1), store.TokenSize)
		if err := st.CreateToken(u.ID, store.TokenDigest(tokens[name]), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	member := users["member"]
	var first store.Company
	for i := range n {
		c, err := st.CreateCompany(member.ID, fmt.Sprintf("company %02d", i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = c
		}
	}
	var garden store.Garden
	for i := range n {
		if garden, err = st.CreateGarden(first.ID, fmt.Sprintf("garden %02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		u, err := st.CreateUser(store.NewUser{Username: fmt.Sprintf("user%02d", i), FirstName: "F", LastName: "L", PasswordHash: "!"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetCompanyPermission(first.ID, member.ID, u.Username, store.LevelUser); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetGardenPermission(garden.ID, member.ID, u.Username, store.LevelUser); err != nil {
			t.Fatal(err)
		}
	}
	counting := &pageCountingStore{Backend: st}
	g := startGardend(t, server.Config{DataDir: dir, Store: counting, ListPageSize: pageSize})

	tests := []struct {
		path, user string
		whole      func() (any, error)
	}{
		{"/companies", "member", func() (any, error) { return st.CompaniesOfUser(member.ID) }},
		{"/companies", "root", func() (any, error) { return st.Companies() }},
		{"/gardens", "member", func() (any, error) { return st.GardensVisibleTo(member.ID) }},
		{"/gardens", "root", func() (any, error) { return st.Gardens() }},
		{companyPath(first.ID) + "/gardens", "member", func() (any, error) { return st.CompanyGardensVisibleTo(first.ID, member.ID) }},
		{companyPath(first.ID) + "/gardens", "root", func() (any, error) { return st.GardensOfCompany(first.ID) }},
		{companyPath(first.ID) + "/permissions", "member", func() (any, error) { return st.CompanyPermissions(first.ID) }},
		{gardenPath(first.ID, garden.ID) + "/permissions", "member", func() (any, error) { return st.GardenPermissions(garden.ID) }},
		// The tasks answer is bounded (store.MaxTasks); the gardens it looks in are not.
		{"/tasks", "member", func() (any, error) {
			tasks, err := st.PendingTasks(member.ID, nil)
			return map[string][]store.Log{"tasks": tasks}, err
		}},
	}
	for _, tc := range tests {
		t.Run(strings.TrimPrefix(tc.path, "/")+"/"+tc.user, func(t *testing.T) {
			whole, err := tc.whole()
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(whole)
			counting.mu.Lock()
			counting.most = 0
			counting.mu.Unlock()
			res := g.get(context.Background(), tc.path, tokens[tc.user])
			got, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if res.StatusCode != http.StatusOK || string(got) != string(want) {
				t.Fatalf("GET %s: %d %.300s\nwant %.300s", tc.path, res.StatusCode, got, want)
			}
			var items []json.RawMessage
			if err := json.Unmarshal(got, &items); tc.path != "/tasks" && (err != nil || len(items) < n) {
				t.Fatalf("GET %s: %d items, %v; want at least %d", tc.path, len(items), err, n)
			}
			counting.mu.Lock()
			defer counting.mu.Unlock()
			if counting.most > pageSize {
				t.Errorf("GET %s read %d records of the list at once; want pages of at most %d", tc.path, counting.most, pageSize)
			}
		})
	}
}

// failingAfterStore fails every page of a user's companies after the first.
type failingAfterStore struct{ store.Backend }

func (s failingAfterStore) CompaniesOfUserPage(id uint64, p store.Page) ([]store.Company, error) {
	if p.After > 0 {
		return nil, store.ErrUnavailable
	}
	return s.Backend.CompaniesOfUserPage(id, p)
}

// TestListLaterPageFails: when a page after the first fails before anything was
// sent, the answer is the usual 503; after, the response is cut, so that no client
// takes part of the list for all of it.
func TestListLaterPageFails(t *testing.T) {
	for _, tc := range []struct {
		companies, pageSize int
		cut                 bool
	}{
		{9, 4, false},    // a page of short names: nothing sent before the failure
		{400, 300, true}, // a page of 300 long names: 36 KiB sent before it
	} {
		dir := t.TempDir()
		st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		u, err := st.CreateUser(store.NewUser{Username: "member", FirstName: "F", LastName: "L", PasswordHash: "!"})
		if err != nil {
			t.Fatal(err)
		}
		token := strings.Repeat("cd", store.TokenSize)
		if err := st.CreateToken(u.ID, store.TokenDigest(token), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		for i := range tc.companies {
			if _, err := st.CreateCompany(u.ID, fmt.Sprintf("%s %d", strings.Repeat("n", 110), i)); err != nil {
				t.Fatal(err)
			}
		}
		g := startGardend(t, server.Config{DataDir: dir, Store: failingAfterStore{st}, ListPageSize: tc.pageSize})
		req, _ := http.NewRequestWithContext(context.Background(), "GET", g.base+"/companies", nil)
		req.Header.Set("Authorization", "Token "+token)
		req.Header.Set("Accept-Encoding", "identity") // gzip would send little of the names
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		var list []store.Company
		switch {
		case !tc.cut && res.StatusCode != http.StatusServiceUnavailable:
			t.Errorf("%d companies in pages of %d, the second failing: %d %.200s; want 503", tc.companies, tc.pageSize, res.StatusCode, body)
		case tc.cut && (err == nil || json.Unmarshal(body, &list) == nil):
			t.Errorf("%d companies in pages of %d, the second failing: %d, %d bytes, %v; want a cut answer", tc.companies, tc.pageSize, res.StatusCode, len(body), err)
		}
	}
}
