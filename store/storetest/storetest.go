// Package storetest is the contract suite of the store backends: every behaviour the
// server relies on, expressed against the interfaces of package store, so that the
// bbolt backend and the PostgreSQL backend are held to the same rules. A backend's
// tests call Run with a Harness that opens it.
package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// Harness opens the backend under test.
type Harness struct {
	// Open returns n handles on one new, empty database, all with the clock now: n
	// nodes of a cluster. A backend that one process owns (bbolt) returns the same
	// handle n times. The suite checks (Check, CheckIndexes) and closes them at
	// cleanup.
	Open func(tb testing.TB, now func() time.Time, n int) []store.Backend
	// MultiNode is true when the handles are separate nodes (separate connections
	// and caches), so the suite's cross-node tests mean something.
	MultiNode bool
}

// Run runs the whole contract suite.
func Run(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"CreateUser", testCreateUser},
		{"CreateUserValidation", testCreateUserValidation},
		{"UpdateUser", testUpdateUser},
		{"CreateLoginToken", testCreateLoginToken},
		{"UsernamesNormalisedAndUnconfusable", testUsernamesNormalisedAndUnconfusable},
		{"LookalikeUsernamesRefused", testLookalikeUsernamesRefused},
		{"PasswordHashKinds", testPasswordHashKinds},
		{"TokenDigestRejectsMalformed", testTokenDigestRejectsMalformed},
		{"Tokens", testTokens},
		{"RevokeUserTokensKeepsOne", testRevokeUserTokensKeepsOne},
		{"Widgets", testWidgets},
		{"Stats", testStats},
		{"CreateCompany", testCreateCompany},
		{"GardenVisibility", testGardenVisibility},
		{"ListPages", testListPages},
		{"Access", testAccess},
		{"DeleteCompanyCascade", testDeleteCompanyCascade},
		{"DeleteGarden", testDeleteGarden},
		{"CompanyPermissionRules", testCompanyPermissionRules},
		{"GardenPermissionRules", testGardenPermissionRules},
		{"PermissionUsernameSpellings", testPermissionUsernameSpellings},
		{"UsernameFollowsRename", testUsernameFollowsRename},
		{"Beds", testBeds},
		{"GardenImage", testGardenImage},
		{"EnqueueCloudsOncePerCloud", testEnqueueCloudsOncePerCloud},
		{"CloudJobRetriesAndRearm", testCloudJobRetriesAndRearm},
		{"CompleteCloudJob", testCompleteCloudJob},
		{"DeleteDropsCloudsOfUnreferencedProjects", testDeleteDropsClouds},
		{"BedStatuses", testBedStatuses},
		{"DueCloudJobsLimit", testDueCloudJobsLimit},
		{"ClaimCloudJobs", testClaimCloudJobs},
		{"ClaimLeaseExpires", testClaimLeaseExpires},
		{"ClaimSurvivesEnqueue", testClaimSurvivesEnqueue},
		{"ClaimsNeverOverlap", testClaimsNeverOverlap},
		{"LastAdminUnderConcurrentDemotions", testLastAdminConcurrentDemotions},
		{"ConcurrentGrantsAndDemotions", testConcurrentGrantsAndDemotions},
		{"ConcurrentBedsOfOneProject", testConcurrentBedsOfOneProject},
		{"NodesSeeEachOthersWrites", testNodesSeeEachOthersWrites},
		{"ArchiveRoundTrip", testArchiveRoundTrip},
		{"ArchiveRejects", testArchiveRejects},
		{"ArchiveFormat1", testArchiveFormat1},
		{"ArchiveReplace", testArchiveReplace},
		{"ImportImagesNeedsContent", testImportImagesNeedsContent},
		{"UpdateUserIfUnchanged", testUpdateUserIfUnchanged},
		{"ReplacePasswordHash", testReplacePasswordHash},
		{"WidgetsUTF8", testWidgetsUTF8},
		{"DataID", testDataID},
		{"CreateBedUpTo", testCreateBedUpTo},
		{"BedsOfProject", testBedsOfProject},
		{"CreateBedFor", testCreateBedFor},
		{"FirstBedsOfOneProject", testFirstBedsOfOneProject},
		{"BedLimitAcrossNodes", testBedLimitAcrossNodes},
		{"CloudQueueCounts", testCloudQueueCounts},
		{"ImportKeepsIDsAndRerunsToNothing", testImportKeepsIDsAndRerunsToNothing},
		{"ImportIntoUsedDatabase", testImportIntoUsedDatabase},
		{"ImportValidation", testImportValidation},
		{"ImportStalePlan", testImportStalePlan},
		{"ControlCharacters", testControlCharacters},
		{"ArchiveRepairsText", testArchiveRepairsText},
		{"ImportRepairsText", testImportRepairsText},
		{"LogsCreate", testLogsCreate},
		{"LogsUpdate", testLogsUpdate},
		{"LogsDelete", testLogsDelete},
		{"LogsList", testLogsList},
		{"LogsListMatchesModel", testLogsListMatchesModel},
		{"PendingTasks", testPendingTasks},
		{"LogPageText", testLogPageText},
		{"LogPhotosBounded", testLogPhotosBounded},
		{"LogsTextBudget", testLogsTextBudget},
		{"LogPhotos", testLogPhotos},
		{"LogClientKeys", testLogClientKeys},
		{"LogClientKeysTogether", testLogClientKeysTogether},
		{"PhotoClientKeys", testPhotoClientKeys},
		{"PlantIDs", testPlantIDs},
		{"ChangeFeedOff", testChangeFeedOff},
		{"ChangeFeedSnapshot", testChangeFeedSnapshot},
		{"ChangeFeedRecordsWrites", testChangeFeedRecordsWrites},
		{"ChangeFeedTrimAndCompact", testChangeFeedTrimAndCompact},
		{"ChangeFeedFollowsCommits", testChangeFeedFollowsCommits},
		{"ReplicaRecords", testReplicaRecords},
		{"ReplicaUsernames", testReplicaUsernames},
		{"ReplicaLogs", testReplicaLogs},
		{"ReplicaPhotos", testReplicaPhotos},
		{"ChangeFeedGuidance", testChangeFeedGuidance},
		{"ReplicaHistory", testReplicaHistory},
		{"HistoryRecordsEachMeasurementOnce", testHistoryRecordsEachMeasurementOnce},
		{"HistoryReadOnceAcrossNodes", testHistoryReadOnceAcrossNodes},
		{"HistoryRetention", testHistoryRetention},
		{"HistoryBatchAsOneByOne", testHistoryBatchAsOneByOne},
		{"AlertsFollowMeasurements", testAlertsFollowMeasurements},
		{"AlertTask", testAlertTask},
		{"Guidance", testGuidance},
		{"Leases", testLeases},
		{"HistoryArchive", testHistoryArchive},
		{"ArchiveFormat3", testArchiveFormat3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

// Clock is a settable clock, so expiry and backoff are tested without sleeping.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)} }

// Now reads the clock.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// open returns one checked handle with a settable clock.
func open(t *testing.T, h Harness) (store.Backend, *Clock) {
	t.Helper()
	nodes, clock := openNodes(t, h, 1)
	return nodes[0], clock
}

// openNodes returns n handles on one database (see Harness.Open) with one clock;
// at cleanup each distinct handle is checked and closed.
func openNodes(t *testing.T, h Harness, n int) ([]store.Backend, *Clock) {
	t.Helper()
	clock := NewClock()
	nodes := h.Open(t, clock.Now, n)
	if len(nodes) != n {
		t.Fatalf("harness opened %d handles, want %d", len(nodes), n)
	}
	t.Cleanup(func() {
		if err := nodes[0].Check(); err != nil {
			t.Errorf("storage check: %v", err)
		}
		if err := nodes[0].CheckIndexes(); err != nil {
			t.Errorf("relations check: %v", err)
		}
		closed := map[store.Backend]bool{}
		for _, st := range nodes {
			if !closed[st] {
				closed[st] = true
				if err := st.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			}
		}
	})
	return nodes, clock
}

func mustUser(tb testing.TB, st store.AccountStore, username string) store.User {
	tb.Helper()
	u, err := st.CreateUser(store.NewUser{Username: username, FirstName: "F", LastName: "L", PasswordHash: "h"})
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

func mustCompany(tb testing.TB, st store.CompanyStore, creator store.User, name string) store.Company {
	tb.Helper()
	c, err := st.CreateCompany(creator.ID, name)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func mustGarden(tb testing.TB, st store.CompanyStore, c store.Company, name string) store.Garden {
	tb.Helper()
	g, err := st.CreateGarden(c.ID, name)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func wantErr(tb testing.TB, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("error %v, want %v", err, target)
	}
}

func gardenIDs(gs []store.Garden) []uint64 {
	ids := make([]uint64, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	return ids
}

func ptr[T any](v T) *T { return &v }

// corners is a valid coordinate set.
var corners = store.Coordinates{
	{Name: "top_left", Latitude: 52.5, Longitude: 13.4},
	{Name: "top_right", Latitude: 52.5, Longitude: 13.5},
	{Name: "bottom_left", Latitude: 52.4, Longitude: 13.4},
}

const (
	uuidA = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
	uuidB = "c56a4180-65aa-42ec-a945-5fd21dec0538"
)
