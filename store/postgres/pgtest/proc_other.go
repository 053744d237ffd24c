//go:build !linux

package pgtest

import (
	"errors"
	"os"
	"syscall"
)

// serverUser: outside Linux the server runs as this process's user, which must not
// be root.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() == 0 {
		return nil, errors.New("running as root: PostgreSQL refuses to; run the tests as another user")
	}
	return nil, nil
}

func procAttr(*syscall.Credential) *syscall.SysProcAttr { return nil }
