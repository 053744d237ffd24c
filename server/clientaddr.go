package server

import (
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address of the client: the TCP peer, or with trustProxy the last
// X-Forwarded-For entry, the one our own proxy appended (earlier entries are whatever
// the client chose to send). It is the zero Addr when neither parses.
func clientAddr(r *http.Request, trustProxy bool) netip.Addr {
	if trustProxy {
		if vs := r.Header.Values("X-Forwarded-For"); len(vs) > 0 {
			last := vs[len(vs)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if a, err := netip.ParseAddr(strings.TrimSpace(last)); err == nil {
				return a.Unmap()
			}
		}
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(r.RemoteAddr)
	return a.Unmap()
}

// addrBlock is a's IPv4 address, or the /64 network of an IPv6 one: the block one
// host or household usually holds, so that per-address caps count it once.
func addrBlock(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
