package plantmap_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gardend/gardend/server/plantmap"
	"github.com/gardend/gardend/server/plantmap/plantmaptest"
)

// mediaDump is a dump of one company with three gardens that show the image
// plantmaptest.GeneratedImageFile (made here: these tests need no sample data).
func mediaDump(t *testing.T) []byte {
	entries := []plantmaptest.Entry{{Model: "restapi.company", PK: 1, Fields: map[string]any{"name": "farm"}}}
	for g := 1; g <= 3; g++ {
		entries = append(entries, plantmaptest.Entry{Model: "restapi.garden", PK: g, Fields: map[string]any{
			"name": "garden-" + strconv.Itoa(g), "company": 1, "image_path": "/workdir/django/storage/images/" + plantmaptest.GeneratedImageFile}})
		for i, corner := range []string{"top_left", "top_right", "bottom_left"} {
			entries = append(entries, plantmaptest.Entry{Model: "restapi.coordinate", PK: 3*g + i, Fields: map[string]any{
				"name": corner, "latitude": "52.317", "longitude": "7.630", "garden": g}})
		}
	}
	return plantmaptest.Encode(t, entries)
}

// importWithin runs an import of mediaDump with media, failing the test if it does
// not return within a minute (a FIFO hung it for ever before).
func importWithin(t *testing.T, media string, dryRun bool) (*plantmap.Result, *target) {
	t.Helper()
	tg := newTarget(t)
	type outcome struct {
		res *plantmap.Result
		err error
	}
	done := make(chan outcome, 1)
	opts := plantmap.Options{Dump: readDump(t, mediaDump(t)), MediaDir: media, DryRun: dryRun, Store: tg.st, Images: tg.images}
	go func() {
		res, err := plantmap.Import(context.Background(), opts)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		if o.res == nil {
			t.Fatalf("import: %v", o.err)
		}
		return o.res, tg
	case <-time.After(time.Minute):
		t.Fatal("the import hangs")
		return nil, nil
	}
}

// TestMediaOnlyRegularFiles: an image name in the media directory that is a symlink
// (leading out of the directory or not), a directory, or (media_unix_test.go) a FIFO
// is refused with what it is, for every garden that shows it; nothing outside the
// directory is read.
func TestMediaOnlyRegularFiles(t *testing.T) {
	outside := t.TempDir()
	dir, _ := plantmaptest.SmallMedia(t)
	real := filepath.Join(outside, "real.png")
	data, err := os.ReadFile(filepath.Join(dir, plantmaptest.GeneratedImageFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, data, 0o600); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(dir, "inside.png")
	if err := os.WriteFile(inside, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"symlink out", func(p string) error { return os.Symlink(real, p) }, "a symbolic link"},
		{"symlink up", func(p string) error { return os.Symlink("../"+filepath.Base(outside)+"/real.png", p) }, "a symbolic link"},
		{"symlink inside", func(p string) error { return os.Symlink("inside.png", p) }, "a symbolic link"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, "a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			media := t.TempDir()
			if err := os.WriteFile(filepath.Join(media, "inside.png"), data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(filepath.Join(media, plantmaptest.GeneratedImageFile)); err != nil {
				t.Fatal(err)
			}
			res, _ := importWithin(t, media, true)
			refused(t, res, tc.want)
		})
	}
}

// refused checks that the gardens showing the fixtures' image report want.
func refused(t *testing.T, res *plantmap.Result, want string) {
	t.Helper()
	errs := messages(res, false)
	n := 0
	for _, m := range errs {
		if strings.Contains(m, plantmaptest.GeneratedImageFile) && strings.Contains(m, "not a regular file ("+want+")") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d of 3 gardens report %q:\n%s", n, want, strings.Join(errs, "\n"))
	}
}

// TestImportLargePNGHeapBounded: a PNG of side×side pixels at 16 bits per channel
// (the 10000×10000 took 782 MB, dry run or not) is checked and imported in a
// few MiB: it is never decoded. 3000×3000 here (72 MB of pixels; quick under -race);
// GARDEND_PNG_SIDE=10000 gives the figure.
func TestImportLargePNGHeapBounded(t *testing.T) {
	side := 3000
	if v := os.Getenv("GARDEND_PNG_SIDE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			t.Fatalf("GARDEND_PNG_SIDE=%q: want 1 to 10000", v)
		}
		side = n
	}
	media := t.TempDir()
	path := filepath.Join(media, plantmaptest.GeneratedImageFile)
	writeLargePNG(t, path, side, side)
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, dryRun := range []bool{true, false} {
		runtime.GC()
		stop := make(chan struct{})
		peak := sampleHeap(stop)
		res, tg := importWithin(t, media, dryRun)
		close(stop)
		grown := <-peak
		t.Logf("dry run %v: heap peak %d MiB above the start for a %d×%d 16-bit PNG", dryRun, grown>>20, side, side)
		if errs := messages(res, false); len(errs) != 0 {
			t.Fatalf("errors: %v", errs)
		}
		if grown > 32<<20 {
			t.Fatalf("dry run %v: the heap grew by %d MiB for a %d×%d PNG", dryRun, grown>>20, side, side)
		}
		if !dryRun {
			files := tg.imageFiles(t)
			got, err := os.ReadFile(filepath.Join(tg.dir, "images", files[0]))
			if len(files) != 3 || err != nil || !bytes.Equal(got, want) {
				t.Fatalf("imported files %v (%v): the first equals the original: %v", files, err, bytes.Equal(got, want))
			}
		}
	}
}

