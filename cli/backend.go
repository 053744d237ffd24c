package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// callAdmin runs an admin operation: through the running server's socket when there is
// one, else in-process on the database. It never waits more than about a second for a
// lock and never fails silently.
func callAdmin(ctx context.Context, dataDir, op string, args, out any) error {
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	sock := server.AdminSocketPath(dataDir)
	if _, err := os.Stat(sock); err == nil {
		resp, err := socketCall(ctx, sock, op, body)
		if err == nil {
			defer resp.Body.Close()
			return decodeAdminResponse(resp, out)
		}
		// A socket nobody answers on is left over from a crashed server: fall through.
	}
	return directCall(ctx, dataDir, op, body, nil, func(res any) error {
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
	})
}

// callAdminStream runs an operation that answers with NDJSON lines, handing each line
// to onLine as it comes: through the socket, or in process once prepare (when not
// nil) has given the Admin what the operation needs there and returned its clean-up.
func callAdminStream(ctx context.Context, dataDir, op string, args any, prepare func(*server.Admin) (func(), error), onLine func([]byte) error) error {
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	sock := server.AdminSocketPath(dataDir)
	if _, err := os.Stat(sock); err == nil {
		resp, err := socketCall(ctx, sock, op, body)
		if err == nil {
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return decodeAdminResponse(resp, nil)
			}
			return eachLine(resp.Body, onLine)
		}
	}
	return directCall(ctx, dataDir, op, body, prepare, func(res any) error {
		stream, ok := res.(server.StreamResult)
		if !ok {
			data, err := json.Marshal(res)
			if err != nil {
				return err
			}
			return onLine(data)
		}
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			stream(pw)
			pw.Close()
		}()
		err := eachLine(pr, onLine)
		pr.CloseWithError(io.ErrClosedPipe) // the operation's later writes fail fast
		<-done
		return err
	})
}

// eachLine calls fn with every non-empty line of r.
func eachLine(r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// directCall opens the database itself (no server running), lets prepare equip the
// Admin, and runs op.
func directCall(ctx context.Context, dataDir, op string, args []byte, prepare func(*server.Admin) (func(), error), use func(any) error) error {
	st, err := store.Open(filepath.Join(dataDir, store.FileName), store.Options{Timeout: time.Second})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return fmt.Errorf("%w; its admin socket %s does not answer either, so the other process may be hung", err, server.AdminSocketPath(dataDir))
		}
		return err
	}
	defer st.Close()
	admin := server.NewAdmin(st, store.NewPasswords(store.DefaultArgon2, 1))
	if prepare != nil {
		cleanup, err := prepare(admin)
		if err != nil {
			return err
		}
		defer cleanup()
	}
	res, err := admin.Do(ctx, op, args)
	if err != nil {
		return err
	}
	return use(res)
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
			return errors.New(p.Detail)
		}
		return fmt.Errorf("admin socket answered %s", resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// requireDatabase refuses to create an empty database just to inspect it.
func requireDatabase(dataDir string) error {
	path := filepath.Join(dataDir, store.FileName)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no gardend database at %s: pass --data with the directory serve uses", path)
	}
	return nil
}
