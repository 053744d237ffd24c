package cli

import "fmt"

// closeInto runs close (of a database or file that was written) for a defer, and
// keeps its error in *err when nothing went wrong before: a command whose writes do
// not close cleanly must not report success.
func closeInto(err *error, what string, close func() error) {
	if cerr := close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close %s: %w", what, cerr)
	}
}
