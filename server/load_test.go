package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/server"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/embedded"
)

// loadWords make the synthetic corpus and its queries.
var loadWords = strings.Fields(`refund shipping invoice warehouse parcel return policy customer order payment
delivery courier tracking label address account password login report export import schedule weekday
holiday discount coupon price tax receipt supplier contract renewal cancel upgrade storage backup restore
server cluster index search answer citation passage heading chapter manual guide release version`)

func sentence(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = loadWords[r.IntN(len(loadWords))]
	}
	return strings.Join(w, " ") + "."
}

// benchServer is a server on the embedded store (the default engine) with
// a corpus of n documents, behind a loopback HTTP server.
type benchServer struct {
	url  string
	coll *store.Collection
	emb  embed.Embedder
	srv  *server.Server
	hs   *httptest.Server
}

func newBenchServer(tb testing.TB, n int) *benchServer {
	tb.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "embedded:"+tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	emb, err := hash.New(hash.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := st.CreateCollection(ctx, store.CollectionConfig{Name: "default", Model: emb.Model()})
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for start := 0; start < n; start += 256 {
		var docs []*document.Document
		for i := start; i < min(n, start+256); i++ {
			d := document.New(sentence(r, 40))
			d.ID, d.SourceName = fmt.Sprintf("doc-%05d", i), fmt.Sprintf("doc-%05d.md", i)
			docs = append(docs, d)
		}
		if err := ingest.Add(ctx, c, emb, docs, nil); err != nil {
			tb.Fatal(err)
		}
	}
	kb, err := quarry.New(ctx, st, quarry.WithEmbedder(emb), quarry.WithMode("keyword"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { kb.Close() })
	srv, err := server.New(server.Config{KB: kb, UploadDir: tb.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	tb.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	return &benchServer{url: hs.URL, coll: c, emb: emb, srv: srv, hs: hs}
}

// librarySearch is what the search endpoint does, called directly.
func (b *benchServer) librarySearch(ctx context.Context, q, mode string) error {
	req := store.SearchRequest{Query: q, Mode: store.Mode(mode), TopK: 10}
	if mode != "keyword" {
		v, err := embed.EmbedQuery(ctx, b.emb, []string{q})
		if err != nil {
			return err
		}
		req.Embedding = v[0]
	}
	_, err := b.coll.Search(ctx, req)
	return err
}

func (b *benchServer) serverSearch(client *http.Client, q, mode string) error {
	body, _ := json.Marshal(map[string]any{"query": q, "mode": mode, "top_k": 10})
	resp, err := client.Post(b.url+"/v1/collections/default/search", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// overhead measures search p50 through the library and through the
// server, interleaved, in one run.
func overhead(tb testing.TB, b *benchServer, n int, mode string) (lib, srv time.Duration) {
	tb.Helper()
	ctx := context.Background()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	r := rand.New(rand.NewPCG(3, 4))
	var libD, srvD []time.Duration
	for i := range n + 50 {
		q := sentence(r, 3)
		t0 := time.Now()
		if err := b.librarySearch(ctx, q, mode); err != nil {
			tb.Fatal(err)
		}
		t1 := time.Now()
		if err := b.serverSearch(client, q, mode); err != nil {
			tb.Fatal(err)
		}
		t2 := time.Now()
		if i >= 50 { // warm-up
			libD, srvD = append(libD, t1.Sub(t0)), append(srvD, t2.Sub(t1))
		}
	}
	return percentile(libD, .5), percentile(srvD, .5)
}

// BenchmarkServerOverhead reports search p50 through the library and
// through the HTTP API in the same run:
//
//	go test -run '^$' -bench ServerOverhead -benchtime 2000x ./server/
func BenchmarkServerOverhead(b *testing.B) {
	for _, mode := range []string{"keyword", "hybrid"} {
		b.Run(mode, func(b *testing.B) {
			bs := newBenchServer(b, 5000)
			b.ResetTimer()
			lib, srv := overhead(b, bs, b.N, mode)
			b.ReportMetric(float64(lib.Microseconds()), "lib-p50-µs")
			b.ReportMetric(float64(srv.Microseconds()), "server-p50-µs")
			b.ReportMetric(float64((srv - lib).Microseconds()), "overhead-µs")
		})
	}
}

// TestLoad runs 32 clients against a loopback server for 30 s (or
// QUARRY_LOAD_DURATION), mixing searches with ingestion (JSON documents
// and file uploads that become jobs), and prints requests, errors and
// latency percentiles per operation. It wants no error, and the server's
// search p50 within 0.5 ms of the library's. Run with
//
//	QUARRY_LOAD=1 go test -run TestLoad -v ./server/
func TestLoad(t *testing.T) {
	if os.Getenv("QUARRY_LOAD") != "1" {
		t.Skip("set QUARRY_LOAD=1 to run the 30 s load test")
	}
	dur := 30 * time.Second
	if d, err := time.ParseDuration(os.Getenv("QUARRY_LOAD_DURATION")); err == nil {
		dur = d
	}
	const clients = 32
	b := newBenchServer(t, 5000)

	lib, srv := overhead(t, b, 2000, "keyword")
	t.Logf("search p50 (keyword, 5000 docs): library %v, server %v, overhead %v", lib, srv, srv-lib)
	if srv > lib+500*time.Microsecond {
		t.Errorf("server p50 %v exceeds library p50 %v + 0.5 ms", srv, lib)
	}

	type sample struct {
		op  string
		d   time.Duration
		err error
	}
	var mu sync.Mutex
	stats := map[string][]time.Duration{}
	errs := map[string]int{}
	var firstErr []string
	record := func(s sample) {
		mu.Lock()
		defer mu.Unlock()
		stats[s.op] = append(stats[s.op], s.d)
		if s.err != nil {
			errs[s.op]++
			if len(firstErr) < 5 {
				firstErr = append(firstErr, s.op+": "+s.err.Error())
			}
		}
	}
	transport := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	defer transport.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 99))
			for i := 0; ctx.Err() == nil; i++ {
				var op string
				var err error
				t0 := time.Now()
				switch x := r.IntN(100); {
				case x < 45:
					op = "search keyword"
					err = b.serverSearch(client, sentence(r, 3), "keyword")
				case x < 85:
					op = "search hybrid"
					err = b.serverSearch(client, sentence(r, 3), "hybrid")
				case x < 97:
					op = "add documents"
					docs := make([]map[string]any, 8)
					for j := range docs {
						docs[j] = map[string]any{"id": fmt.Sprintf("c%d-%d-%d", c, i, j), "text": sentence(r, 60), "source": fmt.Sprintf("client-%d.md", c)}
					}
					err = postJSON(client, b.url+"/v1/collections/default/documents", map[string]any{"documents": docs})
				default:
					op = "upload"
					err = postUpload(client, b.url+"/v1/collections/default/uploads", fmt.Sprintf("c%d-%d.md", c, i), "# Upload\n\n"+sentence(r, 200)+"\n")
				}
				record(sample{op: op, d: time.Since(t0), err: err})
			}
		}()
	}
	wg.Wait()

	var out strings.Builder
	fmt.Fprintf(&out, "\n%d clients, %v, loopback, embedded store, 5000 documents at start\n", clients, dur)
	fmt.Fprintf(&out, "| op | requests | errors | p50 | p95 | p99 |\n|---|---:|---:|---:|---:|---:|\n")
	total, totalErr := 0, 0
	for _, op := range []string{"search keyword", "search hybrid", "add documents", "upload"} {
		d := stats[op]
		total, totalErr = total+len(d), totalErr+errs[op]
		fmt.Fprintf(&out, "| %s | %d | %d | %v | %v | %v |\n", op, len(d), errs[op],
			percentile(d, .5).Round(time.Microsecond), percentile(d, .95).Round(time.Microsecond), percentile(d, .99).Round(time.Microsecond))
	}
	fmt.Fprintf(&out, "total %d requests (%.0f/s), %d errors\n", total, float64(total)/dur.Seconds(), totalErr)
	t.Log(out.String())
	if totalErr > 0 {
		t.Errorf("%d errors, first: %v", totalErr, firstErr)
	}
}

func postJSON(client *http.Client, url string, body any) error {
	js, _ := json.Marshal(body)
	resp, err := client.Post(url, "application/json", bytes.NewReader(js))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return nil
}

func postUpload(client *http.Client, url, name, text string) error {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", name)
	io.WriteString(w, text)
	mw.Close()
	resp, err := client.Post(url, mw.FormDataContentType(), &buf)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return nil
}
