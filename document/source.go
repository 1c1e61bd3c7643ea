package document

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Source is the identity of where documents came from. Ingestion syncs by
// source: all chunks of one source are replaced together.
type Source struct {
	Type string
	Name string
}

// FileSource returns the identity of the file at p ingested from root:
// sourceType "file" and the path relative to root, "/"-separated. A path
// outside root is an error.
func FileSource(root, p string) (Source, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return Source{}, fmt.Errorf("file source: root %s: %w", root, err)
	}
	absPath, err := filepath.Abs(p)
	if err != nil {
		return Source{}, fmt.Errorf("file source: %s: %w", p, err)
	}
	rel, err := filepath.Rel(absRoot, absPath)
	if err != nil {
		return Source{}, fmt.Errorf("file source: %s is not under %s: %w", p, root, err)
	}
	if rel == "." {
		// A single file given as its own root is named by its base name.
		rel = filepath.Base(absPath)
	}
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return Source{}, fmt.Errorf("file source: %s is not under %s", p, root)
	}
	return Source{Type: SourceFile, Name: filepath.ToSlash(rel)}, nil
}

// URLSource returns the identity of a web page: sourceType "url" and the
// normalised URL (lower-case scheme and host, default port dropped, empty
// path as "/", dot segments resolved, fragment dropped).
func URLSource(raw string) (Source, error) {
	n, err := NormalizeURL(raw)
	if err != nil {
		return Source{}, err
	}
	return Source{Type: SourceURL, Name: n}, nil
}

// NormalizeURL normalises an absolute http(s) URL for use as a source name.
func NormalizeURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("url source %q: %w", raw, err)
	}
	if !u.IsAbs() || u.Host == "" {
		return "", fmt.Errorf("url source %q: need an absolute URL with a host", raw)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment = ""
	u.RawFragment = ""
	if u.Path == "" {
		u.Path = "/"
	} else {
		trailing := strings.HasSuffix(u.Path, "/")
		u.Path = path.Clean(u.Path)
		if trailing && u.Path != "/" {
			u.Path += "/"
		}
	}
	u.RawPath = ""
	return u.String(), nil
}

// ObjectSource is the identity of a JSON object with the given id.
func ObjectSource(id string) Source { return Source{Type: SourceObject, Name: id} }

// ConversationSource is the identity of the turns of one thread.
func ConversationSource(threadID string) Source {
	return Source{Type: SourceConversation, Name: threadID}
}

// ChunkID returns the deterministic id of a chunk: lowercase hex of the first
// 16 bytes of SHA-256(sourceType ␀ sourceName ␀ index ␀ hex(SHA-256(content))),
// with index in decimal. Re-ingesting identical content yields the same id,
// so it is an upsert rather than a duplicate.
func ChunkID(sourceType, sourceName string, index int, content string) string {
	ch := sha256.Sum256([]byte(content))
	h := sha256.New()
	h.Write([]byte(sourceType))
	h.Write([]byte{0})
	h.Write([]byte(sourceName))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(index)))
	h.Write([]byte{0})
	var hexContent [64]byte
	hex.Encode(hexContent[:], ch[:])
	h.Write(hexContent[:])
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:16])
}

// ContentHash returns the lowercase hex SHA-256 of text; ingestion uses it to
// skip unchanged sources and as the embedding cache key.
func ContentHash(text string) string {
	s := sha256.Sum256([]byte(text))
	return hex.EncodeToString(s[:])
}
