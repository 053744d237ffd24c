package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestStageBar: on a terminal the bar is redrawn in place, once per visible change,
// and ends with a newline; elsewhere it prints nothing.
func TestStageBar(t *testing.T) {
	var buf bytes.Buffer
	b := &stageBar{w: &buf, tty: true}
	b.draw("dump", 1<<19, 1<<20)
	b.draw("dump", 1<<19, 1<<20) // no change: not drawn again
	b.draw("images", 3, 3)
	b.finish()
	want := "\rdump    [###############               ]  50%  0.5 MiB\x1b[K" +
		"\rimages  [##############################] 100%  3/3\x1b[K\n"
	if buf.String() != want {
		t.Errorf("bar output\n%q\nwant\n%q", buf.String(), want)
	}
	buf.Reset()
	quiet := &stageBar{w: &buf}
	quiet.draw("dump", 1, 2)
	quiet.finish()
	if buf.Len() != 0 || strings.Contains(buf.String(), "dump") {
		t.Errorf("a bar off a terminal printed %q", buf.String())
	}
}
