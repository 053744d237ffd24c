package pgtest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Relay forwards TCP connections to a test database and reads the frontend's side of
// the wire protocol, so that a test can cut a connection at the one moment that
// matters to it: right after a COMMIT (or a statement that commits by itself) went
// to the server (it takes effect, its answer never arrives), or instead of it (it
// never takes effect).
type Relay struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  CutMode
	match string // the statement to cut at; "" for COMMIT
	cuts  int
	conns []net.Conn
	done  bool // closed: connections still arriving are dropped
	wg    sync.WaitGroup
}

// CutMode says what the relay does with the next statement armed for.
type CutMode int

const (
	// Pass forwards everything.
	Pass CutMode = iota
	// CutAfterCommit forwards the statement, then closes the client's side at once and
	// the server's once it has answered: committed, answer lost.
	CutAfterCommit
	// CutBeforeCommit drops the statement (a simple query, or the Sync that would
	// commit an extended-protocol one) and closes both sides: the server rolls the
	// transaction back when it finds the connection gone.
	CutBeforeCommit
)

// NewRelay starts a relay in front of the database of dsn (a postgres:// URL with
// sslmode=disable, as NewDatabase gives) and returns it and the DSN through it. It
// stops at cleanup.
func NewRelay(tb testing.TB, dsn string) (*Relay, string) {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r := &Relay{ln: ln, target: u.Host}
	r.wg.Add(1)
	go r.accept()
	tb.Cleanup(r.close)
	u.Host = ln.Addr().String()
	return r, u.String()
}

// Arm makes the relay cut the next COMMIT any connection sends, as mode says.
func (r *Relay) Arm(mode CutMode) { r.ArmAt(mode, "") }

// ArmAt makes the relay cut at the next statement any connection sends that contains
// statement (case-insensitively), as mode says: inside a transaction at its COMMIT,
// else at the statement itself (a simple query, or the Sync that ends a prepared
// statement's execution). "" is any COMMIT.
func (r *Relay) ArmAt(mode CutMode, statement string) {
	r.mu.Lock()
	r.mode, r.match = mode, strings.ToLower(statement)
	r.mu.Unlock()
}

// Cuts is how many connections the relay has cut.
func (r *Relay) Cuts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cuts
}

func (r *Relay) close() {
	_ = r.ln.Close()
	r.mu.Lock()
	r.done = true
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", r.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		r.mu.Lock()
		if r.done {
			r.mu.Unlock()
			_, _ = c.Close(), up.Close()
			return
		}
		r.conns = append(r.conns, c, up)
		r.mu.Unlock()
		r.wg.Add(2)
		go func() {
			defer r.wg.Done()
			_, _ = io.Copy(c, up) // the server's answers
			_ = c.Close()
		}()
		go func() {
			defer r.wg.Done()
			r.forward(c, up.(*net.TCPConn))
		}()
	}
}

// forward copies the client's messages to the server one by one, watching for a
// COMMIT sent as a simple query (pgx commits so).
func (r *Relay) forward(client net.Conn, server *net.TCPConn) {
	defer func() { _ = server.Close() }()
	in := bufio.NewReader(client)
	// Untyped messages first: SSL, GSS and cancel requests, then the startup message.
	for {
		msg, err := readUntyped(in)
		if err != nil {
			return
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
		code := binary.BigEndian.Uint32(msg[4:8])
		if code == cancelRequestCode {
			_, _ = io.Copy(server, in)
			return
		}
		if code != sslRequestCode && code != gssRequestCode {
			break
		}
	}
	var (
		parsed = map[string]string{} // statement name → text, from Parse messages
		inTx   bool                  // between BEGIN and COMMIT or ROLLBACK
		atSync CutMode               // a prepared statement armed for is cut at its Sync
		atEnd  CutMode               // a transaction that ran it is cut at its COMMIT
	)
	// armed decides where a statement the relay is armed for is cut.
	armed := func(query string) CutMode {
		q := normal(query)
		commit := q == "commit" || q == "end"
		if commit && atEnd != Pass {
			m := atEnd
			atEnd = Pass
			return m
		}
		m := r.take(q, commit)
		if m != Pass && inTx && !commit {
			atEnd, m = m, Pass
		}
		return m
	}
	for {
		msg, err := readTyped(in)
		if err != nil {
			return
		}
		mode := Pass
		switch msg[0] {
		case 'Q':
			q := normal(string(msg[5:]))
			mode = armed(q)
			switch {
			case strings.HasPrefix(q, "begin"), strings.HasPrefix(q, "start transaction"):
				inTx = true
			case q == "commit", q == "end", q == "rollback":
				inTx = false
			}
		case 'P':
			name, rest, _ := strings.Cut(string(msg[5:]), "\x00")
			query, _, _ := strings.Cut(rest, "\x00")
			parsed[name] = query
		case 'B':
			_, rest, _ := strings.Cut(string(msg[5:]), "\x00")
			name, _, _ := strings.Cut(rest, "\x00")
			if m := armed(parsed[name]); m != Pass {
				atSync = m
			}
		case 'S':
			mode, atSync = atSync, Pass
		}
		if mode != Pass {
			r.mu.Lock()
			r.cuts++
			r.mu.Unlock()
		}
		switch mode {
		case CutBeforeCommit:
			_ = client.Close()
			return
		case CutAfterCommit:
			if _, err := server.Write(msg); err != nil {
				return
			}
			_ = client.Close()
			// The server reads the statement, commits, answers into the void, then
			// finds the connection ended.
			_ = server.CloseWrite()
			_, _ = io.Copy(io.Discard, server)
			return
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
	}
}

// normal is a query as the relay compares it: lower case, without the trailing NUL,
// semicolon and spaces.
func normal(query string) string {
	return strings.ToLower(strings.TrimSpace(strings.TrimRight(query, "\x00; \n")))
}

// take returns the armed mode, disarming it, when query (normal) is the statement
// armed for; commit says it is a COMMIT.
func (r *Relay) take(query string, commit bool) CutMode {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mode == Pass || r.match == "" && !commit || r.match != "" && !strings.Contains(query, r.match) {
		return Pass
	}
	mode := r.mode
	r.mode = Pass
	return mode
}

const (
	sslRequestCode    = 80877103
	gssRequestCode    = 80877104
	cancelRequestCode = 80877102
	maxMessage        = 1 << 30
)

// readUntyped reads a start-up phase message: a length (itself included), then the
// body.
func readUntyped(in *bufio.Reader) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(in, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n < 8 || n > maxMessage {
		return nil, fmt.Errorf("start-up message of %d bytes", n)
	}
	msg := make([]byte, n)
	copy(msg, head[:])
	_, err := io.ReadFull(in, msg[4:])
	return msg, err
}

// readTyped reads a message: a type byte, a length (itself included), the body.
func readTyped(in *bufio.Reader) ([]byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(in, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n < 4 || n > maxMessage {
		return nil, errors.New("bad message length")
	}
	msg := make([]byte, 1+n)
	copy(msg, head[:])
	_, err := io.ReadFull(in, msg[5:])
	return msg, err
}
