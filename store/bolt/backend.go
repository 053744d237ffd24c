package bolt

import (
	"github.com/gardend/gardend/store"
)

var _ store.Backend = (*Store)(nil)
