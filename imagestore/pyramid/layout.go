package pyramid

// Layout is the geometry of a picture's pyramid.
type Layout struct {
	Width, Height int
	TileSize      int
	// Levels counts the levels: 0 … Levels-1, the last at full resolution.
	Levels int
}

// DefaultTileSize is the side of a tile.
const DefaultTileSize = 256

// NewLayout is the pyramid of a width × height picture in tiles of tileSize.
func NewLayout(width, height, tileSize int) Layout {
	l := Layout{Width: width, Height: height, TileSize: tileSize, Levels: 1}
	for side := max(width, height); tileSize<<(l.Levels-1) < side; {
		l.Levels++
	}
	return l
}

// shift is how many halvings level z is below full resolution.
func (l Layout) shift(z int) uint { return uint(l.Levels - 1 - z) }

// LevelSize is the size of level z: the picture halved (rounding up) per level below
// the last.
func (l Layout) LevelSize(z int) (w, h int) {
	s := l.shift(z)
	return (l.Width + 1<<s - 1) >> s, (l.Height + 1<<s - 1) >> s
}

// Grid is how many tiles level z has across and down.
func (l Layout) Grid(z int) (cols, rows int) {
	w, h := l.LevelSize(z)
	return (w + l.TileSize - 1) / l.TileSize, (h + l.TileSize - 1) / l.TileSize
}

// TileRect is the pixel rectangle of tile x, y in level z (edge tiles are smaller).
func (l Layout) TileRect(z, x, y int) (x0, y0, w, h int) {
	lw, lh := l.LevelSize(z)
	x0, y0 = x*l.TileSize, y*l.TileSize
	return x0, y0, min(l.TileSize, lw-x0), min(l.TileSize, lh-y0)
}

// Tiles counts the tiles of every level.
func (l Layout) Tiles() int {
	n := 0
	for z := range l.Levels {
		c, r := l.Grid(z)
		n += c * r
	}
	return n
}

// Valid reports whether z, x, y names a tile.
func (l Layout) Valid(z, x, y int) bool {
	if z < 0 || z >= l.Levels || x < 0 || y < 0 {
		return false
	}
	c, r := l.Grid(z)
	return x < c && y < r
}

// tileIndex numbers the tiles level by level, row by row; -1 when z, x, y names none.
func (l Layout) tileIndex(z, x, y int) int {
	if !l.Valid(z, x, y) {
		return -1
	}
	n := 0
	for k := range z {
		c, r := l.Grid(k)
		n += c * r
	}
	c, _ := l.Grid(z)
	return n + y*c + x
}

// previewLevel is the largest level whose longer side is at most size.
func (l Layout) previewLevel(size int) int {
	for z := l.Levels - 1; z > 0; z-- {
		if w, h := l.LevelSize(z); max(w, h) <= size {
			return z
		}
	}
	return 0
}

// thumbSource is the smallest level whose longer side is at least size (the last
// level when the picture is smaller): the thumbnail is scaled down from it.
func (l Layout) thumbSource(size int) int {
	for z := range l.Levels {
		if w, h := l.LevelSize(z); max(w, h) >= size {
			return z
		}
	}
	return l.Levels - 1
}

// scaledSize is w × h scaled to fit size on the longer side (never up, never to 0).
func scaledSize(w, h, size int) (int, int) {
	long := max(w, h)
	if long <= size {
		return w, h
	}
	return max(1, (w*size+long/2)/long), max(1, (h*size+long/2)/long)
}
