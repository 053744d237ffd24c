package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func logFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func contents(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConsoleLogHasNoColourInFiles: --log-format console into a file or the journal
// writes plain text; colour codes are for terminals.
func TestConsoleLogHasNoColourInFiles(t *testing.T) {
	t.Setenv("JOURNAL_STREAM", "")
	f := logFile(t)
	log, err := newLogger(f, "console", "info")
	if err != nil {
		t.Fatal(err)
	}
	log.Error().Str("k", "v").Msg("something broke")
	out := contents(t, f)
	if strings.Contains(out, "\x1b[") || !strings.Contains(out, "something broke") || !strings.Contains(out, "k=v") {
		t.Fatalf("console log in a file: %q", out)
	}
}

// TestJournalLinesCarryTheirPriority: connected to journald (JOURNAL_STREAM names
// the output's device and inode), each line starts with its syslog priority; any
// other output gets none.
func TestJournalLinesCarryTheirPriority(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			f := logFile(t)
			dev, ino, ok := fileID(f)
			if !ok {
				t.Fatal("no device and inode for a regular file")
			}
			t.Setenv("JOURNAL_STREAM", strconv.FormatUint(dev, 10)+":"+strconv.FormatUint(ino, 10))
			log, err := newLogger(f, format, "debug")
			if err != nil {
				t.Fatal(err)
			}
			log.Debug().Msg("d")
			log.Info().Msg("i")
			log.Warn().Msg("w")
			log.Error().Msg("e")
			lines := strings.Split(strings.TrimSpace(contents(t, f)), "\n")
			want := []string{"<7>", "<6>", "<4>", "<3>"}
			if len(lines) != len(want) {
				t.Fatalf("lines %q", lines)
			}
			for i, l := range lines {
				if !strings.HasPrefix(l, want[i]) || strings.HasPrefix(l[3:], "<") {
					t.Errorf("line %d %q, want prefix %s", i, l, want[i])
				}
			}

			other := logFile(t) // not the journal's stream
			log, _ = newLogger(other, format, "info")
			log.Error().Msg("e")
			if out := contents(t, other); strings.HasPrefix(out, "<") {
				t.Fatalf("priority prefix on a stream that is not the journal: %q", out)
			}
		})
	}
}
