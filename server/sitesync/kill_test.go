package sitesync

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server/sitesync/synctest"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// call sends a JSON request to a gardend process and decodes a 2xx answer into out.
func call(t *testing.T, addr, method, path, token string, body, out any) {
	t.Helper()
	data, _ := json.Marshal(body)
	req, err := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	answer, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, answer)
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			t.Fatal(err)
		}
	}
}

// metric reads one unlabelled sample of a gardend process's metrics; -1 when absent.
func metric(addr, name string) float64 {
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer func() { _ = res.Body.Close() }()
	text, _ := io.ReadAll(res.Body)
	for line := range strings.SplitSeq(string(text), "\n") {
		var v float64
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	return -1
}

// TestBoxKilled: a box running as its own process is killed with SIGKILL three times
// right after answering writes, while it sends them, and restarted on its data. The
// office ends with exactly the box's records, and applied each change of the box's
// feed once: no more, no fewer.
func TestBoxKilled(t *testing.T) {
	t.Parallel()
	hub, ost := officeWithHub(t)
	office := startOffice(t, hub, ost, "office-1")
	site, creds, err := AddSite(ost, "farm-a")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	credsFile := filepath.Join(dir, "farm-a.creds")
	if err := os.WriteFile(credsFile, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	data, metricsAddr := filepath.Join(dir, "data"), fmt.Sprintf("127.0.0.1:%d", synctest.FreePort(t))
	box := synctest.StartGardend(t, "--data", data, "--metrics-addr", metricsAddr,
		"--sync-uplink", hub.LeafURL(), "--sync-creds", credsFile)
	var reg struct{ Token string }
	call(t, box.Addr, "POST", "/register", "", map[string]string{"username": "farmer", "password": "pw-of-farmer",
		"first_name": "F", "last_name": "L"}, &reg)
	var acknowledged []string
	for round := range 3 {
		for i := range 15 {
			name := fmt.Sprintf("c%d-%d", round, i)
			var c, g struct{ ID uint64 }
			call(t, box.Addr, "POST", "/companies", reg.Token, map[string]string{"name": name}, &c)
			call(t, box.Addr, "POST", fmt.Sprintf("/companies/%d/gardens", c.ID), reg.Token, map[string]string{"name": "g"}, &g)
			call(t, box.Addr, "POST", fmt.Sprintf("/companies/%d/gardens/%d/logs", c.ID, g.ID), reg.Token,
				map[string]string{"type": "observation", "title": "seen " + name}, nil)
			acknowledged = append(acknowledged, name)
		}
		cur, _ := ost.ReplicaCursor(site.Number)
		box.Kill()
		t.Logf("round %d: killed the box with the office at change %d", round, cur)
		box.Start(t)
	}
	waitFor(t, 60*time.Second, "the box's backlog sent", func() bool {
		return metric(metricsAddr, "gardend_sync_backlog_records") == 0
	})
	box.Stop()
	st, err := bolt.Open(filepath.Join(data, bolt.FileName), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	b := &testBox{st: st, site: site}
	converge(t, 5*time.Second, b, ost)
	for _, name := range acknowledged {
		found := false
		cs, _ := ost.Companies()
		for _, c := range cs {
			found = found || c.Name == name && store.HomeSite(c.ID) == site.Number
		}
		if !found {
			t.Fatalf("company %s, acknowledged by the box, is not at the office", name)
		}
	}
	stats, err := st.ChangeStats()
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := ost.ReplicaCursor(site.Number)
	applied, refused := counters(office.office, site.Number)
	if cur != stats.LastSeq || applied != stats.LastSeq || refused != 0 {
		t.Errorf("the box recorded %d changes; the office's cursor is at %d, it applied %d and refused %d",
			stats.LastSeq, cur, applied, refused)
	}
}

// TestOfficeKilled: the office node applying a box's changes runs as its own process
// and is killed with SIGKILL while it applies, twice, and restarted. The office ends
// with exactly the box's records, its cursor at the box's last change, nothing
// refused.
func TestOfficeKilled(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ost := openOfficeStore(t, dsn)
	keys, err := LoadKeys(ost.Secret)
	if err != nil {
		t.Fatal(err)
	}
	hub := startHub(t, keys, filepath.Join(t.TempDir(), "hub"), nil)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", synctest.FreePort(t))
	node := synctest.StartGardend(t, "--store", dsn, "--data", t.TempDir(), "--metrics-addr", metricsAddr, "--sync-hub", hub.ClientURL(), "--log-level", "debug")
	b := newBoxStore(t)
	writes(t, b, 0, 4)
	b.join(t, ost, "farm-a", hub.LeafURL())
	converge(t, 30*time.Second, b, ost)
	for round := 1; round <= 2; round++ {
		writes(t, b, round, 12)
		waitFor(t, 30*time.Second, "the office applying the round", func() bool {
			cur, _ := ost.ReplicaCursor(b.site.Number)
			return cur > 0 && metric(metricsAddr, "gardend_sync_connected") == 1
		})
		cur, _ := ost.ReplicaCursor(b.site.Number)
		node.Kill()
		t.Logf("round %d: killed the office node at change %d of %d", round, cur, b.box.Published())
		node.Start(t)
		converge(t, 60*time.Second, b, ost)
	}
	// Each change applied once: the office's cursor never passed a change twice, and
	// the box's feed empties (changes that went with an earlier message included).
	waitFor(t, 30*time.Second, "the box's backlog empty", func() bool {
		st, err := b.st.ChangeStats()
		return err == nil && st.Records == 0
	})
	stats, _ := b.st.ChangeStats()
	if cur, _ := ost.ReplicaCursor(b.site.Number); cur == 0 || cur > stats.LastSeq {
		t.Errorf("the office's cursor is at %d of the box's %d changes", cur, stats.LastSeq)
	}
	waitFor(t, 10*time.Second, "the node's metrics", func() bool { return metric(metricsAddr, "gardend_sync_connected") == 1 })
	if strings.Contains(node.Logs(), "refused a change from a site") {
		t.Errorf("the office refused changes of the box:\n%s", node.Logs())
	}
}
