// Package weaviatetest gives tests that need Weaviate a class prefix of
// their own on the server QUARRY_TEST_WEAVIATE_URL (one node) or
// QUARRY_TEST_WEAVIATE_CLUSTER_URL (a cluster) names, so tests never share
// classes, and drops the prefix's classes when the test ends.
package weaviatetest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// The variables naming the servers; scripts/weaviate.sh sets them.
const (
	NodeEnv    = "QUARRY_TEST_WEAVIATE_URL"
	ClusterEnv = "QUARRY_TEST_WEAVIATE_CLUSTER_URL"
)

// URL returns the server env names, skipping the test without it.
func URL(t testing.TB, env string) string {
	t.Helper()
	u := os.Getenv(env)
	if u == "" {
		t.Skipf("%s is not set: Weaviate integration tests skipped (.ci/run starts Weaviate and sets it; `. scripts/weaviate.sh; weaviate_up 1` for one node, `weaviate_up 3` for a cluster, by hand)", env)
	}
	return u
}

// Fresh returns base (a weaviate:// URL) with a class prefix no other test
// uses; the prefix's classes are dropped when the test ends.
func Fresh(t testing.TB, base string) string {
	t.Helper()
	var r [5]byte
	_, _ = rand.Read(r[:])
	prefix := "T" + strings.ToUpper(hex.EncodeToString(r[:]))
	t.Cleanup(func() { Drop(t, base, prefix) })
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "prefix=" + prefix
}

// HTTP is the server's REST address (http://host:port) for a weaviate://
// URL.
func HTTP(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return "http://" + u.Host
}

// Drop deletes every class whose name starts with prefix.
func Drop(t testing.TB, base, prefix string) {
	resp, err := http.Get(HTTP(base) + "/v1/schema")
	if err != nil {
		t.Logf("weaviatetest: list classes: %v", err)
		return
	}
	defer resp.Body.Close()
	var schema struct {
		Classes []struct {
			Class string `json:"class"`
		} `json:"classes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&schema); err != nil {
		t.Logf("weaviatetest: list classes: %v", err)
		return
	}
	for _, c := range schema.Classes {
		if !strings.HasPrefix(c.Class, prefix) {
			continue
		}
		req, _ := http.NewRequest(http.MethodDelete, HTTP(base)+"/v1/schema/"+c.Class, nil)
		if resp, err := http.DefaultClient.Do(req); err != nil {
			t.Logf("weaviatetest: drop %s: %v", c.Class, err)
		} else {
			resp.Body.Close()
		}
	}
}
