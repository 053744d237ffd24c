package postgres_test

import (
	"testing"

	"github.com/gardend/gardend/store/storetest"
)

// BenchmarkListLogs: a page of 50 of 100,000 logs (storetest.BenchmarkListLogs).
func BenchmarkListLogs(b *testing.B) { storetest.BenchmarkListLogs(b, openNodes(b, nil, 1)[0]) }

// BenchmarkCreateLog: one log, committed (storetest.BenchmarkCreateLog).
func BenchmarkCreateLog(b *testing.B) { storetest.BenchmarkCreateLog(b, openNodes(b, nil, 1)[0]) }
