package weaviate_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/storetest"
	"github.com/quarry-rag/quarry/store/weaviate"
)

// serverURL is the Weaviate under test (weaviate://host:port, with
// replicas=N and shards=N for a cluster); the tests skip without it.
func serverURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("QUARRY_TEST_WEAVIATE_URL")
	if u == "" {
		t.Skip("QUARRY_TEST_WEAVIATE_URL is not set: start Weaviate with scripts/weaviate.sh (`. scripts/weaviate.sh; weaviate_up`) and set it to weaviate://127.0.0.1:8081")
	}
	return u
}

// openFresh opens the server under a class prefix of its own, so each
// test starts empty, and drops that prefix's classes afterwards.
func openFresh(t *testing.T) *store.Store {
	t.Helper()
	base := serverURL(t)
	var r [5]byte
	_, _ = rand.Read(r[:])
	prefix := "T" + strings.ToUpper(hex.EncodeToString(r[:]))
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	s, err := store.Open(context.Background(), base+sep+"prefix="+prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropPrefix(t, base, prefix) })
	return s
}

func httpBase(t *testing.T, u string) string {
	host := strings.TrimPrefix(u, "weaviate://")
	host, _, _ = strings.Cut(host, "?")
	if _, h, ok := strings.Cut(host, "@"); ok {
		host = h
	}
	return "http://" + host
}

func dropPrefix(t *testing.T, u, prefix string) {
	base := httpBase(t, u)
	resp, err := http.Get(base + "/v1/schema")
	if err != nil {
		t.Errorf("list classes: %v", err)
		return
	}
	defer resp.Body.Close()
	var schema struct {
		Classes []struct {
			Class string `json:"class"`
		} `json:"classes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&schema); err != nil {
		t.Errorf("list classes: %v", err)
		return
	}
	for _, c := range schema.Classes {
		if strings.HasPrefix(c.Class, prefix) {
			req, _ := http.NewRequest(http.MethodDelete, base+"/v1/schema/"+c.Class, nil)
			if resp, err := http.DefaultClient.Do(req); err != nil {
				t.Errorf("drop %s: %v", c.Class, err)
			} else {
				resp.Body.Close()
			}
		}
	}
}

func TestConformance(t *testing.T) {
	serverURL(t)
	storetest.Run(t, func(t *testing.T) *store.Store { return openFresh(t) })
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"weaviate://",
		"weaviate://h:1?consistency=SOME",
		"weaviate://h:1?replicas=0",
		"weaviate://h:1?shards=x",
		"weaviate://h:1?prefix=lower",
	} {
		if _, err := weaviate.Open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", u)
		}
	}
}
