package embedded

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// lockName is a file name for a collection: its name when that is plain,
// else a hash of it.
func lockName(collection string) string {
	if collection != "" && len(collection) <= 64 && strings.Trim(collection, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "" {
		return collection
	}
	sum := sha256.Sum256([]byte(collection))
	return hex.EncodeToString(sum[:8])
}
