package bolt

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/gardend/gardend/store"
)

// BenchmarkTrimChanges: the office acknowledges a box's backlog of n changes at once
// (a week offline is 100,000). The trim must cost about the same per change whatever
// n is: taking the feed's first key again after each deletion walked every page
// emptied so far, quadratic in n (100,000: 4.4 s of CPU at the box).
func BenchmarkTrimChanges(b *testing.B) {
	for _, n := range []int{10_000, 40_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			st, err := Open(filepath.Join(b.TempDir(), FileName), Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = st.Close() }()
			var last uint64
			for b.Loop() {
				b.StopTimer()
				if err := st.db.Update(func(tx *bbolt.Tx) error {
					for range n {
						if err := appendChange(tx, store.Change{Kind: store.KindBed, ID: 1, Ref: 2, At: time.Now()}); err != nil {
							return err
						}
					}
					last = tx.Bucket(bucketChanges).Sequence()
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if got, err := st.TrimChanges(last); err != nil || got != n {
					b.Fatalf("trimmed %d, %v; want %d", got, err, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/change")
		})
	}
}
