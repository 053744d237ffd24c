package metrics

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// The process families, with the names the Prometheus client gives them (process_*),
// read from /proc/self.

// clockTicks is USER_HZ, the unit of the CPU times in /proc/self/stat: 100 on every
// Linux architecture gardend is built for.
const clockTicks = 100

func writeProcess(e *expo) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return
	}
	// The fields after the command, which is in parentheses and may hold anything.
	_, rest, ok := bytes.Cut(stat, []byte(") "))
	if !ok {
		return
	}
	f := strings.Fields(string(rest))
	if len(f) < 22 {
		return
	}
	num := func(i int) float64 { // i is the field's number in proc(5), from 1
		v, _ := strconv.ParseFloat(f[i-3], 64)
		return v
	}
	e.family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.")
	e.sample("process_cpu_seconds_total", "", (num(14)+num(15))/clockTicks)
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		e.family("process_open_fds", "gauge", "Number of open file descriptors.")
		e.sample("process_open_fds", "", float64(len(fds)))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		e.family("process_max_fds", "gauge", "Maximum number of open file descriptors.")
		e.sample("process_max_fds", "", float64(lim.Cur))
	}
	e.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
	e.sample("process_resident_memory_bytes", "", num(24)*float64(os.Getpagesize()))
	if boot := bootTime(); boot > 0 {
		e.family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.")
		e.sample("process_start_time_seconds", "", boot+num(22)/clockTicks)
	}
	e.family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.")
	e.sample("process_virtual_memory_bytes", "", num(23))
	if syscall.Getrlimit(syscall.RLIMIT_AS, &lim) == nil {
		e.family("process_virtual_memory_max_bytes", "gauge", "Maximum amount of virtual memory available in bytes.")
		e.sample("process_virtual_memory_max_bytes", "", float64(lim.Cur)) // RLIM_INFINITY as is, as the Prometheus client does
	}
}

// bootTime is the system's boot time in seconds since the epoch (btime of
// /proc/stat), 0 when unknown.
func bootTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			t, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return t
		}
	}
	return 0
}
