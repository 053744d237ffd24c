package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gardend/gardend/store"
)

// Django hashes made by other implementations (never by this package): the djangohashers
// crate's test vectors (password djangoVectorPassword), a Django 5.1 argon2id hash,
// the PlantMap fixtures' hash of "1234", and bcrypt (cost 4) and scrypt (N = 1024),
// cheaper than Django's defaults to keep the test fast, as Django's hashers write
// them, computed with Python's crypt (libxcrypt) and hashlib (OpenSSL).
const djangoVectorPassword = "ExjGmyUT73bFoT"

var djangoVectors = []struct {
	name, password, encoded string
}{
	{"pbkdf2_sha256", djangoVectorPassword, "pbkdf2_sha256$24000$KQ8zeK6wKRuR$cmhbSt1XVKuO4FGd9+AX8qSBD4Z0395nZatXTJpEtTY="},
	{"pbkdf2_sha256", "1234", "pbkdf2_sha256$320000$LuKlEyk1ZdbXx8ctkvF9c7$21bgLk3zi8fHBCZdTkAKQT8e0nIGe7A+gmS4zFaqzd4="},
	{"pbkdf2_sha1", djangoVectorPassword, "pbkdf2_sha1$24000$KQ8zeK6wKRuR$tSJh4xdxfMJotlxfkCGjTFpGYZU="},
	{"bcrypt_sha256", djangoVectorPassword, "bcrypt_sha256$$2b$04$oUP32hV8EeNB6PKWhzJtiOVWtaNlMIedibWBm5A747SYCqoI00EG2"},
	{"bcrypt", djangoVectorPassword, "bcrypt$$2b$04$X2DPxLUP650uETGYOrXZS.4zW1Jk4nVG1fyYUXmfvOi3Zfe4DEgpK"},
	{"argon2", djangoVectorPassword, "argon2$argon2i$v=19$m=512,t=2,p=2$S1E4emVLNndLUnVS$RUET3AC8iXvcVPD2TRjvVQ"},
	{"argon2", "Parity-Pass-2026 ü", "argon2$argon2id$v=19$m=102400,t=2,p=8$YWJjZGVmZ2hpamtsbW5vcHFyc3R1dg$IgorAEoC45Hed6TrnrYvCyIvYcj3785+rmJayoEyW88"},
	{"scrypt", djangoVectorPassword, "scrypt$1024$KQ8zeK6wKRuR$8$1$2zpA2t8XIzkwUJt/gAxj+ZKRLC7bZZw5TTgqzItBGcPe8pT9KbHRskDc3lpjCtLQFP4x2BhNAVgd5ZI/OQXNuw=="},
}

func TestVerifyDjangoHashes(t *testing.T) {
	pw := store.NewPasswords(store.DefaultArgon2, 2)
	ctx := context.Background()
	for _, v := range djangoVectors {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			if name, ok := store.DjangoHashAlgorithm(v.encoded); name != v.name || !ok {
				t.Errorf("DjangoHashAlgorithm = %q, %v", name, ok)
			}
			if !pw.NeedsRehash(v.encoded) {
				t.Error("a Django hash does not need a rehash")
			}
			for _, tc := range []struct {
				password string
				want     bool
			}{{v.password, true}, {strings.ToUpper(v.password) + "x", false}} {
				if ok, err := pw.Verify(ctx, v.encoded, tc.password); ok != tc.want || err != nil {
					t.Errorf("Verify(%q) = %v, %v; want %v", tc.password, ok, err, tc.want)
				}
			}
		})
	}
}

func TestDjangoHashesRefused(t *testing.T) {
	pw := store.NewPasswords(store.DefaultArgon2, 1)
	ctx := context.Background()
	// Unusable: understood, never matches, no error.
	for _, enc := range []string{"!", "!Ab3dE9xKq2mN7pQ4rS8tU1vW5yZ0cF6gH2jL9nP"} {
		if name, ok := store.DjangoHashAlgorithm(enc); name != "unusable" || !ok {
			t.Errorf("DjangoHashAlgorithm(%q) = %q, %v", enc, name, ok)
		}
		if ok, err := pw.Verify(ctx, enc, enc[1:]); ok || err != nil {
			t.Errorf("Verify(unusable %q) = %v, %v", enc, ok, err)
		}
	}
	// Not verified: legacy hashers, an argon2 too old for its version field, and
	// costs beyond what a login may spend. Each is an error, not a silent mismatch.
	for _, enc := range []string{
		"md5$KQ8zeK6wKRuR$0137e4d74cb2d9ed9cb1a5f391f6175e",
		"sha1$$22e6217f026c7a395f0840c1ffbdb163072419e7",
		"crypt$$KQW3RFkgPSuuA",
		"rot13$1$x$y",
		"argon2$argon2i$m=8,t=1,p=1$c29tZXNhbHQ$gwQOXSNhxiOxPOA0+PY10P9QFO4NAYysnqRt1GSQLE55m+2GYDt9FEjPMHhP2Cuf0nOEXXMocVrsJAtNSsKyfg",
		"argon2$argon2d$v=19$m=512,t=2,p=2$S1E4emVLNndLUnVS$RUET3AC8iXvcVPD2TRjvVQ",
		"argon2$argon2id$v=19$m=99999999,t=2,p=2$S1E4emVLNndLUnVS$RUET3AC8iXvcVPD2TRjvVQ",
		"pbkdf2_sha256$-24000$KQ8zeK6wKRuR$cmhbSt1XVKuO4FGd9+AX8qSBD4Z0395nZatXTJpEtTY=",
		"pbkdf2_sha256$NaN$KQ8zeK6wKRuR$cmhbSt1XVKuO4FGd9+AX8qSBD4Z0395nZatXTJpEtTY=",
		"pbkdf2_sha256$2000000000$KQ8zeK6wKRuR$cmhbSt1XVKuO4FGd9+AX8qSBD4Z0395nZatXTJpEtTY=",
		"pbkdf2_sha256$24000$KQ8zeK6wKRuR$not base64",
		"pbkdf2_sha256$24000$KQ8zeK6wKRuR",
		"bcrypt_sha256$$2b$31$LZSJchsWG/DrBy1erNs4eeYo6tZNlLFQmONdxN9HPesa1EyXVcTXK",
		"bcrypt$2b$12$LZSJchsWG/DrBy1erNs4ee31eJ7DaWiuwhDOC7aqIyqGGggfu6Y/.",
		"scrypt$1048576$KQ8zeK6wKRuR$64$1$Z092VMqf",
		"scrypt$1000$KQ8zeK6wKRuR$8$1$Z092VMqf",
		"plaintext",
	} {
		if _, ok := store.DjangoHashAlgorithm(enc); ok {
			t.Errorf("DjangoHashAlgorithm(%q) claims support", enc)
		}
		if ok, err := pw.Verify(ctx, enc, djangoVectorPassword); ok || err == nil {
			t.Errorf("Verify(%q) = %v, %v; want an error", enc, ok, err)
		}
	}
}

func TestNeedsRehash(t *testing.T) {
	pw := store.NewPasswords(store.Argon2Params{Time: 1, Memory: 64, Threads: 1, KeyLen: 32}, 1)
	h, err := pw.Hash(context.Background(), "a-new-password")
	if err != nil {
		t.Fatal(err)
	}
	if pw.NeedsRehash(h) {
		t.Error("gardend's own hash needs a rehash")
	}
}
