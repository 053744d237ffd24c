package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gardend/gardend/server/atomicfile"
	"github.com/gardend/gardend/store"
)

// Signed URLs let a browser fetch a file without a token (the original PlantMap
// client's PLY loader sends no Authorization header): the server hands out a URL with
// an expiry and an HMAC-SHA256 over path and expiry, made with a key only it holds.
// Anyone holding the URL may fetch that one path until it expires; nothing else.

// SigningKeyFileName is the URL-signing key inside the data directory. It is created
// on first start and kept across restarts; backups leave it out (a restore makes a new
// one at its first start, which only voids URLs that expire within minutes anyway).
const SigningKeyFileName = "url-signing.key"

// DefaultSignedURLTTL is how long a signed URL works: long enough to load a bed's
// clouds, short enough that a URL copied out of a browser soon stops working.
const DefaultSignedURLTTL = 10 * time.Minute

const (
	signingKeySize = 32
	// signingKeyTempPrefix starts with ".tmp-", which backups leave out.
	signingKeyTempPrefix = ".tmp-url-signing-"
)

// signedURLVersion separates this MAC's input from any other use of the key.
const signedURLVersion = "gardend-signed-url-v1"

// Errors of a signed URL, answered 403 with a detail saying what to do.
var (
	errURLUnsigned = errors.New("this URL must carry the expires and signature parameters of a signed URL; ask the API for a fresh one (e.g. the bed's 3d-scene)")
	errURLTampered = errors.New("the URL's signature does not match its path and expiry; use the URL exactly as the API gave it")
	errURLExpired  = errors.New("this signed URL has expired; ask the API for a fresh one (e.g. the bed's 3d-scene)")
)

// signingSecret names the URL-signing key among a shared backend's secrets.
const signingSecret = "url-signing"

// loadSigningKey returns the URL-signing key. Every node behind one proxy must sign
// and check with the same key, since any of them may serve the URL another handed out:
// with a shared backend it is kept in the database (store.Shared.Secret), else in the
// data directory (loadSigningKeyFile).
func loadSigningKey(dataDir string, shared store.Shared) ([]byte, error) {
	if shared == nil {
		return loadSigningKeyFile(dataDir)
	}
	key, err := shared.Secret(signingSecret, signingKeySize)
	if err != nil {
		return nil, fmt.Errorf("the URL-signing key: %w", err)
	}
	return key, nil
}

// loadSigningKeyFile reads the key, creating it (mode 0600, written to a temporary
// file, synced and renamed, so a crash never leaves a short key) when there is none.
func loadSigningKeyFile(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, SigningKeyFileName)
	key, err := os.ReadFile(path)
	switch {
	case err == nil && len(key) == signingKeySize:
		return key, nil
	case err == nil:
		return nil, fmt.Errorf("%s holds %d bytes, not a %d-byte key: delete it and gardend makes a new one (signed URLs handed out before stop working)", path, len(key), signingKeySize)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read the URL-signing key: %w", err)
	}
	// A crash between creating and renaming leaves a temporary file; it held no key
	// anyone used.
	if stale, err := filepath.Glob(filepath.Join(dataDir, signingKeyTempPrefix+"*")); err == nil {
		for _, p := range stale {
			_ = os.Remove(p) // tried again at the next start
		}
	}
	key = make([]byte, signingKeySize)
	rand.Read(key) // never fails: crypto/rand crashes the program instead
	// The temporary file is 0600 already: the key never exists with wider access.
	if err := atomicfile.WriteFile(path, key, atomicfile.Options{Pattern: signingKeyTempPrefix + "*"}); err != nil {
		return nil, fmt.Errorf("create the URL-signing key: %w", err)
	}
	return key, nil
}

// urlSigner signs and checks paths with the server's key and clock.
type urlSigner struct {
	key []byte
	now func() time.Time
	ttl time.Duration
}

func (u urlSigner) mac(path string, expires int64) []byte {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte(signedURLVersion + "\n" + path + "\n" + strconv.FormatInt(expires, 10)))
	return m.Sum(nil)
}

// sign returns path with its expires and signature query, valid for ttl from now.
func (u urlSigner) sign(path string) (signed string, expires time.Time) {
	exp := u.now().Add(u.ttl).Unix()
	q := url.Values{}
	q.Set("expires", strconv.FormatInt(exp, 10))
	q.Set("signature", base64.RawURLEncoding.EncodeToString(u.mac(path, exp)))
	return path + "?" + q.Encode(), time.Unix(exp, 0)
}

// verify checks the query of a request for path; it returns when the URL expires.
func (u urlSigner) verify(path string, q url.Values) (time.Time, error) {
	expText, sigText := q.Get("expires"), q.Get("signature")
	if expText == "" || sigText == "" {
		return time.Time{}, errURLUnsigned
	}
	exp, err1 := strconv.ParseInt(expText, 10, 64)
	sig, err2 := base64.RawURLEncoding.DecodeString(sigText)
	// The MAC is checked before the expiry, so an edited expiry reads as tampering.
	if err1 != nil || err2 != nil || !hmac.Equal(sig, u.mac(path, exp)) {
		return time.Time{}, errURLTampered
	}
	expires := time.Unix(exp, 0)
	if !u.now().Before(expires) {
		return expires, errURLExpired
	}
	return expires, nil
}
