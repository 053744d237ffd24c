package plantmaptest

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Options of Generate and Original.
type Options struct {
	// Width and Height are the size of the picture made; 0 is 40×30, which converts
	// in milliseconds even under the race detector.
	Width, Height int
	// KeepPicture (Original only) uses the original's own picture, 2536×1731, which
	// takes seconds to convert, instead of one made of Width×Height.
	KeepPicture bool
}

func (o Options) size() (int, int) {
	if o.Width <= 0 || o.Height <= 0 {
		return 40, 30
	}
	return o.Width, o.Height
}

// GeneratedPassword is every generated user's password: shorter than gardend lets a
// new account choose, as PlantMap allowed.
const GeneratedPassword = "rhubarb"

// The Django hashers Generate uses, as the first field of a hash.
const (
	HasherPBKDF2SHA256 = "pbkdf2_sha256"
	HasherBcryptSHA256 = "bcrypt_sha256"
	HasherArgon2       = "argon2"
)

// The generated installation, with the shape of the original project's fixtures:
// a company administered by one user and read by another, two companies nobody
// administers, a garden without a picture (and so without coordinates), three
// gardens showing one picture, two gardens of one name in different companies, one
// project registered as a bed in several gardens, garden permissions, and a user
// with no permission at all. Latitudes and longitudes are strings, as Django writes
// a DecimalField; bed uuids are 32 hex digits without dashes, as Django's UUIDField
// dumps them.
var (
	genUsers = []struct {
		username, first, last, hasher string
		widgets                       []string
	}{
		{"ana", "Ana", "Albers", HasherPBKDF2SHA256, []string{"3d-table", "3d-map", "weather", "soil-parameter", "garden-map", "notifications", "crops-map", "crops-table"}},
		{"ben", "Ben", "Brandt", HasherBcryptSHA256, []string{"crops-table", "weather"}},
		{"cleo", "Cleo", "Conrad", HasherArgon2, []string{"garden-map", "crops-map", "3d-map"}},
		{"dev", "Dev", "Dorn", HasherPBKDF2SHA256, []string{"notifications"}},
		{"eli", "Eli", "Eckert", HasherArgon2, []string{}},
	}
	genCompanies = []string{"Allotment North", "Rooftop Farm", "Orchard Co-op", "Seed Library"}
	genGardens   = []struct {
		name      string
		company   int
		picture   bool
		placement int // which corner set; gardens of one picture placement share one
	}{
		{"North plot", 1, true, 0},
		{"South plot", 1, false, 0},
		{"Roof beds", 2, true, 1},
		{"South plot", 4, true, 1},
	}
	// genBeds: per garden, the projects (by number) registered as its beds.
	genBeds         = [][]int{{1, 2, 3, 4, 5}, {2, 1, 4}, {3, 2}, {4}}
	genCompanyPerms = []struct {
		level         string
		company, user int
	}{{"a", 1, 1}, {"a", 2, 1}, {"u", 1, 2}}
	genGardenPerms = []struct {
		level        string
		garden, user int
	}{{"a", 3, 3}, {"u", 4, 4}}
)

// GeneratedImageFile is the generated picture's file name.
const GeneratedImageFile = "aerial_2022-06-14.png"

// ProjectUUID is the uuid of generated project n (1…5), as a bed's uuid field holds it.
func ProjectUUID(n int) string {
	sum := sha256.Sum256([]byte("plantmaptest project " + strconv.Itoa(n)))
	return hex.EncodeToString(sum[:16])
}

