package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/gardend/gardend/store/bolt"
	"github.com/gardend/gardend/store/storetest"
)

func benchStore(b *testing.B) *bolt.Store {
	b.Helper()
	st, err := bolt.Open(filepath.Join(b.TempDir(), bolt.FileName), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkListLogs: a page of 50 of 100,000 logs (storetest.BenchmarkListLogs).
func BenchmarkListLogs(b *testing.B) { storetest.BenchmarkListLogs(b, benchStore(b)) }

// BenchmarkCreateLog: one log, committed to disk (storetest.BenchmarkCreateLog).
func BenchmarkCreateLog(b *testing.B) { storetest.BenchmarkCreateLog(b, benchStore(b)) }

// BenchmarkImportLogbook measures loading an archive of 20,000 logs (about half a
// million index entries) in one transaction.
func BenchmarkImportLogbook(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		st := benchStore(b)
		b.StartTimer()
		storetest.LoadLogbook(b, st, 20_000)
	}
}
