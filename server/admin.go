package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gardend/gardend/server/pointcloud"
	"github.com/gardend/gardend/store"
)

// Admin carries out the CLI's operations. The CLI runs it in-process when no server
// holds the database, and through the admin socket when one does, so both paths share
// one implementation.
type Admin struct {
	store store.Backend
	pw    *store.Passwords
	// dataDir is the node's data directory (backups read it).
	dataDir string
	// afterRemove is the server's clean-up after a deletion; nil when the CLI runs
	// without a server, whose start-up sweep then deletes unreferenced files.
	afterRemove func(ctx context.Context, removed store.Removed)
	// clouds downloads point clouds: the server's pool, or one of UseSpatial's that
	// runs only while an operation needs it (runClouds). nil without a spatial server.
	clouds    *pointcloud.Pool
	runClouds bool

	// backups is shared by the admin socket and GET /admin/backup.
	backups *backupState
	// sync is the server's sync between sites, nil without one (or without a server).
	sync syncer
}

// NewAdmin binds the operations to a store and the node's data directory.
func NewAdmin(st store.Backend, pw *store.Passwords, dataDir string) *Admin {
	return &Admin{store: st, pw: pw, dataDir: dataDir, backups: newBackupState()}
}

// Each admin operation is a request type (adminops.go lists them) that knows its name
// on the admin socket and the type of its answers. Most answer one value; those that
// report progress answer a series (NDJSON on the socket, one line each). A download
// (a backup) answers bytes instead.

// AdminOp is the request of an operation whose answers are Resp values.
type AdminOp[Resp any] interface {
	// OpName names the operation on the admin socket: POST /ops/<name>.
	OpName() string
	// run carries the operation out, handing each answer to answer in turn.
	run(ctx context.Context, a *Admin, answer func(Resp) error) error
}

// AdminDownload is the request of an operation whose answer is a byte stream.
type AdminDownload interface {
	OpName() string
	// MediaType is the stream's Content-Type on the admin socket.
	MediaType() string
	// start reserves what the download needs: an error here is the whole answer.
	// write then sends it, and must be called once.
	start(ctx context.Context, a *Admin) (write func(io.Writer) error, err error)
}

// RunAdmin carries op out in this process, handing each answer to answer.
func RunAdmin[Resp any](ctx context.Context, a *Admin, op AdminOp[Resp], answer func(Resp) error) error {
	return op.run(ctx, a, answer)
}

// RunAdminDownload carries op out in this process, writing its stream to w.
func RunAdminDownload(ctx context.Context, a *Admin, op AdminDownload, w io.Writer) error {
	write, err := op.start(ctx, a)
	if err != nil {
		return err
	}
	return write(w)
}

// decodeArgs reads an operation's JSON arguments; malformed ones are invalid input.
func decodeArgs(raw []byte, dst any) error {
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%w: arguments: %v", store.ErrInvalid, err)
	}
	return nil
}
