// Command compare measures two gardend builds side by side in one run: an older
// revision (default 253b19c, the previous release) and the working tree. It builds
// both with the same Go release (the toolchain line of the working tree's go.mod), so
// the comparison is of code, not compiler; seeds each its own data directory through
// the API; then, round after round, alternates the two binaries over the same
// measurements so that drift on a shared machine falls on both, and reports medians.
//
//	go run ./docs/bench/compare -rounds 5
//
// Measures per round and binary: time from exec to the first 200 of GET /healthz, the
// resident memory idle after start, GET /gardens (10 visible) p50 on one connection,
// and GET /companies on 256 connections (req/s and p99). wrk must be installed. See
// docs/bench/README.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	o := options{}
	flag.StringVar(&o.baseRev, "base", "253b19c", "revision to compare against (git)")
	flag.StringVar(&o.baseBin, "base-bin", "", "use this binary as the base instead of building -base")
	flag.StringVar(&o.headBin, "head-bin", "", "use this binary as the head instead of building the working tree")
	flag.StringVar(&o.headFlags, "head-flags", "--max-conns-per-addr 1024",
		"extra serve flags for the working tree (space-separated); the default lifts the per-address connection cap, which wrk's 256 connections from one address exceed")
	flag.StringVar(&o.baseFlags, "base-flags", "", "extra serve flags for the base (space-separated)")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds; each runs both binaries, in alternating order")
	flag.DurationVar(&o.loadFor, "duration", 10*time.Second, "duration of each wrk run")
	flag.IntVar(&o.conns, "conns", 256, "connections of the GET /companies run")
	flag.StringVar(&o.work, "work", "", "work directory (default: a new temporary one, removed at the end)")
	flag.BoolVar(&o.sizes, "sizes", false, "also print each binary's size by module (go tool nm)")
	flag.BoolVar(&o.startOnly, "start-only", false, "measure start-up and idle memory only (no load runs)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

type options struct {
	baseRev, baseBin, headBin, headFlags, baseFlags, work string
	rounds, conns                                         int
	loadFor                                               time.Duration
	sizes, startOnly                                      bool
}

// subject is one binary under test with its own data directory and port.
type subject struct {
	name, bin, data string
	port            int
	flags           []string
	token           string
	samples         map[string][]float64
}

// measure names, in table order, with their unit and whether higher is better.
var measures = []struct {
	key, label, unit string
	higherBetter     bool
}{
	{"rps", "GET /companies, 256 connections, req/s", "req/s", true},
	{"p99", "same, p99", "ms", false},
	{"cpu", "same, server CPU per request", "µs", false},
	{"rss", "RSS idle", "MiB", false},
	{"start", "cold start to first 200", "ms", false},
	{"gardens50", "GET /gardens, 10 visible, p50", "ms", false},
}

func run(o options) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("wrk is not installed (apt-get install wrk)")
	}
	work := o.work
	if work == "" {
		d, err := os.MkdirTemp("", "gardend-compare-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(d) }() // a temporary directory: best effort
		work = d
	}
	root, err := gitRoot()
	if err != nil {
		return err
	}
	toolchain, err := goToolchain(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	base, head := o.baseBin, o.headBin
	if base == "" {
		base = filepath.Join(work, "gardend-base")
		if err := buildRevision(root, o.baseRev, filepath.Join(work, "src-base"), base, toolchain); err != nil {
			return err
		}
	}
	if head == "" {
		head = filepath.Join(work, "gardend-head")
		if err := build(root, head, toolchain); err != nil {
			return err
		}
	}
	subjects := []*subject{
		{name: o.baseRev, bin: base, data: filepath.Join(work, "data-base"), port: 18471, flags: strings.Fields(o.baseFlags)},
		{name: "working tree", bin: head, data: filepath.Join(work, "data-head"), port: 18472, flags: strings.Fields(o.headFlags)},
	}
	if o.baseBin != "" {
		subjects[0].name = filepath.Base(o.baseBin)
	}
	for _, s := range subjects {
		st, err := os.Stat(s.bin)
		if err != nil {
			return err
		}
		fmt.Printf("%-14s %s: %.2f MiB\n", s.name, s.bin, float64(st.Size())/(1<<20))
		s.samples = map[string][]float64{}
		if err := s.seed(); err != nil {
			return fmt.Errorf("%s: seeding: %w", s.name, err)
		}
	}
	if o.sizes {
		if o.baseBin != "" {
			return errors.New("-sizes builds from source: leave out -base-bin")
		}
		if err := printSizes(o.baseRev, filepath.Join(work, "src-base"), work, toolchain); err != nil {
			return err
		}
		if err := printSizes("working tree", root, work, toolchain); err != nil {
			return err
		}
	}
	for r := range o.rounds {
		order := subjects
		if r%2 == 1 {
			order = []*subject{subjects[1], subjects[0]}
		}
		for _, s := range order {
			if err := s.round(o); err != nil {
				return fmt.Errorf("%s, round %d: %w", s.name, r+1, err)
			}
			fmt.Printf("round %d %-14s", r+1, s.name)
			for _, m := range measures {
				if v := s.samples[m.key]; len(v) > 0 {
					fmt.Printf("  %s %s", m.key, format(v[len(v)-1]))
				}
			}
			fmt.Println()
		}
	}
	fmt.Printf("\nmedians of %d rounds (%s each load run, go %s for both):\n\n", o.rounds, o.loadFor, toolchain)
	fmt.Printf("| measure | %s | %s | ratio |\n|---|---|---|---|\n", subjects[0].name, subjects[1].name)
	for _, m := range measures {
		if len(subjects[0].samples[m.key]) == 0 {
			continue
		}
		a, b := median(subjects[0].samples[m.key]), median(subjects[1].samples[m.key])
		ratio := b / a
		fmt.Printf("| %s | %s %s | %s %s | %.2f× %s |\n", m.label, format(a), m.unit, format(b), m.unit, ratio, verdict(ratio, m.higherBetter))
	}
	return nil
}

func verdict(ratio float64, higherBetter bool) string {
	if (ratio >= 1) == higherBetter || ratio == 1 {
		return "(as good or better)"
	}
	return "(worse)"
}

func format(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func gitRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse: %w (run inside the repository)", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// goToolchain reads the toolchain line of go.mod (e.g. go1.27.3).
func goToolchain(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^toolchain\s+(\S+)`).FindSubmatch(b)
	if m == nil {
		return "", errors.New("go.mod has no toolchain line")
	}
	return string(m[1]), nil
}

// build builds the module at dir as a release binary: static, trimmed, stripped, with
// the build tags of that revision's release recipe.
func build(dir, out, toolchain string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-tags", releaseTags(dir), "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN="+toolchain, "GOFLAGS=-mod=mod")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build in %s: %w", dir, err)
	}
	return nil
}

// buildRevision extracts rev with git archive (no worktree to clean up) and builds it.
func buildRevision(root, rev, src, out, toolchain string) error {
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	archive := exec.Command("git", "-C", root, "archive", rev)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	archive.Stderr, untar.Stderr = os.Stderr, os.Stderr
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive %s: %w", rev, err)
	}
	if err := untar.Wait(); err != nil {
		return err
	}
	return build(src, out, toolchain)
}

// start runs the binary's server and waits for its first 200 of GET /healthz,
// returning the process and the time from exec to that answer.
func (s *subject) start() (*exec.Cmd, time.Duration, error) {
	if dialable(s.addr()) {
		return nil, 0, fmt.Errorf("something already listens on %s", s.addr())
	}
	args := append([]string{"serve", "--data", s.data, "--addr", s.addr(), "--log-format", "json"}, s.flags...)
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=", "JOURNAL_STREAM=")
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = devnull.Close() }() // the child has its own descriptor
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = devnull, &limitedBuffer{buf: &stderr, max: 1 << 16}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
	url := "http://" + s.addr() + "/healthz"
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	for {
		res, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return cmd, time.Since(begin), nil
			}
		}
		if time.Since(begin) > 30*time.Second {
			stop(cmd)
			return nil, 0, fmt.Errorf("no 200 from %s within 30 s (stderr: %s)", url, stderr.String())
		}
		time.Sleep(200 * time.Microsecond)
	}
}

type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (s *subject) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// seed creates one account, 10 companies and one garden in each through the API.
func (s *subject) seed() error {
	if err := os.RemoveAll(s.data); err != nil {
		return err
	}
	cmd, _, err := s.start()
	if err != nil {
		return err
	}
	defer stop(cmd)
	var reg struct{ Token string }
	if err := s.call("POST", "/register", "", map[string]string{
		"username": "bench", "password": "bench-password-1", "first_name": "Ben", "last_name": "Ch", "email": "bench@example.org",
	}, &reg); err != nil {
		return err
	}
	s.token = reg.Token
	for i := range 10 {
		var c struct{ ID uint64 }
		if err := s.call("POST", "/companies", s.token, map[string]string{"name": fmt.Sprintf("Company %d", i+1)}, &c); err != nil {
			return err
		}
		if err := s.call("POST", fmt.Sprintf("/companies/%d/gardens", c.ID), s.token, map[string]string{"name": fmt.Sprintf("Garden %d", i+1)}, nil); err != nil {
			return err
		}
	}
	var gs []json.RawMessage
	if err := s.call("GET", "/gardens", s.token, nil, &gs); err != nil {
		return err
	}
	if len(gs) != 10 {
		return fmt.Errorf("GET /gardens lists %d gardens, want 10", len(gs))
	}
	return nil
}

func (s *subject) call(method, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, "http://"+s.addr()+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }() // read to the end below
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, res.Status, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// round starts the server cold, measures, and stops it.
func (s *subject) round(o options) error {
	cmd, startup, err := s.start()
	if err != nil {
		return err
	}
	defer stop(cmd)
	s.samples["start"] = append(s.samples["start"], ms(startup))
	time.Sleep(2 * time.Second)
	rss, err := rssMiB(cmd.Process.Pid)
	if err != nil {
		return err
	}
	s.samples["rss"] = append(s.samples["rss"], rss)
	if o.startOnly {
		return nil
	}
	auth := "Authorization: Token " + s.token
	one, err := runWrk("-t1", "-c1", "-d"+dur(o.loadFor/2), "--latency", "-H", auth, "http://"+s.addr()+"/gardens")
	if err != nil {
		return err
	}
	s.samples["gardens50"] = append(s.samples["gardens50"], one.p50)
	cpuBefore, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return err
	}
	many, err := runWrk("-t2", "-c"+strconv.Itoa(o.conns), "-d"+dur(o.loadFor), "--latency", "-H", auth, "http://"+s.addr()+"/companies")
	if err != nil {
		return err
	}
	cpuAfter, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return err
	}
	s.samples["cpu"] = append(s.samples["cpu"], float64(cpuAfter-cpuBefore)/float64(time.Microsecond)/many.requests)
	s.samples["rps"] = append(s.samples["rps"], many.rps)
	s.samples["p99"] = append(s.samples["p99"], many.p99)
	return nil
}

// releaseTags are the build tags the revision at dir builds its releases with
// (.ci/release-tags, since a revision without the file: none).
func releaseTags(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, ".ci", "release-tags"))
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b)), ",")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func dur(d time.Duration) string { return strconv.Itoa(max(1, int(d/time.Second))) + "s" }

func rssMiB(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}

type wrkResult struct{ rps, p50, p99, requests float64 }

// cpuTime is the user and system CPU time the process used so far.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces) in parentheses; utime and
	// stime are the 14th and 15th fields, in clock ticks (100 per second on Linux).
	_, rest, _ := bytes.Cut(b, []byte(") "))
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return 0, errors.New("short /proc/PID/stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * (time.Second / 100), nil
}

var (
	wrkRPS     = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	wrkCount   = regexp.MustCompile(`(\d+) requests in`)
	wrkPct     = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$`)
	wrkNon2xx  = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
	wrkSockErr = regexp.MustCompile(`Socket errors: (.*)`)
)

func runWrk(args ...string) (wrkResult, error) {
	out, err := exec.Command("wrk", args...).CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	var r wrkResult
	m := wrkRPS.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("wrk printed no Requests/sec: %s", out)
	}
	r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	if m := wrkCount.FindSubmatch(out); m != nil {
		r.requests, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	for _, p := range wrkPct.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(p[2]), 64)
		switch string(p[3]) {
		case "us":
			v /= 1000
		case "s":
			v *= 1000
		}
		if string(p[1]) == "50" {
			r.p50 = v
		} else {
			r.p99 = v
		}
	}
	if m := wrkNon2xx.FindSubmatch(out); m != nil {
		return r, fmt.Errorf("wrk saw %s answers that were not 2xx: %s", m[1], out)
	}
	if m := wrkSockErr.FindSubmatch(out); m != nil {
		fmt.Fprintf(os.Stderr, "wrk socket errors (%s): %s\n", strings.Join(args[:3], " "), m[1])
	}
	return r, nil
}

// dialable reports whether something listens at addr (a port left over by a crash).
func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
	if err == nil {
		_ = c.Close()
		return true
	}
	return false
}
