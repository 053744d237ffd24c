package pointcloud

import (
	"os"
	"time"

	"github.com/gardend/gardend/store"
)

// Config tunes the background downloads. Zero values take the defaults.
type Config struct {
	// Workers is the number of downloads at once. Default DefaultWorkers.
	Workers int
	// Retry is the backoff of failed downloads. Default DefaultRetry.
	Retry store.RetryPolicy
	// Rearm is how long a download that ran out of attempts stays failed before a
	// request for its bed queues it again. Default DefaultRearm.
	Rearm time.Duration
	// MaxBytes bounds the PLY files kept under pointclouds/; the least recently used
	// are deleted beyond it (positions stay). 0: no limit.
	MaxBytes int64
	// Node names this process in the claims on the download queue
	// (store.ClaimCloudJobs): nodes sharing one database never download one cloud at
	// once. A restarted node frees the claims it left, so the name must be stable
	// across restarts and differ between nodes. Default: the host name.
	Node string
	// Lease is how long a claim holds without being renewed: a node that dies keeps
	// its jobs from the others this long. It is renewed every third of it while a
	// download runs. Default DefaultLease.
	Lease time.Duration
	// Poll, when set, is the longest the pool waits before it looks at the queue
	// again: with a database that several nodes share, the others queue jobs (and die
	// holding some) without waking this one. 0: the pool looks when a job of its own
	// queueing or the next one due says to, enough for one node.
	Poll time.Duration
}

// Defaults of Config.
const (
	// DefaultWorkers: clouds are large and the uplink may be thin; requests never
	// wait for them.
	DefaultWorkers = 2
	DefaultRearm   = time.Hour
	DefaultLease   = time.Minute
)

// DefaultRetry: 8 attempts, 2 s doubling up to 10 min (about 8.5 min from the first
// failure to giving up).
var DefaultRetry = store.RetryPolicy{MaxAttempts: 8, Backoff: 2 * time.Second, MaxBackoff: 10 * time.Minute}

// WithDefaults fills in the zero values.
func (c Config) WithDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.Retry.MaxAttempts <= 0 {
		c.Retry.MaxAttempts = DefaultRetry.MaxAttempts
	}
	if c.Retry.Backoff <= 0 {
		c.Retry.Backoff = DefaultRetry.Backoff
	}
	if c.Retry.MaxBackoff < c.Retry.Backoff {
		c.Retry.MaxBackoff = max(DefaultRetry.MaxBackoff, c.Retry.Backoff)
	}
	if c.Rearm <= 0 {
		c.Rearm = DefaultRearm
	}
	if c.Node == "" {
		c.Node = DefaultNode()
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	return c
}

// DefaultNode is the default Config.Node: the host name.
func DefaultNode() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "gardend"
}
