package bm25

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func buildSmall(t testing.TB, cfg Config, n int) *Index {
	c := newCorpus(4)
	x, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := x.Add(uint32(i*2), c.doc()); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

func TestPersistRoundTrip(t *testing.T) {
	cfg := Config{K1: 1.1, B: 0.6, TitleWeight: 2, Analyzer: AnalyzerConfig{Language: "en", NoStemming: true}}
	x := buildSmall(t, cfg, 300)
	for i := range 40 {
		if err := x.Delete(uint32(i * 6)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	n, err := x.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v (buffer %d)", n, err, buf.Len())
	}
	y, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if y.Config() != x.Config() || y.Len() != x.Len() || y.Terms() != x.Terms() {
		t.Fatalf("loaded %+v %d docs %d terms, want %+v %d %d", y.Config(), y.Len(), y.Terms(), x.Config(), x.Len(), x.Terms())
	}
	c := newCorpus(5)
	for range 200 {
		q := c.text(3)
		a, b := x.Search(q, 10, SearchOptions{}), y.Search(q, 10, SearchOptions{})
		if !slices.Equal(a, b) {
			t.Fatalf("query %q: %v after load, want %v", q, b, a)
		}
	}
	// The loaded index keeps working: deletes, re-adds and a second trip.
	if err := y.Delete(2); err != nil {
		t.Fatal(err)
	}
	if err := y.Add(0, Doc{ID: "again", Text: "search engine"}); err != nil {
		t.Fatal(err)
	}
	if err := y.Add(2, Doc{ID: "back", Text: "quarry stone"}); err != nil {
		t.Fatal(err)
	}
	var buf2 bytes.Buffer
	if _, err := y.WriteTo(&buf2); err != nil {
		t.Fatal(err)
	}
	z, err := Read(&buf2)
	if err != nil {
		t.Fatal(err)
	}
	if z.Len() != y.Len() || !z.Contains(0) || !z.Contains(2) {
		t.Fatalf("second load: %d docs", z.Len())
	}
	found := false
	for _, h := range z.Search("quarry stone", 1000, SearchOptions{}) {
		found = found || h.ID == "back" && h.Doc == 2
	}
	if !found {
		t.Fatal("re-added document not found after a second round trip")
	}
}

func TestReadCorrupt(t *testing.T) {
	x := buildSmall(t, Config{}, 20)
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	for i := range good {
		bad := slices.Clone(good)
		bad[i] ^= 0x40
		if _, err := Read(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipped byte %d: %v", i, err)
		}
	}
	for n := range len(good) {
		if _, err := Read(bytes.NewReader(good[:n])); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
}

func TestReadOtherVersion(t *testing.T) {
	x := buildSmall(t, Config{}, 3)
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	binary.LittleEndian.PutUint32(b[len(magic):], formatVersion+1)
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], castagnoli))
	if _, err := Read(bytes.NewReader(b)); err == nil || errors.Is(err, ErrCorrupt) {
		t.Fatalf("another version: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	x := buildSmall(f, Config{}, 5)
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		// Any input must load or fail cleanly; the checksum is skipped by
		// decoding the body directly so the fuzzer reaches the parser.
		if len(data) > len(magic)+4 {
			for _, v := range []uint32{readsFrom, formatVersion} {
				// An index that loads searches and takes a write without
				// panicking, whatever its lists hold.
				if x, err := decode(newDecoder(data[len(magic)+4:]), v); err == nil {
					x.Search("quarry stone search", 5, SearchOptions{})
					_ = x.Add(uint32(x.IDLimit()), Doc{ID: "fuzz", Text: "quarry"})
				}
			}
		}
		_, _ = Read(bytes.NewReader(data))
	})
}

