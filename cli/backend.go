package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/store"
)

// adminCall runs an admin operation that answers once and returns its answer:
// through the running server's socket when there is one in the data directory, else
// in-process on the database (--store). It never waits more than about a second for a
// lock and never fails silently.
func adminCall[Resp any](ctx context.Context, g *globalOptions, op server.AdminOp[Resp]) (Resp, error) {
	var (
		out Resp
		n   int
	)
	err := adminStream(ctx, g, op, nil, func(v Resp) error {
		out, n = v, n+1
		return nil
	})
	if err == nil && n != 1 {
		err = fmt.Errorf("operation %s answered %d times, not once", op.OpName(), n)
	}
	return out, err
}

// adminStream runs an admin operation like adminCall, handing each of its answers to
// answer as it arrives (progress reports). In process, prepare (when not nil) first
// gives the Admin what the operation needs and returns its clean-up.
func adminStream[Resp any](ctx context.Context, g *globalOptions, op server.AdminOp[Resp], prepare func(*server.Admin) (func(), error), answer func(Resp) error) (err error) {
	dataDir := g.dataDir
	if err := checkIdle(g); err != nil {
		return err
	}
	if err := checkOpUTF8(op); err != nil {
		return err
	}
	body, err := json.Marshal(op)
	if err != nil {
		return err
	}
	if resp, ok := viaSocket(ctx, dataDir, op.OpName(), body); ok {
		defer func() { _ = resp.Body.Close() }() // read to its end or to the failure returned
		if resp.StatusCode != http.StatusOK {
			return adminProblem(resp)
		}
		dec := json.NewDecoder(resp.Body)
		for {
			var v Resp
			if err := dec.Decode(&v); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s through the admin socket: %w", op.OpName(), err)
			}
			if err := answer(v); err != nil {
				return err
			}
		}
		return trailerError(resp, op.OpName())
	}
	admin, closeDB, err := openAdmin(ctx, g)
	if err != nil {
		return err
	}
	defer closeInto(&err, "the database", closeDB)
	if prepare != nil {
		cleanup, err := prepare(admin)
		if err != nil {
			return err
		}
		defer cleanup()
	}
	return server.RunAdmin(ctx, admin, op, answer)
}

// adminDownload runs an admin operation that answers a byte stream (a backup) into
// w, through the running server's socket or else in-process, like adminCall. A
// failure after bytes were written is still returned: from the socket's error
// trailer or a cut-off body, or from the operation in process.
func adminDownload(ctx context.Context, g *globalOptions, op server.AdminDownload, w io.Writer) (err error) {
	dataDir := g.dataDir
	if err := checkIdle(g); err != nil {
		return err
	}
	if err := checkOpUTF8(op); err != nil {
		return err
	}
	body, err := json.Marshal(op)
	if err != nil {
		return err
	}
	if resp, ok := viaSocket(ctx, dataDir, op.OpName(), body); ok {
		defer func() { _ = resp.Body.Close() }() // read to its end or to the failure returned
		if resp.StatusCode != http.StatusOK {
			return adminProblem(resp)
		}
		if _, err := io.Copy(w, resp.Body); err != nil {
			return fmt.Errorf("%s through the admin socket: %w", op.OpName(), err)
		}
		return trailerError(resp, op.OpName())
	}
	admin, closeDB, err := openAdmin(ctx, g)
	if err != nil {
		return err
	}
	defer closeInto(&err, "the database", closeDB)
	return server.RunAdminDownload(ctx, admin, op, w)
}

// trailerError is the failure the server reported after its answer had begun.
func trailerError(resp *http.Response, op string) error {
	if msg := resp.Trailer.Get(server.AdminErrorTrailer); msg != "" {
		return fmt.Errorf("%s failed in the server: %s", op, printable(msg))
	}
	return nil
}

// viaSocket sends op to the running server's admin socket. ok is false when there is
// no socket, or nobody answers on it (one left over from a crashed server): the
// caller then runs op in-process.
func viaSocket(ctx context.Context, dataDir, op string, body []byte) (resp *http.Response, ok bool) {
	sock := server.AdminSocketPath(dataDir)
	if _, err := os.Stat(sock); err != nil {
		return nil, false
	}
	resp, err := socketCall(ctx, sock, op, body)
	return resp, err == nil
}

// openAdmin opens the database itself (no server answers on the socket) for an
// in-process admin operation; closeDB closes it. Like serve, it never opens a bbolt
// database while a restore is pending or running (openStore). A PostgreSQL database
// is shared: the operation runs beside any nodes serving it.
func openAdmin(ctx context.Context, g *globalOptions) (admin *server.Admin, closeDB func() error, err error) {
	st, _, err := openStore(ctx, g, nil, nil)
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return nil, nil, fmt.Errorf("%w; its admin socket %s does not answer either, so the other process may be hung", err, server.AdminSocketPath(g.dataDir))
		}
		return nil, nil, err
	}
	return server.NewAdmin(st, store.NewPasswords(store.DefaultArgon2, 1), g.dataDir), st.Close, nil
}

// checkIdle refuses a data directory a restore left half-way. A node of a shared
// database keeps only caches there, and restores do not switch it over.
func checkIdle(g *globalOptions) error {
	if _, pg := g.postgresDSN(); pg {
		return nil
	}
	return backup.CheckIdle(g.dataDir)
}

func socketClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			d := net.Dialer{Timeout: 2 * time.Second}
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

func socketCall(ctx context.Context, sock, op string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://gardend/ops/"+op, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return socketClient(sock).Do(req)
}

// adminProblem is the error of an answer other than 200: the problem's detail.
func adminProblem(resp *http.Response) error {
	var p struct {
		Detail string            `json:"detail"`
		Errors map[string]string `json:"errors"`
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil && json.Unmarshal(data, &p) == nil && p.Detail != "" {
		return errors.New(printable(p.Detail))
	}
	return fmt.Errorf("admin socket answered %s", resp.Status)
}

// requireDatabase refuses to create an empty database just to inspect it, and a
// data directory a restore left half-way (its database may be moved aside). A
// PostgreSQL database is the operator's to create; openStore only migrates it.
func requireDatabase(g *globalOptions) error {
	if err := g.checkStore(); err != nil {
		return err
	}
	if _, pg := g.postgresDSN(); pg {
		return nil
	}
	if err := backup.CheckIdle(g.dataDir); err != nil {
		return err
	}
	path := g.boltPath()
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no gardend database at %s: pass --data with the directory serve uses", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot read %s: permission denied: run as the user that owns the data directory", path)
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot read %s: %w: check --data", path, err)
	}
}
