package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

const lease = time.Minute

func keysOf(jobs []store.CloudJob) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.Project[:4] + "/" + j.Cloud
	}
	return out
}

func testClaimCloudJobs(t *testing.T, h Harness) {
	nodes, clock, _ := openQueue(t, h, 1)
	st := nodes[0]
	mustEnqueue(t, st, time.Hour, job(uuidB, "c1", inputsMap))
	clock.Advance(time.Second)
	mustEnqueue(t, st, time.Hour, job(uuidA, "c2", inputsMap), job(uuidA, "c1", inputsMap))

	claimed, next, pending, err := st.ClaimCloudJobs("n1", 2, lease)
	if err != nil || fmt.Sprint(keysOf(claimed)) != "[c56a/c1 3fa8/c1]" || pending != 3 || !next.Equal(clock.Now().Add(lease)) {
		t.Fatalf("claim = %v next %v pending %d, %v", keysOf(claimed), next, pending, err)
	}
	for _, j := range claimed {
		if j.ClaimedBy != "n1" || !j.ClaimUntil.Equal(clock.Now().Add(lease)) {
			t.Errorf("claimed job %+v", j)
		}
	}
	// A claimed job is due for nobody: the queue tells when the claims end.
	due, next, pending, _ := st.DueCloudJobs(0)
	if fmt.Sprint(keysOf(due)) != "[3fa8/c2]" || !next.Equal(clock.Now().Add(lease)) || pending != 3 {
		t.Errorf("due %v next %v pending %d", keysOf(due), next, pending)
	}
	if claimed, _, _, _ := st.ClaimCloudJobs("n2", 0, lease); fmt.Sprint(keysOf(claimed)) != "[3fa8/c2]" {
		t.Errorf("n2 claimed %v", keysOf(claimed))
	}
	if claimed, next, _, _ := st.ClaimCloudJobs("n1", 0, lease); len(claimed) != 0 || !next.Equal(clock.Now().Add(lease)) {
		t.Errorf("nothing left to claim, got %v, next %v", keysOf(claimed), next)
	}
	if jobs, _ := st.CloudJobs(); jobs[0].ClaimedBy != "n1" || jobs[1].ClaimedBy != "n2" || jobs[2].ClaimedBy != "n1" {
		t.Errorf("queue %+v", jobs)
	}

	// Renewing: only the holder, only while it holds the job.
	clock.Advance(time.Second)
	if ok, err := st.RenewCloudClaim("n1", uuidA, "c1", lease); !ok || err != nil {
		t.Errorf("renew by the holder: %v, %v", ok, err)
	}
	if st, _ := st.CloudState(uuidA); !st.Jobs["c1"].ClaimUntil.Equal(clock.Now().Add(lease)) {
		t.Errorf("renewed claim until %v", st.Jobs["c1"].ClaimUntil)
	}
	if ok, _ := st.RenewCloudClaim("n2", uuidA, "c1", lease); ok {
		t.Error("renewed another node's claim")
	}
	if ok, _ := st.RenewCloudClaim("n1", uuidA, "none", lease); ok {
		t.Error("renewed a job that does not exist")
	}
	if err := st.CompleteCloudJob(store.PlantPosition{Project: uuidA, Cloud: "c1", CloudInputs: inputsMap, Reason: "empty"}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.RenewCloudClaim("n1", uuidA, "c1", lease); ok {
		t.Error("renewed a completed job")
	}

	// A failure ends the claim: the job backs off as usual.
	j, ok, err := st.RecordCloudFailure(uuidB, "c1", inputsMap, "unavailable", policy)
	if err != nil || !ok || j.ClaimedBy != "" || !j.ClaimUntil.IsZero() || !j.NextAttempt.Equal(clock.Now().Add(time.Second)) {
		t.Fatalf("failure of a claimed job: %+v %v %v", j, ok, err)
	}
	// Releasing a node's claims makes its jobs due at once.
	if n, err := st.ReleaseCloudClaims("n2"); n != 1 || err != nil {
		t.Errorf("release = %d, %v", n, err)
	}
	if n, _ := st.ReleaseCloudClaims("n2"); n != 0 {
		t.Errorf("released %d twice", n)
	}
	if due, _, _, _ := st.DueCloudJobs(0); fmt.Sprint(keysOf(due)) != "[3fa8/c2]" || due[0].ClaimedBy != "" {
		t.Errorf("due after release: %+v", due)
	}
	clock.Advance(time.Second)
	if due, _, _, _ := st.DueCloudJobs(0); len(due) != 2 {
		t.Errorf("due after the backoff: %v", keysOf(due))
	}

	_, _, _, err = st.ClaimCloudJobs("", 1, lease)
	wantErr(t, err, store.ErrInvalid)
	_, _, _, err = st.ClaimCloudJobs("n1", 1, 0)
	wantErr(t, err, store.ErrInvalid)
	_, err = st.RenewCloudClaim("n1", "../x", "c1", lease)
	wantErr(t, err, store.ErrInvalid)
	_, err = st.ReleaseCloudClaims("")
	wantErr(t, err, store.ErrInvalid)
}

// testClaimLeaseExpires: a node that dies holding jobs gives them back when its
// lease runs out; it cannot renew them once another node has them.
func testClaimLeaseExpires(t *testing.T, h Harness) {
	nodes, clock, _ := openQueue(t, h, 2)
	n1, n2 := nodes[0], nodes[1]
	mustEnqueue(t, n1, time.Hour, job(uuidA, "c1", inputsMap), job(uuidB, "c1", inputsMap))
	if claimed, _, _, err := n1.ClaimCloudJobs("n1", 0, lease); len(claimed) != 2 || err != nil {
		t.Fatalf("n1 claimed %v, %v", keysOf(claimed), err)
	}
	clock.Advance(lease - time.Millisecond)
	if claimed, _, _, _ := n2.ClaimCloudJobs("n2", 0, lease); len(claimed) != 0 {
		t.Fatalf("n2 took %v before the lease ran out", keysOf(claimed))
	}
	clock.Advance(time.Millisecond)
	claimed, _, pending, err := n2.ClaimCloudJobs("n2", 0, lease)
	if len(claimed) != 2 || pending != 2 || err != nil {
		t.Fatalf("n2 claimed %v pending %d after the lease, %v", keysOf(claimed), pending, err)
	}
	if ok, _ := n1.RenewCloudClaim("n1", uuidA, "c1", lease); ok {
		t.Error("the node whose lease ran out renewed a job another node holds")
	}
	if n, _ := n1.ReleaseCloudClaims("n1"); n != 0 {
		t.Errorf("n1 released %d jobs it no longer holds", n)
	}
	if ok, _ := n2.RenewCloudClaim("n2", uuidA, "c1", lease); !ok {
		t.Error("the holder cannot renew")
	}
}

// testClaimSurvivesEnqueue: queueing a claimed job again (an operator's prefetch, or
// new inputs) does not hand it to a second node while the first works on it. Once
// the first node's attempt at the old inputs ends, completed or failed (a failure
// not counted), the job for the new inputs is free at once, not when the lease runs
// out.
func testClaimSurvivesEnqueue(t *testing.T, h Harness) {
	for _, end := range []struct {
		name    string
		attempt func(n1 store.Backend) error
	}{
		{"completed", func(n1 store.Backend) error {
			return n1.CompleteCloudJob(store.PlantPosition{Project: uuidA, Cloud: "c1", CloudInputs: inputsMap, Position: &store.LatLon{Lat: 1, Lon: 2}})
		}},
		{"failed", func(n1 store.Backend) error {
			if _, ok, err := n1.RecordCloudFailure(uuidA, "c1", inputsMap, "unavailable", policy); err != nil || ok {
				return fmt.Errorf("failure of the old inputs recorded: %v, %v", ok, err)
			}
			return nil
		}},
	} {
		t.Run(end.name, func(t *testing.T) {
			nodes, clock, _ := openQueue(t, h, 2)
			n1, n2 := nodes[0], nodes[1]
			mustEnqueue(t, n1, time.Hour, job(uuidA, "c1", inputsMap))
			if claimed, _, _, _ := n1.ClaimCloudJobs("n1", 0, lease); len(claimed) != 1 {
				t.Fatalf("claimed %v", keysOf(claimed))
			}
			if n := mustEnqueue(t, n2, 0, job(uuidA, "c1", inputsMap)); n != 1 {
				t.Fatalf("forced enqueue wrote %d", n)
			}
			moved := inputsMap
			moved.Origin.Lat += 0.001
			if n := mustEnqueue(t, n2, time.Hour, job(uuidA, "c1", moved)); n != 1 {
				t.Fatalf("enqueue for new inputs wrote %d", n)
			}
			if claimed, next, _, _ := n2.ClaimCloudJobs("n2", 0, lease); len(claimed) != 0 || !next.Equal(clock.Now().Add(lease)) {
				t.Fatalf("n2 took %v while n1 works on it (next %v)", keysOf(claimed), next)
			}
			if err := end.attempt(n1); err != nil {
				t.Fatal(err)
			}
			claimed, _, _, err := n2.ClaimCloudJobs("n2", 0, lease)
			if err != nil || len(claimed) != 1 || !claimed[0].CloudInputs.Equal(moved) || claimed[0].ClaimedBy != "n2" || claimed[0].Attempts != 0 {
				t.Fatalf("n2 claimed %+v, %v", claimed, err)
			}
		})
	}
}

// testClaimsNeverOverlap: workers on two nodes claim from one queue at once; every job
// goes to exactly one of them.
func testClaimsNeverOverlap(t *testing.T, h Harness) {
	nodes, _, _ := openQueue(t, h, 2)
	const clouds = 40
	var jobs []store.CloudJob
	for i := range clouds {
		jobs = append(jobs, job([]string{uuidA, uuidB}[i%2], fmt.Sprintf("c%02d", i), inputsMap))
	}
	mustEnqueue(t, nodes[0], time.Hour, jobs...)

	const workersPerNode = 4
	var (
		mu    sync.Mutex
		owner = map[string]string{}
		dups  []string
		wg    sync.WaitGroup
	)
	start := make(chan struct{})
	for n, st := range nodes {
		for w := range workersPerNode {
			node := fmt.Sprintf("n%d", n+1)
			wg.Go(func() {
				<-start
				for {
					claimed, _, _, err := st.ClaimCloudJobs(node, 3, lease)
					if err != nil {
						t.Errorf("%s worker %d: %v", node, w, err)
						return
					}
					if len(claimed) == 0 {
						return
					}
					mu.Lock()
					for _, j := range claimed {
						k := j.Project + "/" + j.Cloud
						if prev, ok := owner[k]; ok {
							dups = append(dups, k+" by "+prev+" and "+node)
						}
						owner[k] = node
					}
					mu.Unlock()
				}
			})
		}
	}
	close(start)
	wg.Wait()
	if len(dups) > 0 {
		t.Fatalf("claimed twice: %v", dups)
	}
	if len(owner) != clouds {
		t.Fatalf("%d of %d jobs claimed", len(owner), clouds)
	}
	all, err := nodes[0].CloudJobs()
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range all {
		if j.ClaimedBy != owner[j.Project+"/"+j.Cloud] {
			t.Errorf("job %s/%s held by %q, claimed by %q", j.Project, j.Cloud, j.ClaimedBy, owner[j.Project+"/"+j.Cloud])
		}
	}
}
