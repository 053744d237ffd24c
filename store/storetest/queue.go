package storetest

import (
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

var (
	inputsMap = store.CloudInputs{Frame: "map", Origin: store.LatLon{Lat: 52.3, Lon: 7.6}}
	inputsCam = store.CloudInputs{Frame: "cam", Origin: store.LatLon{Lat: 52.3, Lon: 7.6},
		Transform: &store.Transform{Translation: [3]float64{1, 2, 0.5}, Rotation: [4]float64{0, 0, 0.1, 0.99}}}
	policy = store.RetryPolicy{MaxAttempts: 3, Backoff: time.Second, MaxBackoff: 3 * time.Second}
)

func job(project, cloud string, in store.CloudInputs) store.CloudJob {
	return store.CloudJob{Project: project, Cloud: cloud, CloudInputs: in}
}

func mustEnqueue(t *testing.T, st store.CloudQueue, rearm time.Duration, jobs ...store.CloudJob) int {
	t.Helper()
	written, err := st.EnqueueClouds(jobs, rearm)
	if err != nil {
		t.Fatal(err)
	}
	return len(written)
}

// openQueue opens n handles with a garden that has beds on uuidA and uuidB.
func openQueue(t *testing.T, h Harness, n int) ([]store.Backend, *Clock, store.Garden) {
	t.Helper()
	nodes, clock := openNodes(t, h, n)
	st := nodes[0]
	alice := mustUser(t, st, "alice")
	g := mustGarden(t, st, mustCompany(t, st, alice, "c"), "g")
	for _, u := range []string{uuidA, uuidB} {
		if _, err := st.CreateBed(g.ID, u, ""); err != nil {
			t.Fatal(err)
		}
	}
	return nodes, clock, g
}

func testEnqueueCloudsOncePerCloud(t *testing.T, h Harness) {
	nodes, clock, _ := openQueue(t, h, 1)
	st := nodes[0]
	if n := mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsMap), job(uuidA, "c2", inputsCam), job(uuidB, "c1", inputsMap)); n != 3 {
		t.Fatalf("queued %d, want 3", n)
	}
	// The same clouds again: nothing to write; the same cloud uuid in another project
	// was a separate job.
	if n := mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsMap), job(uuidB, "c1", inputsMap)); n != 0 {
		t.Fatalf("queued %d again", n)
	}
	// New inputs replace the queued ones.
	if n := mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsCam)); n != 1 {
		t.Fatalf("changed inputs: queued %d", n)
	}
	jobs, err := st.CloudJobs()
	if err != nil || len(jobs) != 3 {
		t.Fatalf("queue %v: %v", jobs, err)
	}
	if jobs[0].Project != uuidA || jobs[0].Cloud != "c1" || !jobs[0].CloudInputs.Equal(inputsCam) ||
		!jobs[0].NextAttempt.Equal(clock.Now()) || !jobs[0].Enqueued.Equal(clock.Now()) || jobs[0].Attempts != 0 || jobs[0].Failed {
		t.Errorf("first job %+v", jobs[0])
	}
	if jobs[1].Cloud != "c2" || jobs[2].Project != uuidB {
		t.Errorf("queue not by project and cloud: %+v", jobs)
	}
	// A project no bed refers to is not queued; bad uuids are refused.
	if n := mustEnqueue(t, st, time.Hour, job("0000-unknown", "c1", inputsMap)); n != 0 {
		t.Errorf("queued %d for an unreferenced project", n)
	}
	_, err = st.EnqueueClouds([]store.CloudJob{job(uuidA, "../etc", inputsMap)}, time.Hour)
	wantErr(t, err, store.ErrInvalid)
	if n := mustEnqueue(t, st, time.Hour); n != 0 {
		t.Errorf("empty enqueue wrote %d", n)
	}
}

