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
	"path/filepath"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/server/backup"
	"github.com/gardend/gardend/store"
)

// callAdmin runs an admin operation: through the running server's socket when there is
// one, else in-process on the database. It never waits more than about a second for a
// lock and never fails silently.
func callAdmin(ctx context.Context, dataDir, op string, args, out any) error {
	if err := backup.CheckIdle(dataDir); err != nil {
		return err
	}
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	if resp, ok := viaSocket(ctx, dataDir, op, body); ok {
		defer resp.Body.Close()
		return decodeAdminResponse(resp, out)
	}
	admin, closeDB, err := openAdmin(dataDir)
	if err != nil {
		return err
	}
	defer closeDB()
	res, err := admin.Do(ctx, op, body)
	if err != nil {
		return err
	}
	if _, ok := res.(server.StreamResult); ok {
		return fmt.Errorf("operation %s streams its answer; it cannot be decoded as JSON", op)
	}
	if out == nil {
		return nil
	}
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// streamAdmin runs an admin operation that streams its answer (a backup) into w,
// through the running server's socket or else in-process, like callAdmin. A failure
// after bytes were written is still returned: from the socket's error trailer or a
// cut-off body, or from the in-process sink.
func streamAdmin(ctx context.Context, dataDir, op string, args any, w io.Writer) error {
	return streamAdminWith(ctx, dataDir, op, args, nil, w)
}

// streamAdminWith is streamAdmin where the in-process Admin first gets what the
// operation needs from prepare (when not nil), which returns its clean-up.
func streamAdminWith(ctx context.Context, dataDir, op string, args any, prepare func(*server.Admin) (func(), error), w io.Writer) error {
	if err := backup.CheckIdle(dataDir); err != nil {
		return err
	}
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	if resp, ok := viaSocket(ctx, dataDir, op, body); ok {
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return decodeAdminResponse(resp, nil)
		}
		if _, err := io.Copy(w, resp.Body); err != nil {
			return fmt.Errorf("%s through the admin socket: %w", op, err)
		}
		if msg := resp.Trailer.Get(server.BackupErrorTrailer); msg != "" {
			return fmt.Errorf("%s failed in the server: %s", op, msg)
		}
		return nil
	}
	admin, closeDB, err := openAdmin(dataDir)
	if err != nil {
		return err
	}
	defer closeDB()
	if prepare != nil {
		cleanup, err := prepare(admin)
		if err != nil {
			return err
		}
		defer cleanup()
	}
	res, err := admin.Do(ctx, op, body)
	if err != nil {
		return err
	}
	stream, ok := res.(server.StreamResult)
	if !ok {
		return fmt.Errorf("operation %s answers JSON, not a stream", op)
	}
	sink := &streamSink{w: w}
	stream(sink)
	return sink.err
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
// in-process admin operation; closeDB closes it. Like serve, it never opens a
// database while a restore is pending or running (backup.Guard).
func openAdmin(dataDir string) (admin *server.Admin, closeDB func() error, err error) {
	var st *store.Store
	err = backup.Guard(dataDir, func() (err error) {
		st, err = store.Open(filepath.Join(dataDir, store.FileName), store.Options{Timeout: store.DefaultOpenTimeout})
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return nil, nil, fmt.Errorf("%w; its admin socket %s does not answer either, so the other process may be hung", err, server.AdminSocketPath(dataDir))
		}
		return nil, nil, err
	}
	return server.NewAdmin(st, store.NewPasswords(store.DefaultArgon2, 1)), st.Close, nil
}

// streamSink is the in-process stream's writer; the operation reports a failure
// after the first byte through CloseWithError, as it would to an io.PipeWriter.
type streamSink struct {
	w   io.Writer
	err error
}

func (s *streamSink) Write(b []byte) (int, error) { return s.w.Write(b) }

func (s *streamSink) CloseWithError(err error) error {
	s.err = err
	return nil
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

func decodeAdminResponse(resp *http.Response, out any) error {
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var p struct {
			Detail string            `json:"detail"`
			Errors map[string]string `json:"errors"`
		}
		if json.Unmarshal(data, &p) == nil && p.Detail != "" {
			return errors.New(printable(p.Detail))
		}
		return fmt.Errorf("admin socket answered %s", resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// requireDatabase refuses to create an empty database just to inspect it, and a
// data directory a restore left half-way (its database may be moved aside).
func requireDatabase(dataDir string) error {
	if err := backup.CheckIdle(dataDir); err != nil {
		return err
	}
	path := filepath.Join(dataDir, store.FileName)
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
