package server

import (
	"encoding/json"
	"net/http"

	"github.com/gardend/gardend/store"
)

// Lists whose length follows the stored data (companies, gardens, permissions) are
// read from the store a page at a time (store.ListPageSize records, each page its own
// short read) and written as one JSON array as they come, so that an answer holds at
// most a page and listChunk bytes whatever the list's length, and no transaction
// waits on the client. A list of one page goes out as before, whole, with its
// Content-Length; a longer one is sent chunked. The answer is the same array either
// way (PlantMap clients expect the whole list: the spec shows no pagination); records
// written or deleted while a long list is sent may or may not be in it, but none
// appears twice, as pages follow the id.

// listChunk is how much of a long list's answer is encoded before it is written.
const listChunk = 32 << 10

// writeList answers the list that page reads, by ascending id (id of each record).
// An error of a page before anything was sent is answered as usual; one after, when
// the status is sent, cuts the response so that no client takes part of a list for
// the whole of it.
func writeList[T any](s *Server, w http.ResponseWriter, r *http.Request, page func(store.Page) ([]T, error), id func(T) uint64) {
	p := store.Page{Limit: s.cfg.listPageSize()}
	items, err := page(p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !p.Full(len(items)) {
		s.writeJSON(w, r, http.StatusOK, items)
		return
	}
	sent := false
	send := func(buf []byte) error {
		if !sent {
			sent = true
			w.Header()["Content-Type"] = headerJSON
			w.WriteHeader(http.StatusOK)
		}
		_, err := w.Write(buf)
		return err
	}
	buf := make([]byte, 1, listChunk+4<<10)
	buf[0] = '['
	first := true
	for {
		for _, item := range items {
			if !first {
				buf = append(buf, ',')
			}
			first = false
			if buf, err = appendJSON(buf, item); err != nil {
				s.failList(w, r, sent, err)
				return
			}
			if len(buf) >= listChunk {
				if send(buf) != nil {
					return // the client is gone or too slow: nothing left to tell it
				}
				buf = buf[:0]
			}
		}
		if !p.Full(len(items)) {
			break
		}
		p.After = id(items[len(items)-1])
		if items, err = page(p); err != nil {
			s.failList(w, r, sent, err)
			return
		}
	}
	buf = append(buf, ']')
	_ = send(buf) // a client gone: nothing left to tell it
}

// appendJSON appends v's JSON encoding to buf.
func appendJSON(buf []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	return append(buf, data...), err
}

// failList answers err, or, when the status is sent, logs it with the request id and
// cuts the response.
func (s *Server) failList(w http.ResponseWriter, r *http.Request, sent bool, err error) {
	if !sent {
		s.writeError(w, r, err)
		return
	}
	s.log.Error().Err(err).Str("request_id", requestID(r)).Msg("list failed mid-stream; aborting the response")
	panic(http.ErrAbortHandler)
}

// listPageSize is Config.ListPageSize, store.ListPageSize when unset.
func (c *Config) listPageSize() int {
	if c.ListPageSize > 0 {
		return c.ListPageSize
	}
	return store.ListPageSize
}
