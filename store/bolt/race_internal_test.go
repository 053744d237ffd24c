//go:build race

package bolt

// raceDetector: the race detector makes more values escape to the heap, so
// allocation budgets differ (TestListingsOpenEachBucketOnce).
const raceDetector = true