func testCloudJobRetriesAndRearm(t *testing.T, h Harness) {
	nodes, clock, _ := openQueue(t, h, 1)
	st := nodes[0]
	mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsMap), job(uuidA, "c2", inputsMap))
	due, next, pending, err := st.DueCloudJobs(10)
	if err != nil || len(due) != 2 || !next.IsZero() || pending != 2 {
		t.Fatalf("due %d next %v pending %d: %v", len(due), next, pending, err)
	}
	// Backoff 1s, 2s, then failed at the third attempt.
	for attempt, wantDelay := range []time.Duration{time.Second, 2 * time.Second} {
		j, ok, err := st.RecordCloudFailure(uuidA, "c1", inputsMap, "unavailable", policy)
		if err != nil || !ok || j.Attempts != attempt+1 || j.Failed || !j.NextAttempt.Equal(clock.Now().Add(wantDelay)) ||
			!j.LastAttempt.Equal(clock.Now()) || j.LastError != "unavailable" {
			t.Fatalf("attempt %d: %+v %v %v", attempt+1, j, ok, err)
		}
		due, next, _, _ = st.DueCloudJobs(10)
		if len(due) != 1 || due[0].Cloud != "c2" || !next.Equal(j.NextAttempt) {
			t.Fatalf("after a failure: due %v next %v", due, next)
		}
		clock.Advance(wantDelay)
	}
	j, _, _ := st.RecordCloudFailure(uuidA, "c1", inputsMap, "still unavailable", policy)
	if !j.Failed || j.Attempts != 3 || j.LastError != "still unavailable" {
		t.Fatalf("third failure: %+v", j)
	}
	due, next, pending, _ = st.DueCloudJobs(10)
	if len(due) != 1 || !next.IsZero() || pending != 1 {
		t.Fatalf("a failed job is neither due nor pending: due %v next %v pending %d", due, next, pending)
	}
	// A failure for other inputs (the job was queued again meanwhile) is ignored, as
	// is one for a job that is gone.
	if _, ok, _ := st.RecordCloudFailure(uuidA, "c2", inputsCam, "x", policy); ok {
		t.Error("failure recorded for other inputs")
	}
	if _, ok, err := st.RecordCloudFailure(uuidB, "none", inputsMap, "x", policy); ok || err != nil {
		t.Errorf("failure of a job not queued: %v, %v", ok, err)
	}

	state, _ := st.CloudState(uuidA)
	if state.NeedsJob("c1", inputsMap, clock.Now(), time.Hour) {
		t.Error("a failed job is re-armed before its cool-down")
	}
	if n := mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsMap)); n != 0 {
		t.Errorf("re-armed %d before the cool-down", n)
	}
	clock.Advance(time.Hour)
	if !state.NeedsJob("c1", inputsMap, clock.Now(), time.Hour) {
		t.Error("a failed job is not re-armed after its cool-down")
	}
	if n := mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsMap)); n != 1 {
		t.Fatalf("re-armed %d after the cool-down", n)
	}
	state, _ = st.CloudState(uuidA)
	if j := state.Jobs["c1"]; j.Failed || j.Attempts != 0 || j.LastError != "still unavailable" {
		t.Errorf("re-armed job %+v", j)
	}

	// A forced enqueue makes a job backing off due now.
	if _, _, err := st.RecordCloudFailure(uuidA, "c2", inputsMap, "x", policy); err != nil {
		t.Fatal(err)
	}
	if n := mustEnqueue(t, st, 0, job(uuidA, "c2", inputsMap)); n != 1 {
		t.Fatalf("forced: %d", n)
	}
	if due, _, _, _ := st.DueCloudJobs(10); len(due) != 2 {
		t.Errorf("due after forcing: %v", due)
	}
}

func testCompleteCloudJob(t *testing.T, h Harness) {
	nodes, clock, _ := openQueue(t, h, 1)
	st := nodes[0]
	mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsCam), job(uuidA, "c2", inputsMap))
	pos := store.PlantPosition{Project: uuidA, Cloud: "c1", CloudInputs: inputsCam, Position: &store.LatLon{Lat: 52.30001, Lon: 7.60002}, Points: 500}
	if err := st.CompleteCloudJob(pos); err != nil {
		t.Fatal(err)
	}
	state, err := st.CloudState(uuidA)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := state.Fresh("c1", inputsCam)
	if !ok || *got.Position != *pos.Position || got.Points != 500 || !got.Computed.Equal(clock.Now()) || got.Project != uuidA || got.Cloud != "c1" {
		t.Fatalf("position %+v %v", got, ok)
	}
	if _, queued := state.Jobs["c1"]; queued || len(state.Jobs) != 1 {
		t.Errorf("jobs after completion: %v", state.Jobs)
	}
	if state.NeedsJob("c1", inputsCam, clock.Now(), time.Hour) {
		t.Error("a fresh position needs a job")
	}
	// Stale: the transform changed since.
	moved := inputsCam
	moved.Transform = &store.Transform{Rotation: [4]float64{0, 0, 0, 1}}
	if _, ok := state.Fresh("c1", moved); ok || !state.NeedsJob("c1", moved, clock.Now(), time.Hour) {
		t.Error("a position for other inputs counts as fresh")
	}
	if n := mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsCam)); n != 0 {
		t.Error("a cloud with a fresh position was queued")
	}

	// Completed for inputs that were replaced meanwhile: stored, the newer job stays.
	mustEnqueue(t, st, time.Hour, job(uuidA, "c1", moved))
	if err := st.CompleteCloudJob(pos); err != nil {
		t.Fatal(err)
	}
	state, _ = st.CloudState(uuidA)
	if j, ok := state.Jobs["c1"]; !ok || !j.CloudInputs.Equal(moved) {
		t.Errorf("the newer job went: %v", state.Jobs)
	}

	// A cloud that yields no position is kept as such; an explicit time is kept.
	at := clock.Now().Add(-time.Minute)
	none := store.PlantPosition{Project: uuidA, Cloud: "c2", CloudInputs: inputsMap, Reason: "no usable point", Computed: at}
	if err := st.CompleteCloudJob(none); err != nil {
		t.Fatal(err)
	}
	state, _ = st.CloudState(uuidA)
	if p, ok := state.Fresh("c2", inputsMap); !ok || p.Position != nil || p.Reason != "no usable point" || !p.Computed.Equal(at) || p.Transform != nil {
		t.Errorf("no-position outcome %+v", p)
	}
	if b, err := st.CloudState(uuidB); err != nil || len(b.Positions)+len(b.Jobs) != 0 {
		t.Fatalf("project B: %+v, %v", b, err)
	}
	err = st.CompleteCloudJob(store.PlantPosition{Project: "0000-gone", Cloud: "c1"})
	wantErr(t, err, store.ErrNotFound)
	err = st.CompleteCloudJob(store.PlantPosition{Project: uuidA, Cloud: "a b"})
	wantErr(t, err, store.ErrInvalid)
}

