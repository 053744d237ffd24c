//go:build unix

package cli_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store/bolt"
)

// Crash test shape. GARDEND_CRASH_ROUNDS sets the rounds (CI runs more);
// GARDEND_CRASH_SEED replays a run's random choices.
const (
	crashDefaultRounds = 5
	crashWorkers       = 4
	// The kill comes this long after the load starts, uniformly at random: early
	// enough to land in registrations, late enough for hundreds of writes.
	crashKillMin = 150 * time.Millisecond
	crashKillMax = 1500 * time.Millisecond
	// crashRoundMargin is left before the test's deadline (-timeout) when a round
	// starts: a long GARDEND_CRASH_ROUNDS run ends early with a report, not a panic.
	crashRoundMargin = 30 * time.Second
	// crashStartTimeout bounds the wait for the "listening" line.
	crashStartTimeout = 30 * time.Second
)

// TestCrashSafety builds the real binary and, round after round on the same data
// directory, drives concurrent writes at it over HTTP, kills it with SIGKILL at a
// random moment and restarts it. After each kill the database must pass bbolt's and
// the index check with every referenced image file present; after each restart every
// acknowledged write must be there as acknowledged (a write in flight at the kill may
// or may not be), nothing unwritten may appear, and the start-up sweep must have left
// exactly the referenced image files.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds gardend and kills it repeatedly; skipped with -short")
	}
	rounds := crashDefaultRounds
	if v := os.Getenv("GARDEND_CRASH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			t.Fatalf("GARDEND_CRASH_ROUNDS=%q: want a number from 1 to 1000", v)
		}
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("GARDEND_CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("GARDEND_CRASH_SEED=%q: want an unsigned integer", v)
		}
		seed = n
	}
	t.Logf("crash test: %d rounds, GARDEND_CRASH_SEED=%d", rounds, seed)
	start := time.Now()
	bin := buildGardend(t)
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))

	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(seed, 0xc4a5))
	ledger := newCrashLedger(t, rng, dir)
	proc := startGardend(t, bin, dir)
	survived := 0
	var totals crashTotals
	defer func() {
		t.Logf("crash rounds: %d run, %d survived; %s; of the writes in flight, %d were found applied after the restart and %d not",
			totals.rounds, survived, totals, ledger.applied, ledger.notApplied)
	}()
	for round := 1; round <= rounds; round++ {
		if deadline, ok := t.Deadline(); ok && time.Until(deadline) < crashRoundMargin {
			t.Logf("the test's -timeout is near: stopping after %d rounds", round-1)
			break
		}
		totals.rounds++
		kill := crashKillMin + time.Duration(rng.Int64N(int64(crashKillMax-crashKillMin)))
		load := ledger.load(round, proc.base, kill, proc.kill)
		proc.waitKilled()

		leftovers := checkCrashedStore(t, dir)
		proc = startGardend(t, bin, dir)
		swept := proc.swept()
		if swept != leftovers {
			t.Errorf("round %d: the crash left %d temporary or unreferenced image files, the restart swept %d", round, leftovers, swept)
		}
		totals.add(load, leftovers)
		ledger.verify(round, proc.base)
		if t.Failed() {
			t.Logf("round %d failed; logs of the restarted gardend:\n%s", round, proc.logTail())
			return
		}
		survived++
		t.Logf("round %d: killed after %v: %s; %d files swept on restart", round, kill.Round(time.Millisecond), load, swept)
	}

	// A clean stop, then the checks once more on the database the server left.
	proc.stop()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkStore(t, "after the last round", st, dir)
}

// crashTotals adds up the rounds for the report.
type crashTotals struct {
	rounds          int
	acked, inFlight int64
	leftovers       int
}

func (c *crashTotals) add(l loadResult, leftovers int) {
	c.acked += l.acked
	c.inFlight += l.inFlight
	c.leftovers += leftovers
}

func (c crashTotals) String() string {
	return fmt.Sprintf("%d acknowledged writes checked, %d writes unanswered at the kills, %d leftover image files swept",
		c.acked, c.inFlight, c.leftovers)
}

// buildGardend compiles the module's main package, once per test binary, into the
// directory TestMain removes at the end (binDir).
func buildGardend(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("the test builds gardend and needs the go command in PATH: %v", err)
			return
		}
		bin := filepath.Join(binDir, "gardend")
		cmd := exec.Command(goTool, "build", "-o", bin, "github.com/gardend/gardend")
		cmd.Dir = ".." // the module root
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.path = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// built is the binary buildGardend made.
var built struct {
	once sync.Once
	path string
	err  error
}

