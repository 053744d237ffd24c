//go:build !race

package bolt

const raceDetector = false