// TestReadDefersForwardLists: an index read from disk derives its forward
// lists only when a write first needs them, and writes in any order after
// the read (an add before the first delete, deletes that compact) leave it
// searching exactly as the index that never left memory.
func TestReadDefersForwardLists(t *testing.T) {
	x := buildSmall(t, Config{}, 300)
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !y.fwdStale || len(y.fwd) != 0 {
		t.Fatal("Read derived the forward lists")
	}
	c := newCorpus(7)
	for _, ix := range []*Index{x, y} {
		if err := ix.Add(1001, Doc{ID: "new", Text: "quarry stone search"}); err != nil {
			t.Fatal(err)
		}
	}
	if !y.fwdStale {
		t.Fatal("an add derived the forward lists")
	}
	for i := range 200 {
		for _, ix := range []*Index{x, y} {
			if err := ix.Delete(uint32(i * 2)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := y.Delete(1001); err != nil {
		t.Fatal(err)
	}
	if err := x.Delete(1001); err != nil {
		t.Fatal(err)
	}
	if y.fwdStale || y.deadPostings != x.deadPostings || y.postingCount != x.postingCount {
		t.Fatalf("after the deletes: stale %v, dead %d/%d, postings %d/%d", y.fwdStale, y.deadPostings, x.deadPostings, y.postingCount, x.postingCount)
	}
	for range 200 {
		q := c.text(3)
		if a, b := x.Search(q, 10, SearchOptions{}), y.Search(q, 10, SearchOptions{}); !slices.Equal(a, b) {
			t.Fatalf("query %q: %v after load, want %v", q, b, a)
		}
	}
}

// TestReadDecodesListsOnDemand: an index read from disk decodes a term's
// list only when a search first needs it — concurrent searches decode
// each once and rank exactly as the index that never left memory — and
// the first write decodes the rest.
func TestReadDecodesListsOnDemand(t *testing.T) {
	x := buildSmall(t, Config{}, 300)
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	decoded := func() int {
		n := 0
		for i := range y.lists {
			if atomic.LoadUint32(&y.lists[i].ready) == 1 {
				n++
			}
		}
		return n
	}
	if n := decoded(); n != 0 {
		t.Fatalf("Read decoded %d lists", n)
	}
	c := newCorpus(11)
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = c.text(3)
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(queries))
	for _, q := range queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a, b := x.Search(q, 10, SearchOptions{}), y.Search(q, 10, SearchOptions{}); !slices.Equal(a, b) {
				errs <- fmt.Sprintf("query %q: %v after load, want %v", q, b, a)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := decoded(); n == 0 || n == len(y.lists) {
		t.Errorf("%d of %d lists decoded after the searches", n, len(y.lists))
	}
	if err := y.Add(1001, Doc{ID: "new", Text: "quarry stone"}); err != nil {
		t.Fatal(err)
	}
	if n := decoded(); n != len(y.lists) {
		t.Errorf("%d of %d lists decoded after a write", n, len(y.lists))
	}
}

// TestReadVersion3: an index a build before list lengths wrote (format 3,
// testdata/v3-60docs.bm25) is read, every list checked at once, and
// searches as the index built in memory; written again it is format 4.
func TestReadVersion3(t *testing.T) {
	f, err := os.Open("testdata/v3-60docs.bm25")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	y, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if y.unchecked {
		t.Error("a version-3 index is left unchecked")
	}
	x := buildSmall(t, Config{}, 60)
	c := newCorpus(5)
	for range 100 {
		q := c.text(3)
		if a, b := x.Search(q, 10, SearchOptions{}), y.Search(q, 10, SearchOptions{}); !slices.Equal(a, b) {
			t.Fatalf("query %q: %v from version 3, want %v", q, b, a)
		}
	}
	var buf bytes.Buffer
	if _, err := y.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(buf.Bytes()[len(magic):]); v != formatVersion {
		t.Errorf("written again as version %d", v)
	}
}

// TestDamagedListIsReported: a list whose bytes are wrong under a valid
// checksum (only a writer's fault can make one) reads as empty when a
// search decodes it, and Err, the next write and the next WriteTo report
// it rather than carry it on.
func TestDamagedListIsReported(t *testing.T) {
	x := buildSmall(t, Config{}, 40)
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	t0 := y.dict[y.terms[0]]
	l := &y.lists[t0]
	bad := slices.Clone(l.raw)
	bad[0] = 0x80 // a varint that never ends
	l.raw = bad[:1]
	y.Search(y.terms[0], 5, SearchOptions{})
	if err := y.Err(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Err after decoding a damaged list: %v", err)
	}
	if err := y.Add(9999, Doc{ID: "new", Text: "quarry"}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Add on a damaged index: %v", err)
	}
	if _, err := y.WriteTo(io.Discard); !errors.Is(err, ErrCorrupt) {
		t.Errorf("WriteTo of a damaged index: %v", err)
	}
}

// TestSaturatedCountsRoundTrip: a term more frequent in one document than
// a posting's 16-bit count holds (a generated table of 100,000 zeros) is
// capped in its posting, while the document's length stays its true one;
// the checks on reading an index must allow that, or every open of such an
// index reports it corrupt and the embedded store rebuilds it from rows.
func TestSaturatedCountsRoundTrip(t *testing.T) {
	x, err := New(Config{Analyzer: AnalyzerConfig{Language: "en"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Add(0, Doc{ID: "table", Title: strings.Repeat("zero ", 70000), Text: strings.Repeat("0x00, ", 100000) + "end"}); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(1, Doc{ID: "prose", Text: "an ordinary line of text"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	// A write decodes and checks every list.
	if err := y.Add(2, Doc{ID: "more", Text: "another line"}); err != nil {
		t.Fatalf("a write to the reloaded index: %v", err)
	}
	if hits := y.Search("end", 1, SearchOptions{}); len(hits) != 1 || hits[0].ID != "table" {
		t.Errorf("search after the round trip: %v", hits)
	}
}
