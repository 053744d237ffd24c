//go:build linux

package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gardend/gardend/imagestore/pngtest"
	"github.com/gardend/gardend/server"
)

// TestLongDownloadsOutliveWriteTimeout: a picture that takes longer than
// --write-timeout to reach a slow but steady client arrives whole (each write moves
// the deadline, as the beds stream and backups do); before, the original client's
// GET …/image of a large picture over a field's link was cut after --write-timeout
// (two minutes), whatever its progress. Both the data URL and the whole picture that
// …/image/preview serves while tiles are built.
func TestLongDownloadsOutliveWriteTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("paced downloads of several seconds")
	}
	const writeTimeout = time.Second
	// Small socket buffers on both ends, as a slow link's would be: what the kernel
	// holds for the client (some 400 KB) is much less than the picture, and a blocked
	// write resumes as soon as the client reads a little.
	bufSize := func(opt int) func(string, string, syscall.RawConn) error {
		return func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, 64<<10) }); err != nil {
				return err
			}
			return serr
		}
	}
	ln, err := (&net.ListenConfig{Control: bufSize(syscall.SO_SNDBUF)}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, base, _ := runServer(t, server.Config{Listener: ln, WriteTimeout: writeTimeout, Logger: zerolog.New(zerolog.NewTestWriter(t))})
	ts := &testServer{tb: t, srv: srv}
	owner := ts.register("owner")
	c := ts.createCompany(owner, "c")
	g := ts.createGarden(owner, c.ID, "g")
	path := base + gardenPath(c.ID, g.ID) + "/image"
	// Incompressible: 2 MB of PNG, 2.6 MB as a data URL.
	const side = 700
	pic := pngtest.Encode(pngtest.Noise(side, side, 1), pngtest.Kind{ColorType: pngtest.TrueAlpha, Depth: 8}, pngtest.Options{Level: 1})
	ts.must(http.StatusCreated, "POST", gardenPath(c.ID, g.ID)+"/image", owner, upload(dataURL(pic), cornersJSON))

	// No Accept-Encoding keeps the wire size the picture's.
	dialer := &net.Dialer{Control: bufSize(syscall.SO_RCVBUF)}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, DisableCompression: true}}
	defer client.CloseIdleConnections()

	// The preview is the picture itself until tiles are built, then a re-encoding of
	// it (700 px is under the preview's size): as large either way.
	for _, u := range []string{path, path + "/preview"} {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", u, nil)
		req.Header.Set("Authorization", "Token "+owner)
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// 32 KiB every 40 ms: about 800 KB/s, two to three writeTimeouts for the whole.
		var got bytes.Buffer
		buf := make([]byte, 32<<10)
		var readErr error
		for readErr == nil {
			var k int
			k, readErr = io.ReadFull(res.Body, buf)
			got.Write(buf[:k])
			time.Sleep(40 * time.Millisecond)
		}
		_ = res.Body.Close()
		took := time.Since(start)
		body := got.Bytes()
		if readErr != io.EOF && readErr != io.ErrUnexpectedEOF { // ReadFull's two ways to say "done"
			t.Fatalf("%s: %v after %d bytes in %v", u, readErr, len(body), took)
		}
		if strings.HasSuffix(u, "/image") {
			var doc struct{ Image string }
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatalf("%s: %v after %d bytes in %v", u, err, len(body), took)
			}
			body, _ = base64.StdEncoding.DecodeString(strings.TrimPrefix(doc.Image, "data:image/png;base64,"))
			if !bytes.Equal(body, pic) {
				t.Fatalf("%s: %d bytes in %v, not the picture", u, len(body), took)
			}
		} else if img, err := png.Decode(bytes.NewReader(body)); err != nil || img.Bounds().Dx() != side {
			t.Fatalf("%s: %d bytes in %v, not the whole preview (%v)", u, len(body), took, err)
		}
		if took < 2*writeTimeout {
			t.Fatalf("%s: whole in %v: the test no longer outlasts the write timeout", u, took)
		}
	}
}