// sampleHeap reports the peak of HeapInuse above its value now, until stop closes.
func sampleHeap(stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := int64(ms.HeapInuse)
	go func() {
		var peak int64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, int64(ms.HeapInuse)-base)
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// writeLargePNG writes a w×h RGBA 16-bit PNG of a gradient, streaming, so the test
// holds no image either.
func writeLargePNG(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	chunk := func(typ string, data []byte) {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		b = append(append(b, typ...), data...)
		b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[4:]))
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteString("\x89PNG\r\n\x1a\n"); err != nil {
		t.Fatal(err)
	}
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(w)), uint32(h))
	chunk("IHDR", append(ihdr, 16, 6, 0, 0, 0))
	idat := chunkWriter{put: func(p []byte) { chunk("IDAT", p) }}
	zw, _ := zlib.NewWriterLevel(&idat, zlib.BestSpeed)
	row := make([]byte, 1+w*8)
	row[0] = 2 // Up: every row after the first repeats the one above
	for x := range w {
		binary.BigEndian.PutUint16(row[1+8*x:], uint16(x*65535/max(1, w-1)))
		row[1+8*x+6], row[1+8*x+7] = 0xff, 0xff
	}
	if _, err := zw.Write(row); err != nil {
		t.Fatal(err)
	}
	clear(row[1:])
	for range h - 1 {
		if _, err := zw.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	idat.flush()
	chunk("IEND", nil)
}

// chunkWriter cuts what is written into IDAT chunks of 64 KiB.
type chunkWriter struct {
	buf []byte
	put func([]byte)
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for len(c.buf) >= 64<<10 {
		c.put(c.buf[:64<<10])
		c.buf = c.buf[64<<10:]
	}
	return len(p), nil
}

func (c *chunkWriter) flush() {
	if len(c.buf) > 0 {
		c.put(c.buf)
	}
}

// TestImportRefusesCostlyConversion: a JPEG whose decoding would take more than
// MaxDecodeBytes (here 10000×10000 without chroma subsampling: 300 MB of planes) is
// refused from its header, saying what to do, before any pixel is decoded.
func TestImportRefusesCostlyConversion(t *testing.T) {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, 16, 16)), nil); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	sof := bytes.Index(data, []byte{0xff, 0xc0})
	if sof < 0 {
		t.Fatal("no SOF0")
	}
	binary.BigEndian.PutUint16(data[sof+5:], 10000)
	binary.BigEndian.PutUint16(data[sof+7:], 10000)
	for i := range int(data[sof+9]) {
		data[sof+10+3*i+1] = 0x11
	}
	media := t.TempDir()
	if err := os.WriteFile(filepath.Join(media, plantmaptest.GeneratedImageFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	res, _ := importWithin(t, media, true)
	errs := messages(res, false)
	n := 0
	for _, m := range errs {
		if strings.Contains(m, "10000×10000") && strings.Contains(m, "MiB of memory to convert") && strings.Contains(m, "convert it to PNG first") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d of 3 gardens report the cost:\n%s", n, strings.Join(errs, "\n"))
	}
}

// TestConvertedJPEGHeapBounded: converting a JPEG holds its decoded planes, not a
// second RGBA copy of them as well.
func TestConvertedJPEGHeapBounded(t *testing.T) {
	const w, h = 2000, 1500
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetRGBA(x, y, color.RGBA{uint8(x), uint8(y), uint8(x + y), 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	m = nil
	media := t.TempDir()
	if err := os.WriteFile(filepath.Join(media, plantmaptest.GeneratedImageFile), b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	stop := make(chan struct{})
	peak := sampleHeap(stop)
	res, tg := importWithin(t, media, false)
	close(stop)
	grown := <-peak
	t.Logf("heap peak %d MiB above the start converting a %d×%d JPEG (4:2:0: %d MiB of planes)", grown>>20, w, h, w*h*3/2>>20)
	if len(messages(res, false)) != 0 || len(res.Conversions) != 1 || len(tg.imageFiles(t)) != 3 {
		t.Fatalf("errors %v, conversions %+v", messages(res, false), res.Conversions)
	}
	// The planes (4.3 MiB) and the encoder's rows; an RGBA copy would add 11.4 MiB.
	if grown > 10<<20 {
		t.Fatalf("the heap grew by %d MiB", grown>>20)
	}
}
