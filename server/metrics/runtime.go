package metrics

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The Go runtime's families, with the names and meaning the Prometheus Go client
// gives them (go_*), so that existing dashboards keep working. They are read from
// runtime/metrics, which does not stop the world as runtime.ReadMemStats does.

// runtimeSamples are the runtime/metrics read at each scrape, in this order.
var runtimeSamples = []string{
	"/sched/goroutines:goroutines",        // 0
	"/sched/threads/total:threads",        // 1
	"/gc/heap/allocs:bytes",               // 2
	"/gc/heap/allocs:objects",             // 3
	"/gc/heap/tiny/allocs:objects",        // 4
	"/gc/heap/frees:objects",              // 5
	"/memory/classes/heap/objects:bytes",  // 6
	"/memory/classes/heap/unused:bytes",   // 7
	"/memory/classes/heap/free:bytes",     // 8
	"/memory/classes/heap/released:bytes", // 9
	"/gc/heap/objects:objects",            // 10
	"/memory/classes/heap/stacks:bytes",   // 11
	"/memory/classes/os-stacks:bytes",     // 12
	"/memory/classes/total:bytes",         // 13
	"/gc/heap/goal:bytes",                 // 14
	"/sched/gomaxprocs:threads",           // 15
	"/gc/gogc:percent",                    // 16
	"/gc/gomemlimit:bytes",                // 17
}

func writeRuntime(e *expo) {
	s := make([]metrics.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		s[i].Name = name
	}
	metrics.Read(s)
	v := func(i int) float64 {
		switch s[i].Value.Kind() {
		case metrics.KindUint64:
			return float64(s[i].Value.Uint64())
		case metrics.KindFloat64:
			return s[i].Value.Float64()
		}
		return 0 // not supported by this Go release
	}
	gauge := func(name, help string, value float64) {
		e.family(name, "gauge", help)
		e.sample(name, "", value)
	}
	counter := func(name, help string, value float64) {
		e.family(name, "counter", help)
		e.sample(name, "", value)
	}

	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	e.family("go_gc_duration_seconds", "summary", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.")
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		e.sample("go_gc_duration_seconds", "", gc.PauseQuantiles[i].Seconds(), "quantile", q)
	}
	e.sample("go_gc_duration_seconds", "_sum", gc.PauseTotal.Seconds())
	e.sample("go_gc_duration_seconds", "_count", float64(gc.NumGC))
	gauge("go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100.", v(16))
	gauge("go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64.", v(17))
	gauge("go_goroutines", "Number of goroutines that currently exist.", v(0))
	e.family("go_info", "gauge", "Information about the Go environment.")
	e.sample("go_info", "", 1, "version", runtime.Version())

	heapObjects, heapUnused, heapFree, heapReleased := v(6), v(7), v(8), v(9)
	gauge("go_memstats_alloc_bytes", "Number of heap bytes allocated and currently in use.", heapObjects)
	counter("go_memstats_alloc_bytes_total", "Total number of heap bytes allocated, even if freed.", v(2))
	counter("go_memstats_frees_total", "Total number of heap objects frees.", v(5)+v(4))
	gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", heapObjects)
	gauge("go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", heapFree+heapReleased)
	gauge("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", heapObjects+heapUnused)
	gauge("go_memstats_heap_objects", "Number of currently allocated objects.", v(10))
	gauge("go_memstats_heap_released_bytes", "Number of heap bytes released to OS.", heapReleased)
	gauge("go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system.", heapObjects+heapUnused+heapFree+heapReleased)
	if gc.NumGC > 0 {
		gauge("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", float64(gc.LastGC.UnixNano())/1e9)
	}
	counter("go_memstats_mallocs_total", "Total number of heap objects allocated.", v(3)+v(4))
	gauge("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", v(14))
	gauge("go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments.", v(11))
	gauge("go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator.", v(11)+v(12))
	gauge("go_memstats_sys_bytes", "Number of bytes obtained from system.", v(13))
	gauge("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously.", v(15))
	gauge("go_threads", "Number of OS threads created.", v(1))
}
