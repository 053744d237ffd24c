package export

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// GardenZip writes a zip of every export of the garden, and its picture as
// image.png with image.pgw (world file) and image.prj (EPSG:4326), so that QGIS
// places it with no input. Each entry is streamed into the zip (data descriptors
// follow the entries), the beds read once for all.
func GardenZip(ctx context.Context, w io.Writer, src Source) error {
	beds, err := src.Beds(ctx)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(w)
	modified := src.Now()
	entry := func(name string, method uint16, write func(io.Writer) error) error {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: modified})
		if err != nil {
			return err
		}
		return write(fw)
	}
	now := src.Now()
	for _, e := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"plants.geojson", func(w io.Writer) error { return PlantsGeoJSON(w, beds, now) }},
		{"plants.csv", func(w io.Writer) error { return PlantsCSV(w, beds, now) }},
		{"beds.csv", func(w io.Writer) error { return BedsCSV(w, beds, now) }},
		{"logs.csv", func(w io.Writer) error { return LogsCSV(ctx, w, src, beds) }},
		{"logs.geojson", func(w io.Writer) error { return LogsGeoJSON(ctx, w, src, beds) }},
	} {
		if err := entry(e.name, zip.Deflate, e.write); err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
	}
	if err := zipImage(ctx, src, entry); err != nil {
		return err
	}
	return zw.Close()
}

// zipImage adds the picture and the files that place it; a garden without picture
// gets none.
func zipImage(ctx context.Context, src Source, entry func(string, uint16, func(io.Writer) error) error) error {
	rc, cs, err := src.Image(ctx)
	if errors.Is(err, ErrNoImage) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }() // read to the end: nothing to lose
	br := bufio.NewReaderSize(rc, 64<<10)
	width, height, err := pngSize(br)
	if err != nil {
		return fmt.Errorf("image.png: %w", err)
	}
	world, err := WorldFile(cs, width, height)
	if err != nil {
		return fmt.Errorf("image.pgw: %w", err)
	}
	// PNG is compressed already.
	if err := entry("image.png", zip.Store, func(w io.Writer) error {
		_, err := io.Copy(w, br)
		return err
	}); err != nil {
		return err
	}
	if err := entry("image.pgw", zip.Deflate, func(w io.Writer) error {
		_, err := io.WriteString(w, world)
		return err
	}); err != nil {
		return err
	}
	return entry("image.prj", zip.Deflate, func(w io.Writer) error {
		_, err := io.WriteString(w, PRJ)
		return err
	})
}

// pngSize reads a PNG's dimensions from its header without consuming it.
func pngSize(br *bufio.Reader) (int, int, error) {
	head, err := br.Peek(24)
	if err != nil || string(head[:8]) != "\x89PNG\r\n\x1a\n" || string(head[12:16]) != "IHDR" {
		return 0, 0, errors.New("the stored picture is not a PNG")
	}
	return int(binary.BigEndian.Uint32(head[16:20])), int(binary.BigEndian.Uint32(head[20:24])), nil
}
