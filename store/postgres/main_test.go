package postgres

import (
	"context"
	"testing"

	"github.com/gardend/gardend/store/postgres/pgtest"
)

// TestMain starts one PostgreSQL for the package's tests, with a template database
// that has the schema, so that each test's database is a copy instead of a fresh
// migration.
func TestMain(m *testing.M) {
	pgtest.Main(m, func(dsn string) error {
		st, err := Open(context.Background(), dsn, Options{})
		if err != nil {
			return err
		}
		return st.Close()
	})
}
