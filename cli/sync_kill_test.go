//go:build unix

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gardend/gardend/server/sitesync"
	"github.com/gardend/gardend/server/sitesync/synctest"
	"github.com/gardend/gardend/store"
	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestSyncKill9: a field box, an office node and the hub (the stock nats-server),
// each a process of its own, killed with SIGKILL in turn while the box takes
// writes: every write the box acknowledged reaches the office as it was, and nothing
// else of the box's does.
func TestSyncKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gardend and nats-server and kills them; skipped with -short")
	}
	t.Parallel()
	bin := buildGardend(t)
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	cliData := t.TempDir()
	credsFile := filepath.Join(dir, "farm-a.creds")
	if out, err := run(t, "", "site", "add", "farm-a", "--store", dsn, "--data", cliData, "--out", credsFile); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	hub := synctest.StartHubProcess(t, filepath.Join(dir, "hub"), func(client, leaf, sd, rd string) (string, error) {
		return run(t, "", "sync", "hub-config", "--store", dsn, "--data", cliData, "--client-listen", client,
			"--leaf-listen", leaf, "--store-dir", sd, "--resolver-dir", rd)
	})
	officeDir, boxDir := filepath.Join(dir, "office"), filepath.Join(dir, "box")
	startOffice := func() *gardendProc {
		return startGardend(t, bin, officeDir, "--store", dsn, "--sync-hub", hub.ClientURL())
	}
	startBox := func() *gardendProc {
		return startGardend(t, bin, boxDir, "--sync-uplink", hub.LeafURL(), "--sync-creds", credsFile)
	}
	office, box := startOffice(), startBox()

	post := func(base, path, token string, body any) (int, []byte) {
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Token "+token)
		}
		c := &http.Client{Timeout: 5 * time.Second}
		res, err := c.Do(req)
		if err != nil {
			return 0, nil
		}
		defer res.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(res.Body)
		return res.StatusCode, buf.Bytes()
	}
	code, body := post(box.base, "/register", "", map[string]string{"username": "farmer", "password": "farmer-password-1", "first_name": "F", "last_name": "L"})
	if code != http.StatusCreated {
		t.Fatalf("register at the box: %d %s", code, body)
	}
	// acknowledged: the companies the box answered 201 for, by id at the box.
	acknowledged := map[uint64]string{}
	n := 0
	write := func(count int) {
		_, token := login(t, box.base, "farmer", "farmer-password-1")
		for range count {
			n++
			name := "c" + strconv.Itoa(n)
			code, body := post(box.base, "/companies", token, map[string]string{"name": name})
			if code != http.StatusCreated {
				continue // the box is down: not acknowledged
			}
			var c store.Company
			if err := json.Unmarshal(body, &c); err == nil {
				acknowledged[c.ID] = name
			}
		}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	write(20)
	victims := []string{"box", "office", "hub", "box"}
	if v := os.Getenv("SYNC_VICTIMS"); v != "" {
		victims = strings.Split(v, ",")
	}
	for round, victim := range victims {
		write(10)
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond) // in the middle of sending
		switch victim {
		case "box":
			box.kill()
			box.waitKilled()
			box = startBox()
		case "office":
			office.kill()
			office.waitKilled()
			write(10)
			office = startOffice()
		case "hub":
			hub.Kill()
			write(10)
			hub.StartProcess(t)
		}
		t.Logf("round %d: killed the %s; %d writes acknowledged", round, victim, len(acknowledged))
	}
	write(10)

	ost, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ost.Close()
	deadline := time.Now().Add(90 * time.Second)
	var missing []string
	for {
		missing = missing[:0]
		for id, name := range acknowledged {
			c, err := ost.Company(store.GlobalID(2, id))
			if err != nil || c.Name != name {
				missing = append(missing, fmt.Sprintf("company %d %q: %+v %v", id, name, c, err))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(missing) > 0 {
		bs, _ := run(t, "", "sync", "status", "--json", "--data", boxDir)
		os_, _ := run(t, "", "sync", "status", "--json", "--data", officeDir, "--store", dsn)
		t.Logf("box status: %s\noffice status: %s", bs, os_)
		t.Logf("hub: %s", hubState(t, hub, dsn))
		t.Fatalf("%d of %d acknowledged writes not at the office after 90s, e.g. %s\nbox:\n%s\noffice:\n%s",
			len(missing), len(acknowledged), missing[0], box.logTail(), office.logTail())
	}
	// Nothing else of the box's: the office holds exactly the companies the box does.
	all, err := ost.Companies()
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, c := range all {
		if store.HomeSite(c.ID) == 2 {
			got++
		}
	}
	box.stop()
	bst, _, err := openBoxStore(boxDir)
	if err != nil {
		t.Fatal(err)
	}
	defer bst.Close()
	bcs, _ := bst.Companies()
	if got != len(bcs) {
		t.Errorf("the office holds %d of the box's companies, the box %d", got, len(bcs))
	}
	t.Logf("%d writes acknowledged, all at the office", len(acknowledged))
}

func openBoxStore(dir string) (store.Backend, bool, error) {
	return cliOpenStore(dir)
}

var _ = os.Getenv

// hubState describes the hub's stream of site 2, for a failure's report.
func hubState(t *testing.T, hub *synctest.Hub, dsn string) string {
	ost, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		return err.Error()
	}
	defer ost.Close()
	keys, err := sitesync.LoadKeys(ost.Secret)
	if err != nil {
		return err.Error()
	}
	j, seed, _ := keys.OfficeCreds()
	nc, err := nats.Connect(hub.ClientURL(), nats.UserJWTAndSeed(j, string(seed)))
	if err != nil {
		return err.Error()
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(context.Background(), sitesync.SiteStream(2))
	if err != nil {
		return err.Error()
	}
	info, err := s.Info(context.Background())
	if err != nil {
		return err.Error()
	}
	data, _ := json.Marshal(info)
	return string(data)
}