// testDeleteDropsClouds: positions and queue items go with the last bed of their
// project, and stay while another garden's bed refers to it.
func testDeleteDropsClouds(t *testing.T, h Harness) {
	nodes, _, garden := openQueue(t, h, 1)
	st := nodes[0]
	g2 := mustGarden(t, st, store.Company{ID: garden.Company}, "g2")
	shared, err := st.CreateBed(g2.ID, uuidA, "")
	if err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsMap), job(uuidA, "c2", inputsMap), job(uuidB, "c1", inputsMap))
	if err := st.CompleteCloudJob(store.PlantPosition{Project: uuidA, Cloud: "c1", CloudInputs: inputsMap, Position: &store.LatLon{}}); err != nil {
		t.Fatal(err)
	}
	r, err := st.DeleteGarden(garden.Company, garden.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.BedUUIDs) != 1 || r.BedUUIDs[0] != uuidB {
		t.Fatalf("BedUUIDs %v", r.BedUUIDs)
	}
	a, _ := st.CloudState(uuidA)
	b, _ := st.CloudState(uuidB)
	if len(a.Positions) != 1 || len(a.Jobs) != 1 || len(b.Jobs) != 0 {
		t.Fatalf("after deleting the garden: A %v %v, B %v", a.Positions, a.Jobs, b.Jobs)
	}
	r, err = st.DeleteBed(g2.ID, shared.ID)
	if err != nil || len(r.BedUUIDs) != 1 {
		t.Fatalf("delete the last bed of A: %v %v", r, err)
	}
	a, _ = st.CloudState(uuidA)
	if len(a.Positions)+len(a.Jobs) != 0 {
		t.Fatalf("project A's clouds stayed: %v %v", a.Positions, a.Jobs)
	}
	if jobs, _ := st.CloudJobs(); len(jobs) != 0 {
		t.Fatalf("queue left: %+v", jobs)
	}
}

func testBedStatuses(t *testing.T, h Harness) {
	nodes, _, garden := openQueue(t, h, 1)
	st := nodes[0]
	mustEnqueue(t, st, time.Hour, job(uuidA, "c1", inputsMap), job(uuidA, "c2", inputsMap), job(uuidA, "c3", inputsMap), job(uuidA, "c4", inputsMap))
	if err := st.CompleteCloudJob(store.PlantPosition{Project: uuidA, Cloud: "c1", CloudInputs: inputsMap, Position: &store.LatLon{}}); err != nil {
		t.Fatal(err)
	}
	if err := st.CompleteCloudJob(store.PlantPosition{Project: uuidA, Cloud: "c2", CloudInputs: inputsMap, Reason: "empty"}); err != nil {
		t.Fatal(err)
	}
	for range policy.MaxAttempts {
		if _, _, err := st.RecordCloudFailure(uuidA, "c3", inputsMap, "x", policy); err != nil {
			t.Fatal(err)
		}
	}
	all, err := st.BedStatuses()
	if err != nil || len(all) != 2 {
		t.Fatalf("%v %v", all, err)
	}
	if s := all[0]; s.UUID != uuidA || s.Garden != garden.ID || s.Bed.Garden != garden.ID || s.Positions != 1 || s.NoPosition != 1 || s.Queued != 1 || s.Failed != 1 {
		t.Errorf("status %+v", s)
	}
	if s := all[1]; s.UUID != uuidB || s.Positions+s.NoPosition+s.Queued+s.Failed != 0 {
		t.Errorf("status %+v", s)
	}
	beds, err := st.Beds()
	if err != nil || len(beds) != 2 || beds[1].UUID != uuidB || beds[1].Garden != garden.ID {
		t.Errorf("beds %+v %v", beds, err)
	}
}

func testDueCloudJobsLimit(t *testing.T, h Harness) {
	nodes, clock, _ := openQueue(t, h, 1)
	st := nodes[0]
	mustEnqueue(t, st, time.Hour, job(uuidB, "c1", inputsMap))
	clock.Advance(time.Second)
	mustEnqueue(t, st, time.Hour, job(uuidA, "c2", inputsMap), job(uuidA, "c1", inputsMap))
	for limit, want := range map[int]int{2: 2, 3: 3, 10: 3, 0: 3, -1: 3} {
		due, _, _, err := st.DueCloudJobs(limit)
		if err != nil || len(due) != want {
			t.Errorf("DueCloudJobs(%d) = %d jobs, %v; want %d", limit, len(due), err, want)
		}
	}
	// Earliest first.
	if due, _, _, _ := st.DueCloudJobs(1); len(due) != 1 || due[0].Project != uuidB {
		t.Errorf("earliest job: %+v", due)
	}
}