// gardendProc is one running `gardend serve`.
type gardendProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string // http://host:port
	// logsDone is closed when stderr reaches EOF, i.e. the process has gone.
	logsDone chan struct{}

	mu    sync.Mutex
	lines []string // the last log lines, for failure reports
	// sweptFiles is the number of image paths the start-up sweep reported.
	sweptFiles int
	killed     bool
}

const logLinesKept = 40

// startGardend runs `gardend serve` on dir (with extra flags) with a free port and
// waits for its "listening" log line.
func startGardend(t *testing.T, bin, dir string, extra ...string) *gardendProc {
	t.Helper()
	args := append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0", "--log-format", "json", "--shutdown-timeout", "5s"}, extra...)
	cmd := exec.Command(bin, args...)
	// GARDEND_* variables of the environment would change flags (GARDEND_DATA, …).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GARDEND_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &gardendProc{t: t, cmd: cmd, logsDone: make(chan struct{})}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.logsDone
			cmd.Wait()
		}
	})
	addr := make(chan string, 1)
	go p.readLogs(stderr, addr)
	select {
	case a := <-addr:
		p.base = "http://" + a
	case <-p.logsDone:
		cmd.Wait()
		t.Fatalf("gardend exited before listening (%v):\n%s", cmd.ProcessState, p.logTail())
	case <-time.After(crashStartTimeout):
		t.Fatalf("gardend did not log \"listening\" within %v:\n%s", crashStartTimeout, p.logTail())
	}
	return p
}

// readLogs keeps the last log lines, reports the listening address and counts what
// the start-up sweep removed.
func (p *gardendProc) readLogs(r io.Reader, addr chan<- string) {
	defer close(p.logsDone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		var entry struct {
			Message    string   `json:"message"`
			Addr       string   `json:"addr"`
			ImagePaths []string `json:"image_paths"`
		}
		json.Unmarshal([]byte(line), &entry)
		p.mu.Lock()
		p.lines = append(p.lines, line)
		if len(p.lines) > logLinesKept {
			p.lines = p.lines[1:]
		}
		if entry.Message == "swept image files no garden refers to" {
			p.sweptFiles += len(entry.ImagePaths)
		}
		p.mu.Unlock()
		if entry.Message == "listening" && entry.Addr != "" {
			addr <- entry.Addr
		}
	}
	io.Copy(io.Discard, r)
}

func (p *gardendProc) logTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

func (p *gardendProc) swept() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sweptFiles
}

// kill sends SIGKILL: no deferred function, no shutdown, no flush runs.
func (p *gardendProc) kill() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Errorf("kill -9 gardend: %v", err)
	}
}

// waitKilled waits for the killed process and checks that SIGKILL is what ended it
// (not an exit of its own before the kill).
func (p *gardendProc) waitKilled() {
	p.t.Helper()
	<-p.logsDone
	err := p.cmd.Wait()
	var ee *exec.ExitError
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !errors.As(err, &ee) || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		p.t.Fatalf("gardend did not die of SIGKILL (%v):\n%s", p.cmd.ProcessState, p.logTail())
	}
}

// stop asks for a graceful shutdown (SIGTERM) and expects exit status 0.
func (p *gardendProc) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.logsDone:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		p.t.Fatalf("gardend did not stop within 20s of SIGTERM:\n%s", p.logTail())
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("gardend after SIGTERM: %v\n%s", err, p.logTail())
	}
}

// checkCrashedStore checks the database a kill left, read-only, before anything
// repairs it, and counts the temporary and unreferenced image files the kill left for
// the sweep.
func checkCrashedStore(t *testing.T, dir string) (leftovers int) {
	t.Helper()
	st, err := bolt.Open(filepath.Join(dir, bolt.FileName), bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open the database after the kill: %v", err)
	}
	defer st.Close()
	paths := checkStore(t, "after the kill", st, dir)
	for _, name := range imageFiles(t, dir) {
		if strings.HasPrefix(name, ".tmp-") || !paths[server.ImageDirName+"/"+name] {
			leftovers++
		}
	}
	return leftovers
}

// checkStore runs both consistency checks and checks that every image path a garden
// refers to is a file; it returns the paths.
func checkStore(t *testing.T, when string, st *bolt.Store, dir string) map[string]bool {
	t.Helper()
	if err := st.Check(); err != nil {
		t.Errorf("%s: bbolt check: %v", when, err)
	}
	if err := st.CheckIndexes(); err != nil {
		t.Errorf("%s: index check: %v", when, err)
	}
	paths, err := st.ImagePaths()
	if err != nil {
		t.Fatalf("%s: image paths: %v", when, err)
	}
	for p := range paths {
		info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil || !info.Mode().IsRegular() {
			t.Errorf("%s: a garden refers to %s, which is not a file: %v", when, p, err)
		}
	}
	return paths
}

// imageFiles lists the image directory's file names.
func imageFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, server.ImageDirName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
