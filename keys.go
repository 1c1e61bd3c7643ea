package quarry

import (
	"path/filepath"

	"github.com/quarry-rag/quarry/config"
	"github.com/quarry-rag/quarry/keys"
)

// keysFileName is where a knowledge base keeps its API keys, hashed.
const keysFileName = "keys.json"

// Keys opens the knowledge base's API keys (keys.json in its directory;
// in the working directory for a knowledge base without one).
func (kb *KB) Keys() (*keys.File, error) {
	return keys.Open(filepath.Join(kb.dir, keysFileName))
}

// OpenKeys opens the API keys of the knowledge base in dir, or of the one
// found upward from the working directory when dir is "" (ErrNoKB when
// there is none), without opening its store.
func OpenKeys(dir string) (*keys.File, error) {
	if dir == "" {
		d, found, err := config.FindKB(".", nil)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, ErrNoKB
		}
		dir = d
	}
	return keys.Open(filepath.Join(dir, keysFileName))
}