// Generate makes a PlantMap installation: its dump, with each user's password hash
// computed now by the hasher genUsers names (cheap cost parameters: the hashes are
// for tests), and a media directory holding the gardens' picture, a JPEG of o's size
// named .png.
func Generate(tb testing.TB, o Options) *Sample {
	tb.Helper()
	s := &Sample{Name: "generated", Password: GeneratedPassword, ImageFile: GeneratedImageFile}
	s.Width, s.Height = o.size()
	s.MediaDir, s.Image = writePicture(tb, GeneratedImageFile, s.Width, s.Height)

	var entries []Entry
	add := func(model string, pk int, fields map[string]any) {
		entries = append(entries, Entry{Model: model, PK: pk, Fields: fields})
	}
	for i, u := range genUsers {
		add("auth.user", i+1, map[string]any{
			"username": u.username, "first_name": u.first, "last_name": u.last,
			"email": strings.ToLower(u.username) + "@example.org", "password": DjangoHash(tb, u.hasher, GeneratedPassword),
		})
	}
	for i, name := range genCompanies {
		add("restapi.company", i+1, map[string]any{"name": name})
	}
	for i, g := range genGardens {
		path := ""
		if g.picture {
			path = "/srv/plantmap/storage/images/" + GeneratedImageFile
		}
		add("restapi.garden", i+1, map[string]any{"name": g.name, "company": g.company, "image_path": path})
	}
	pk := 0
	for i, g := range genGardens {
		if !g.picture {
			continue
		}
		// A picture about 40 m across, placed by its corners (in the order PlantMap's
		// client uploads them); shortest round-trip spellings, so a value read back
		// prints as the dump wrote it.
		lat0, lon0 := 51.9617+0.00021*float64(g.placement), 7.6254-0.00002*float64(g.placement)
		for _, c := range []struct {
			name       string
			dLat, dLon float64
		}{{"top_right", 0.00003, 0.00047}, {"top_left", 0, 0}, {"bottom_left", -0.00019, 0.00002}} {
			pk++
			add("restapi.coordinate", pk, map[string]any{
				"name": c.name, "latitude": strconv.FormatFloat(lat0+c.dLat, 'f', -1, 64),
				"longitude": strconv.FormatFloat(lon0+c.dLon, 'f', -1, 64), "garden": i + 1,
			})
		}
	}
	pk = 0
	for i, projects := range genBeds {
		for _, n := range projects {
			pk++
			add("restapi.bed", pk, map[string]any{"uuid": ProjectUUID(n), "garden": i + 1})
		}
	}
	for i, p := range genCompanyPerms {
		add("restapi.companypermission", i+1, map[string]any{"permission": p.level, "company": p.company, "user": p.user})
	}
	for i, p := range genGardenPerms {
		add("restapi.gardenpermission", i+1, map[string]any{"permission": p.level, "garden": p.garden, "user": p.user})
	}
	for i, u := range genUsers {
		add("restapi.widget", i+1, map[string]any{"user": i + 1, "data": map[string]any{"widgets": u.widgets}})
	}
	s.dump = Encode(tb, entries)
	return s
}

// DjangoHash hashes password as Django's hasher of that name writes it, with a fresh
// salt and cheap costs: pbkdf2_sha256 (1000 iterations), bcrypt_sha256 (bcrypt of
// the password's hex SHA-256, cost 4, version 2b as Python's bcrypt writes) or argon2
// (argon2id, argon2-cffi's encoding after Django's "argon2" prefix).
func DjangoHash(tb testing.TB, hasher, password string) string {
	tb.Helper()
	switch hasher {
	case HasherPBKDF2SHA256:
		// Django's salts are 22 letters and digits; the hash is padded base64.
		salt := strings.TrimRight(base64.RawURLEncoding.EncodeToString(randomBytes(tb, 16)), "=")
		salt = strings.NewReplacer("-", "x", "_", "y").Replace(salt)
		const iterations = 1000
		key, err := pbkdf2.Key(sha256.New, password, []byte(salt), iterations, sha256.Size)
		if err != nil {
			tb.Fatal(err)
		}
		return fmt.Sprintf("%s$%d$%s$%s", hasher, iterations, salt, base64.StdEncoding.EncodeToString(key))
	case HasherBcryptSHA256:
		sum := sha256.Sum256([]byte(password))
		h, err := bcrypt.GenerateFromPassword([]byte(hex.EncodeToString(sum[:])), bcrypt.MinCost)
		if err != nil {
			tb.Fatal(err)
		}
		return hasher + "$" + strings.Replace(string(h), "$2a$", "$2b$", 1)
	case HasherArgon2:
		const memory, time, threads = 256, 2, 2
		salt := randomBytes(tb, 16)
		key := argon2.IDKey([]byte(password), salt, time, memory, threads, 32)
		enc := base64.RawStdEncoding
		return fmt.Sprintf("%s$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", hasher, argon2.Version, memory, time, threads, enc.EncodeToString(salt), enc.EncodeToString(key))
	}
	tb.Fatalf("no hasher %q", hasher)
	return ""
}

func randomBytes(tb testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return b
}

// writePicture writes a w×h JPEG, an aerial view of sorts (green with darker bed
// rows and a path), under name in a new directory; it returns the directory and the
// picture as the JPEG decodes.
func writePicture(tb testing.TB, name string, w, h int) (string, image.Image) {
	tb.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride:]
		for x := 0; x < w; x++ {
			r, g, b := 70+x*90/w, 120+y*80/h, 40+(x+y)%50
			if (y*12/h)%2 == 1 { // bed rows
				r, g = r-30, g-40
			}
			if x*10/w == 4 { // a path
				r, g, b = 170, 150, 120
			}
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = uint8(r), uint8(g), uint8(b), 255
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 90}); err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o600); err != nil {
		tb.Fatal(err)
	}
	decoded, err := jpeg.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		tb.Fatal(err)
	}
	return dir, decoded
}

// decodeFile decodes the picture in a file.
func decodeFile(path string) (image.Image, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	return img, err
}

// SmallMedia writes a media directory holding a small JPEG (40 × 30) under
// GeneratedImageFile and returns the directory and the picture as it decodes: for
// tests of the media directory's handling, which need no realistic picture.
func SmallMedia(tb testing.TB) (dir string, img image.Image) {
	tb.Helper()
	return writePicture(tb, GeneratedImageFile, 40, 30)
}
