package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
)

// BenchmarkCompanyListRSS is the outside tester's attack on list answers (issue 15,
// D1): one account with 45,000 companies of 120-character names (a 6.5 MB answer to
// GET /companies), and 512 GETs of that list at once from 8 addresses, each read to
// the end. It reports the child server's resident memory before and at its peak.
// The companies are made in the store before the server starts (the account could
// no longer make them through the API: --max-companies-per-user).
func BenchmarkCompanyListRSS(b *testing.B) {
	companies, requests, sources := 45000, benchEnvInt("GARDEND_LIST_REQUESTS", 512), 8
	for b.Loop() {
		dir := b.TempDir()
		token := seedCompanies(b, dir, companies)
		b.Setenv(childServeLimitEnv, "1")
		pid, addr := childServerIn(b, dir)
		before, _ := rss(b, pid)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var sizes []int64
		failed := 0
		var firstFailure error
		fail := func(err error) {
			mu.Lock()
			if failed++; firstFailure == nil {
				firstFailure = err
			}
			mu.Unlock()
		}
		start := make(chan struct{})
		for i := range requests {
			wg.Go(func() {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+i%sources))}}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					fail(err)
					return
				}
				defer c.Close()
				<-start
				_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
				fmt.Fprintf(c, "GET /companies HTTP/1.1\r\nHost: x\r\nAuthorization: Token %s\r\n\r\n", token)
				res, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					fail(err)
					return
				}
				n, err := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				if res.StatusCode == http.StatusOK {
					sizes = append(sizes, n)
				}
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		reportRSS(b, pid, before)
		if len(sizes) > 0 {
			b.ReportMetric(float64(sizes[0])/1e6, "MB-answer")
		}
		b.ReportMetric(float64(len(sizes)), "answers-200")
		// Connections cut or timed out (the client waits two minutes): on a loaded
		// machine the whole-list code spent longer than --write-timeout encoding.
		b.ReportMetric(float64(failed), "failed")
		if firstFailure != nil {
			b.Logf("%d requests failed, the first with %v", failed, firstFailure)
		}
	}
}

// seedCompanies makes, in a bbolt file in dir, an account with n companies and a
// token of it, and returns the token.
func seedCompanies(tb testing.TB, dir string, n int) string {
	tb.Helper()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	u, err := st.CreateUser(store.NewUser{Username: "lister", FirstName: "L", LastName: "L", PasswordHash: "!"})
	if err != nil {
		tb.Fatal(err)
	}
	token := strings.Repeat("ab", store.TokenSize)
	if err := st.CreateToken(u.ID, store.TokenDigest(token), time.Now().Add(time.Hour)); err != nil {
		tb.Fatal(err)
	}
	name := strings.Repeat("n", 114)
	for i := range n {
		if _, err := st.CreateCompany(u.ID, fmt.Sprintf("%s%06d", name, i)); err != nil {
			tb.Fatal(err)
		}
	}
	return token
}

// benchEnvInt reads a positive number from the environment, or returns def.
func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
