package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/term"
)

// newLogger writes JSON lines, or human-friendly lines when asked or on a terminal.
// Colours only ever go to a terminal. Under systemd with the output connected to the
// journal, each line starts with its syslog priority (<3> for an error, …), which
// journald strips and records, so `journalctl -p warning` finds warnings.
func newLogger(w io.Writer, format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	tty := isTerminal(w)
	switch format {
	case "":
		format = "json"
		if tty {
			format = "console"
		}
	case "json", "console":
	default:
		return zerolog.Logger{}, fmt.Errorf("--log-format %q: use json or console", format)
	}
	if _, ok := w.(*os.File); !ok {
		// Goroutines log at once; a file's writes are safe for that, other writers
		// (a command's error output in tests, a buffer) may not be.
		w = zerolog.SyncWriter(w)
	}
	out := w
	if format == "console" {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !tty}
	}
	if toJournal(w) {
		out = &journalWriter{w: w, next: out}
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// toJournal reports whether w is the stream systemd connected to the journal: it sets
// JOURNAL_STREAM to that stream's "device:inode".
func toJournal(w io.Writer) bool {
	want := os.Getenv("JOURNAL_STREAM")
	f, ok := w.(*os.File)
	if want == "" || !ok {
		return false
	}
	dev, ino, ok := fileID(f)
	return ok && want == strconv.FormatUint(dev, 10)+":"+strconv.FormatUint(ino, 10)
}

// journalWriter prefixes each line with its syslog priority (sd-daemon(3)).
type journalWriter struct {
	mu   sync.Mutex // the prefix and its line are one unit
	w    io.Writer  // the stream the prefix goes to
	next io.Writer  // the line's formatter (w itself for JSON)
}

func (j *journalWriter) Write(p []byte) (int, error) { return j.WriteLevel(zerolog.NoLevel, p) }

func (j *journalWriter) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := io.WriteString(j.w, syslogPriority(l)); err != nil {
		return 0, err
	}
	return j.next.Write(p)
}

// syslogPriority is journald's "<N>" prefix for a zerolog level.
func syslogPriority(l zerolog.Level) string {
	switch l {
	case zerolog.TraceLevel, zerolog.DebugLevel:
		return "<7>"
	case zerolog.WarnLevel:
		return "<4>"
	case zerolog.ErrorLevel:
		return "<3>"
	case zerolog.FatalLevel, zerolog.PanicLevel:
		return "<2>"
	}
	return "<6>"
}
