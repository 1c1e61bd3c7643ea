package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/keys"
	_ "github.com/quarry-rag/quarry/store/weaviate"
)

// phaseStats counts what one phase of the failure test saw.
type phaseStats struct {
	ok, failed int
	lat        []time.Duration
}

func (p *phaseStats) String() string {
	if len(p.lat) == 0 {
		return fmt.Sprintf("%d ok, %d failed", p.ok, p.failed)
	}
	slices.Sort(p.lat)
	return fmt.Sprintf("%d ok, %d failed, p50 %v, p99 %v", p.ok, p.failed,
		p.lat[len(p.lat)/2].Round(100*time.Microsecond), p.lat[len(p.lat)*99/100].Round(100*time.Microsecond))
}

// TestWeaviateNodeFailure writes objects through the HTTP API, one request
// at a time, into a three-node Weaviate cluster (three shards, three
// replicas, QUORUM) while searching, kills one node with SIGKILL, starts it
// again, and then checks that every acknowledged write is readable, that
// searches answered during the outage, and that the restarted node caught
// up. scripts/weaviate.sh sets the variables (weaviate_up 3).
func TestWeaviateNodeFailure(t *testing.T) {
	base, root := os.Getenv("QUARRY_TEST_WEAVIATE_CLUSTER_URL"), os.Getenv("QUARRY_TEST_WEAVIATE_ROOT")
	if base == "" || root == "" {
		t.Skip("QUARRY_TEST_WEAVIATE_CLUSTER_URL and QUARRY_TEST_WEAVIATE_ROOT are not set: start a cluster with `. scripts/weaviate.sh; weaviate_up 3`")
	}
	if testing.Short() {
		t.Skip("the node-failure test takes about half a minute")
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	prefix := "F" + strings.ToUpper(hex.EncodeToString(r[:]))
	f := newFixture(t, func(c *config) { c.store = base + "&prefix=" + prefix })
	http1 := "http://" + strings.Split(strings.TrimPrefix(base, "weaviate://"), "?")[0]
	t.Cleanup(func() { dropClasses(t, http1, prefix) })
	writer := mustKey(t, f.keys, keys.Spec{Permission: keys.PermWrite})

	const before, outage, after = 0, 1, 2
	var phase atomic.Int32
	var mu sync.Mutex
	writes, searches := [3]phaseStats{}, [3]phaseStats{}
	var acked []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(path string, body any) (int, error) {
		js, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url+path, strings.NewReader(string(js)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+writer)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// The collection exists before the clock starts.
	if code, err := post("/v1/collections/shop/objects", map[string]any{"id": "seed", "title": "kettle"}); err != nil || code != 200 {
		t.Fatalf("first write: %d %v", code, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			id := fmt.Sprintf("o-%05d", i)
			p := phase.Load()
			start := time.Now()
			code, err := post("/v1/collections/shop/objects", map[string]any{"id": id, "title": "kettle " + strconv.Itoa(i), "price": i})
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			if err == nil && code == 200 {
				writes[p].ok++
				writes[p].lat = append(writes[p].lat, time.Since(start))
				acked = append(acked, id)
			} else {
				writes[p].failed++
			}
			mu.Unlock()
		}
	})
	wg.Go(func() {
		for ctx.Err() == nil {
			p := phase.Load()
			start := time.Now()
			code, err := post("/v1/collections/shop/search", map[string]any{"query": "kettle", "mode": "keyword"})
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			if err == nil && code == 200 {
				searches[p].ok++
				searches[p].lat = append(searches[p].lat, time.Since(start))
			} else {
				searches[p].failed++
			}
			mu.Unlock()
		}
	})
	time.Sleep(4 * time.Second)
	pid, err := os.ReadFile(filepath.Join(root, "c2", "pid"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	phase.Store(outage)
	time.Sleep(8 * time.Second)
	restart := exec.Command("bash", "-c", ". ../scripts/weaviate.sh && weaviate_start 2")
	restart.Env = append(os.Environ(), "WVROOT="+root)
	if out, err := restart.CombinedOutput(); err != nil {
		t.Fatalf("restart node 2: %v\n%s", err, out)
	}
	back := time.Now()
	phase.Store(after)
	time.Sleep(5 * time.Second)
	cancel()
	wg.Wait()
	t.Logf("node 2 down for %v", back.Sub(killed).Round(100*time.Millisecond))
	for i, name := range []string{"before", "outage", "after"} {
		t.Logf("%-7s writes: %v; searches: %v", name, &writes[i], &searches[i])
	}

	// Every acknowledged write is there, read at QUORUM.
	c, err := f.store.Collection(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(acked))
	for i, id := range acked {
		ids[i] = document.ChunkID(document.SourceObject, id, 0, "")
	}
	docs, err := c.Get(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(ids) {
		t.Errorf("%d of %d acknowledged writes are readable", len(docs), len(ids))
	}
	if searches[outage].ok == 0 {
		t.Error("no search answered while a node was down")
	}
	if writes[outage].ok == 0 {
		t.Error("no write was acknowledged while a node was down")
	}

	// The restarted node catches up: its replicas of every shard hold as
	// many objects as the others'.
	class := prefix + "_shop"
	deadline := time.Now().Add(90 * time.Second)
	for {
		counts, err := shardCounts(http1, class)
		if err == nil && caughtUp(counts) {
			t.Logf("node 2 caught up %v after it came back: %v", time.Since(back).Round(100*time.Millisecond), counts["c2"])
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("node 2 has not caught up 90 s after it came back: %v %v", counts, err)
			break
		}
		time.Sleep(time.Second)
	}
}

// shardCounts reads each node's object count per shard of a class.
func shardCounts(base, class string) (map[string]map[string]int, error) {
	resp, err := http.Get(base + "/v1/nodes/" + class + "?output=verbose")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var nodes struct {
		Nodes []struct {
			Name   string `json:"name"`
			Shards []struct {
				Name        string `json:"name"`
				ObjectCount int    `json:"objectCount"`
			} `json:"shards"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&nodes); err != nil {
		return nil, err
	}
	out := map[string]map[string]int{}
	for _, n := range nodes.Nodes {
		out[n.Name] = map[string]int{}
		for _, s := range n.Shards {
			out[n.Name][s.Name] = s.ObjectCount
		}
	}
	return out, nil
}

// caughtUp reports whether node c2 holds every shard with the most
// objects any node has for it.
func caughtUp(counts map[string]map[string]int) bool {
	c2, ok := counts["c2"]
	if !ok || len(c2) == 0 {
		return false
	}
	for _, shards := range counts {
		for shard, n := range shards {
			if c2[shard] < n {
				return false
			}
		}
	}
	return true
}

func dropClasses(t *testing.T, base, prefix string) {
	resp, err := http.Get(base + "/v1/schema")
	if err != nil {
		t.Logf("list classes: %v", err)
		return
	}
	defer resp.Body.Close()
	var schema struct {
		Classes []struct {
			Class string `json:"class"`
		} `json:"classes"`
	}
	if json.NewDecoder(resp.Body).Decode(&schema) != nil {
		return
	}
	for _, c := range schema.Classes {
		if strings.HasPrefix(c.Class, prefix) {
			req, _ := http.NewRequest(http.MethodDelete, base+"/v1/schema/"+c.Class, nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
}
