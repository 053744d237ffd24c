package sitesync

import (
	"testing"

	"github.com/gardend/gardend/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
