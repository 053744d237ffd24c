package cli

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/spatial"
)

// spatialOptions are the flags that reach a spatial data server, shared by serve and
// pointclouds sync.
type spatialOptions struct {
	addr        string
	tls         bool
	caFile      string
	timeout     time.Duration
	concurrency int
	cacheTTL    time.Duration
	workers     int
	maxBytes    byteSize
	lease       time.Duration
}

func (o *spatialOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.addr, "spatial", "", "spatial data server (SEEREP) gRPC address HOST:PORT; without it the beds and plants endpoints answer 503")
	f.BoolVar(&o.tls, "spatial-tls", false, "connect to the spatial server with TLS (system roots, or --spatial-ca)")
	f.StringVar(&o.caFile, "spatial-ca", "", "PEM file of CA certificates for the spatial server (implies --spatial-tls)")
	f.DurationVar(&o.timeout, "spatial-timeout", spatial.DefaultCallTimeout, "deadline of each call to the spatial server")
	f.IntVar(&o.concurrency, "spatial-concurrency", spatial.DefaultMaxInFlight, "most calls to the spatial server in flight at once")
	f.DurationVar(&o.cacheTTL, "spatial-cache-ttl", spatial.DefaultCacheTTL, "how long answers of the spatial server are reused (0 disables the cache)")
	f.IntVar(&o.workers, "pointcloud-workers", pointcloud.DefaultWorkers, "point clouds downloaded at once in the background")
	f.Var(&o.maxBytes, "pointcloud-max-bytes", "most bytes of point-cloud files kept (e.g. 2GiB); the least recently used are deleted beyond it, positions stay (0: no limit)")
	f.DurationVar(&o.lease, "pointcloud-lease", pointcloud.DefaultLease, "how long a node's claim on a point-cloud download holds unrenewed: the downloads of a node that dies wait this long for another (nodes sharing a database)")
	markConfig(f, "spatial", "spatial-tls", "spatial-ca", "spatial-timeout", "spatial-concurrency", "spatial-cache-ttl", "pointcloud-workers", "pointcloud-max-bytes", "pointcloud-lease")
}

func (o *spatialOptions) validate() error {
	switch {
	case o.timeout <= 0:
		return errors.New("--spatial-timeout must be positive")
	case o.concurrency <= 0:
		return errors.New("--spatial-concurrency must be at least 1")
	case o.cacheTTL < 0:
		return errors.New("--spatial-cache-ttl must not be negative (0 disables the cache)")
	case o.workers <= 0:
		return errors.New("--pointcloud-workers must be at least 1")
	case o.lease < 300*time.Millisecond:
		return errors.New("--pointcloud-lease must be at least 300ms (it is renewed every third of it)")
	}
	return nil
}

func (o *spatialOptions) clientConfig() spatial.ClientConfig {
	ttl := o.cacheTTL
	if ttl == 0 {
		ttl = spatial.CacheDisabled
	}
	return spatial.ClientConfig{
		Addr: o.addr, TLS: o.tls || o.caFile != "", CAFile: o.caFile,
		CallTimeout: o.timeout, MaxInFlight: o.concurrency, CacheTTL: ttl,
	}
}

func (o *spatialOptions) cloudConfig() pointcloud.Config {
	return pointcloud.Config{Workers: o.workers, MaxBytes: int64(o.maxBytes), Lease: o.lease}
}
