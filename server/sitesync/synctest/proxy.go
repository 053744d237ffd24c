package synctest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a target and misbehaves on demand: it cuts
// every connection (and refuses new ones until Restore), adds latency, limits the
// rate, or cuts once a number of bytes went upstream (mid-message).
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]bool
	down  bool
	delay time.Duration
	rate  int64 // bytes per second each way, 0: unlimited
	// cutAfter > 0: cut every connection once that many more bytes went upstream.
	cutAfter int64

	// Up and Down count the bytes forwarded each way (client → target: Up).
	Up, Down atomic.Int64
}

// NewProxy listens on a loopback port and forwards to target (HOST:PORT).
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's HOST:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy and cuts everything.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.Cut()
}

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// Restore accepts connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// Shape sets the latency added to every chunk and the rate each way (bytes per
// second, 0: unlimited).
func (p *Proxy) Shape(delay time.Duration, rate int64) {
	p.mu.Lock()
	p.delay, p.rate = delay, rate
	p.mu.Unlock()
}

// CutAfter cuts every connection once n more bytes went upstream: in the middle of
// whatever is being sent.
func (p *Proxy) CutAfter(n int64) {
	p.mu.Lock()
	p.cutAfter = n
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		_ = c.Close()
		_ = u.Close()
		return
	}
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(u, c, &p.Up, true) })
	wg.Go(func() { p.pipe(c, u, &p.Down, false) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// chunk is data read at a time, forwarded once its latency has passed.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst with the proxy's latency and rate: a reader queues what it
// reads with its due time, a writer sends it then, no faster than the rate.
func (p *Proxy) pipe(dst, src net.Conn, count *atomic.Int64, upstream bool) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 16<<10)
			n, err := src.Read(buf)
			if n > 0 {
				p.mu.Lock()
				d := p.delay
				p.mu.Unlock()
				q <- chunk{data: buf[:n], due: time.Now().Add(d)}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range q {
		if w := time.Until(ch.due); w > 0 {
			time.Sleep(w)
		}
		data := ch.data
		for len(data) > 0 {
			p.mu.Lock()
			rate, cut := p.rate, p.cutAfter
			p.mu.Unlock()
			n := len(data)
			if rate > 0 {
				// Send at most a tenth of a second's worth at once.
				n = min(n, max(int(rate/10), 1))
			}
			if upstream && cut > 0 && int64(n) >= cut {
				n = int(cut)
				_, _ = dst.Write(data[:n])
				count.Add(int64(n))
				p.mu.Lock()
				p.cutAfter = 0
				p.mu.Unlock()
				p.Cut()
				p.Restore()
				return
			}
			if _, err := dst.Write(data[:n]); err != nil {
				drain(q)
				return
			}
			count.Add(int64(n))
			if upstream && cut > 0 {
				p.mu.Lock()
				if p.cutAfter > 0 {
					p.cutAfter -= int64(n)
				}
				p.mu.Unlock()
			}
			data = data[n:]
			if rate > 0 {
				time.Sleep(time.Duration(int64(n) * int64(time.Second) / rate))
			}
		}
	}
}

func drain(q chan chunk) {
	for range q {
	}
}
