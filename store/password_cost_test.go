package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gardend/gardend/store"
)

// BenchmarkHashCosts measures a check of each kind of hash a site may hold, to set
// the cost constants of store.HashKind (password_cost.go): compare each with argon2id-default (the unit).
// cpu-ms/op is the process's CPU time per check, steadier than wall time on a busy
// machine.
func BenchmarkHashCosts(b *testing.B) {
	pw := store.NewPasswords(store.DefaultArgon2, 1)
	ctx := context.Background()
	def, err := pw.Hash(ctx, "garden-secret")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, enc string }{
		{"argon2id-default", def},
		{"pbkdf2_sha256-100k", "pbkdf2_sha256$100000$LuKlEyk1ZdbXx8ctkvF9c7$21bgLk3zi8fHBCZdTkAKQT8e0nIGe7A+gmS4zFaqzd4="},
		{"pbkdf2_sha1-100k", "pbkdf2_sha1$100000$KQ8zeK6wKRuR$tSJh4xdxfMJotlxfkCGjTFpGYZU="},
		{"bcrypt-10", "bcrypt$$2b$10$X2DPxLUP650uETGYOrXZS.4zW1Jk4nVG1fyYUXmfvOi3Zfe4DEgpK"},
		{"scrypt-16384-8-1", "scrypt$16384$KQ8zeK6wKRuR$8$1$2zpA2t8XIzkwUJt/gAxj+ZKRLC7bZZw5TTgqzItBGcPe8pT9KbHRskDc3lpjCtLQFP4x2BhNAVgd5ZI/OQXNuw=="},
		{"argon2-django-m19456-t2-p1", "argon2$argon2id$v=19$m=19456,t=2,p=1$YWJjZGVmZ2hpamtsbW5vcHFyc3R1dg$IgorAEoC45Hed6TrnrYvCyIvYcj3785+rmJayoEyW88"},
	} {
		b.Run(c.name, func(b *testing.B) {
			cpu := cpuTime()
			for b.Loop() {
				if _, err := pw.Verify(ctx, c.enc, "garden-secret"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// Django's default hashes, of every hasher, are checked; a hash costing more than
// MaxHashCost logins (pbkdf2_sha1 with 10,000,000 iterations: seconds of CPU per wrong
// password) is refused without a hash being computed.
func TestCostlyHashesNotChecked(t *testing.T) {
	pw := store.NewPasswords(store.DefaultArgon2, 2)
	for _, enc := range []string{
		"pbkdf2_sha256$1200000$LuKlEyk1ZdbXx8ctkvF9c7$21bgLk3zi8fHBCZdTkAKQT8e0nIGe7A+gmS4zFaqzd4=", // Django 6.0
		"pbkdf2_sha256$320000$LuKlEyk1ZdbXx8ctkvF9c7$21bgLk3zi8fHBCZdTkAKQT8e0nIGe7A+gmS4zFaqzd4=",  // PlantMap's
		"bcrypt_sha256$$2b$12$oUP32hV8EeNB6PKWhzJtiOVWtaNlMIedibWBm5A747SYCqoI00EG2",
		"argon2$argon2id$v=19$m=102400,t=2,p=8$YWJjZGVmZ2hpamtsbW5vcHFyc3R1dg$IgorAEoC45Hed6TrnrYvCyIvYcj3785+rmJayoEyW88",
		"scrypt$16384$KQ8zeK6wKRuR$8$1$2zpA2t8XIzkwUJt/gAxj+ZKRLC7bZZw5TTgqzItBGcPe8pT9KbHRskDc3lpjCtLQFP4x2BhNAVgd5ZI/OQXNuw==",
	} {
		if err := pw.Checkable(enc); err != nil {
			t.Errorf("a Django default is not checked: %s: %v", enc, err)
		}
	}
	for _, enc := range []string{
		"pbkdf2_sha1$10000000$KQ8zeK6wKRuR$tSJh4xdxfMJotlxfkCGjTFpGYZU=",
		"pbkdf2_sha256$9000000$LuKlEyk1ZdbXx8ctkvF9c7$21bgLk3zi8fHBCZdTkAKQT8e0nIGe7A+gmS4zFaqzd4=",
		"bcrypt$$2b$14$X2DPxLUP650uETGYOrXZS.4zW1Jk4nVG1fyYUXmfvOi3Zfe4DEgpK",
		"argon2$argon2id$v=19$m=65536,t=64,p=1$YWJjZGVmZ2hpamtsbW5vcHFyc3R1dg$IgorAEoC45Hed6TrnrYvCyIvYcj3785+rmJayoEyW88",
		"$argon2id$v=19$m=47104,t=40,p=1$c2FsdHNhbHRzYWx0c2FsdA$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U",
	} {
		before := pw.Hashes()
		ok, err := pw.Verify(context.Background(), enc, "garden-secret")
		if ok || !errors.Is(err, store.ErrHashTooCostly) || pw.Hashes() != before {
			t.Errorf("Verify(%s) = %v, %v after %d hashes; want ErrHashTooCostly and none", enc, ok, err, pw.Hashes()-before)
		}
		if _, cost, ok := store.HashKind(enc); !ok || cost <= store.MaxHashCost {
			t.Errorf("HashKind(%s) costs %v", enc, cost)
		}
	}
}

// A decoy costs one hash of its kind and never matches; the slowest kind stored is
// chosen, never one cheaper than gardend's own, nor one that is not checked.
func TestDecoys(t *testing.T) {
	pw := store.NewPasswords(store.DefaultArgon2, 2)
	ctx := context.Background()
	plantmap := "pbkdf2_sha256$320000$LuKlEyk1ZdbXx8ctkvF9c7$21bgLk3zi8fHBCZdTkAKQT8e0nIGe7A+gmS4zFaqzd4=" // "1234"
	d, err := pw.NewDecoy(plantmap)
	if err != nil {
		t.Fatal(err)
	}
	before := pw.Hashes()
	if err := pw.CheckDecoy(ctx, d, "1234"); err != nil || pw.Hashes() != before+1 {
		t.Fatalf("decoy check: %v, %d hashes", err, pw.Hashes()-before)
	}
	kinds := map[string]*store.HashKindCount{}
	own, _ := pw.Hash(ctx, "garden-secret")
	for _, h := range []string{own, own, plantmap, "!", "pbkdf2_sha1$10000000$KQ8zeK6wKRuR$tSJh4xdxfMJotlxfkCGjTFpGYZU=", "md5$x$y"} {
		store.CountHashKinds(kinds, h)
	}
	list := store.SortedHashKinds(kinds)
	if len(list) != 3 {
		t.Fatalf("kinds %+v", list)
	}
	if got := pw.SlowestDecoy(list); got.Kind() != "pbkdf2_sha256 iterations=320000" {
		t.Errorf("slowest decoy %s (%.2f logins)", got.Kind(), got.Cost())
	}
	cheap := map[string]*store.HashKindCount{}
	store.CountHashKinds(cheap, "pbkdf2_sha256$1000$LuKlEyk1ZdbXx8ctkvF9c7$21bgLk3zi8fHBCZdTkAKQT8e0nIGe7A+gmS4zFaqzd4=")
	if got := pw.SlowestDecoy(store.SortedHashKinds(cheap)); got.Kind() != "argon2id m=47104,t=1,p=1" {
		t.Errorf("decoy beside a cheap kind: %s", got.Kind())
	}
	bcrypt, err := pw.NewDecoy("bcrypt$$2b$04$X2DPxLUP650uETGYOrXZS.4zW1Jk4nVG1fyYUXmfvOi3Zfe4DEgpK")
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.CheckDecoy(ctx, bcrypt, djangoVectorPassword); err != nil {
		t.Fatal(err)
	}
}
