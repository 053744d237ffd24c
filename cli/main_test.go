package cli_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/gardend/gardend/store/postgres"
	"github.com/gardend/gardend/store/postgres/pgtest"
)

// binDir holds the gardend binary the tests that run real processes build once.
var binDir string

// TestMain builds nothing itself: it gives buildGardend a directory, runs the tests,
// stops the PostgreSQL server the tests on it started, and removes the directory.
func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "gardend-cli-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := pgtest.Run(m, func(dsn string) error {
		st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
		if err != nil {
			return err
		}
		return st.Close()
	})
	os.RemoveAll(binDir)
	os.Exit(code)
}
