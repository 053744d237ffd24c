package cli

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/gardend/gardend/server"
	"github.com/gardend/gardend/store"
)

// memoryLimitAuto is --memory-limit's default: GOMEMLIMIT when set, else
// server.DefaultMemoryLimit.
const memoryLimitAuto = "auto"

// memoryLimit resolves --memory-limit for maxHashing hashes at once: the limit to set
// and why, or ok=false to keep the runtime's own (GOMEMLIMIT).
func memoryLimit(flag string, maxHashing int) (limit int64, source string, ok bool, err error) {
	budget := server.HashingMemory(store.DefaultArgon2, maxHashing)
	switch flag {
	case memoryLimitAuto:
		if v := os.Getenv("GOMEMLIMIT"); v != "" {
			return 0, "GOMEMLIMIT=" + v, false, nil
		}
		return server.DefaultMemoryLimit(store.DefaultArgon2, maxHashing), "default", true, nil
	case "off":
		return math.MaxInt64, "--memory-limit off", true, nil
	}
	limit, err = parseByteSize(flag)
	if err != nil {
		return 0, "", false, fmt.Errorf("--memory-limit %q: %w", flag, err)
	}
	if limit <= budget {
		return 0, "", false, fmt.Errorf("--memory-limit %s is not above the hashing budget of %d MiB (--max-hashing %d × %d MiB): raise it or lower --max-hashing",
			flag, budget>>20, maxHashing, budget/int64(maxHashing)>>20)
	}
	return limit, "--memory-limit", true, nil
}

// parseByteSize reads a positive size as --memory-limit takes it ("512MiB", "1GiB";
// the units of byteSize).
func parseByteSize(s string) (int64, error) {
	var b byteSize
	if err := b.Set(s); err != nil || b <= 0 {
		return 0, errors.New("want a size such as 256MiB or 1GiB (units B, KiB, MiB, GiB, TiB), auto or off")
	}
	return int64(b), nil
}
