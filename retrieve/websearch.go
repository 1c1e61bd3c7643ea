package retrieve

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/internal/httpx"
)

// Web search providers besides SearXNG. Each result is a passage with
// sourceType "web", the page's URL as id and source name, its title and
// snippet as content; with a PageReader, the pages themselves are fetched
// and read (Pages). Results carry no metadata, so a scope naming a
// metadata field matches none of them, as for SearXNG.

// Default endpoints.
const (
	BraveURL  = "https://api.search.brave.com/res/v1/web/search"
	TavilyURL = "https://api.tavily.com/search"
)

// Brave searches the web with the Brave Search API (GET
// /res/v1/web/search, the key in X-Subscription-Token).
type Brave struct {
	// APIKey is the subscription token; BRAVE_SEARCH_API_KEY or
	// BRAVE_API_KEY when empty.
	APIKey string
	// URL is the endpoint, BraveURL when empty.
	URL string
	// Country and Language narrow the results when set ("de", "fr").
	Country, Language string
	Pages             Pages
	HTTPClient        *http.Client
	MaxRetries        int
}

// Retrieve implements Retriever.
func (b *Brave) Retrieve(ctx context.Context, req Request) ([]*document.Document, error) {
	key, err := httpx.Key(b.APIKey, "brave web search", "BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY")
	if err != nil {
		return nil, err
	}
	m, err := filter.NewMatcher(filter.Merge(req.Scope, req.Filter))
	if err != nil {
		return nil, fmt.Errorf("brave: %w", err)
	}
	q := url.Values{"q": {cutQuery(req.Query, 400)}, "count": {strconv.Itoa(webCount(req.TopK, 20))}}
	if b.Country != "" {
		q.Set("country", b.Country)
	}
	if b.Language != "" {
		q.Set("search_lang", b.Language)
	}
	var resp struct {
		Web struct {
			Results []struct {
				Title         string   `json:"title"`
				URL           string   `json:"url"`
				Description   string   `json:"description"`
				ExtraSnippets []string `json:"extra_snippets"`
			} `json:"results"`
		} `json:"web"`
	}
	u := b.URL
	if u == "" {
		u = BraveURL
	}
	hc := webClient(b.HTTPClient, b.MaxRetries)
	if err := hc.GetJSON(ctx, u+"?"+q.Encode(), map[string]string{"X-Subscription-Token": key, "Accept": "application/json"}, &resp); err != nil {
		return nil, fmt.Errorf("brave: %w", err)
	}
	var hits []webHit
	for i, r := range resp.Web.Results {
		snippet := strings.Join(append([]string{stripTags(r.Description)}, r.ExtraSnippets...), "\n")
		hits = append(hits, webHit{url: r.URL, title: stripTags(r.Title), text: snippet, score: 1 / float64(i+1)})
	}
	return b.Pages.passages(ctx, hits, m, req.TopK)
}

// Tavily searches the web with Tavily's search API (POST /search, the key
// as a bearer token).
type Tavily struct {
	// APIKey is the key ("tvly-…"); TAVILY_API_KEY when empty.
	APIKey string
	// URL is the endpoint, TavilyURL when empty.
	URL string
	// Depth is "basic" (the default) or "advanced".
	Depth string
	// RawContent asks Tavily for each page's text, which then stands for
	// the snippet (without fetching the page here).
	RawContent bool
	Pages      Pages
	HTTPClient *http.Client
	MaxRetries int
}

// Retrieve implements Retriever.
func (t *Tavily) Retrieve(ctx context.Context, req Request) ([]*document.Document, error) {
	key, err := httpx.Key(t.APIKey, "tavily web search", "TAVILY_API_KEY")
	if err != nil {
		return nil, err
	}
	m, err := filter.NewMatcher(filter.Merge(req.Scope, req.Filter))
	if err != nil {
		return nil, fmt.Errorf("tavily: %w", err)
	}
	depth := t.Depth
	if depth == "" {
		depth = "basic"
	}
	body := map[string]any{"query": cutQuery(req.Query, 400), "max_results": webCount(req.TopK, 20), "search_depth": depth,
		"include_answer": false, "include_raw_content": t.RawContent, "include_images": false}
	var resp struct {
		Results []struct {
			Title      string  `json:"title"`
			URL        string  `json:"url"`
			Content    string  `json:"content"`
			Score      float64 `json:"score"`
			RawContent *string `json:"raw_content"`
		} `json:"results"`
	}
	u := t.URL
	if u == "" {
		u = TavilyURL
	}
	if err := webClient(t.HTTPClient, t.MaxRetries).PostJSON(ctx, u, map[string]string{"Authorization": "Bearer " + key}, body, &resp); err != nil {
		return nil, fmt.Errorf("tavily: %w", err)
	}
	var hits []webHit
	for _, r := range resp.Results {
		text := r.Content
		if r.RawContent != nil && strings.TrimSpace(*r.RawContent) != "" {
			text = cutRunes(*r.RawContent, t.Pages.maxChars())
		}
		hits = append(hits, webHit{url: r.URL, title: r.Title, text: text, score: r.Score})
	}
	return t.Pages.passages(ctx, hits, m, req.TopK)
}

// PageReader turns a fetched page into text documents: *load.Loader does,
// with the budgets of untrusted input.
type PageReader interface {
	ReadBytes(ctx context.Context, name string, data []byte) ([]*document.Document, error)
}

// Pages fetches the result pages of a web search and reads them, so the
// passage holds the page's text rather than the engine's snippet. The zero
// value fetches nothing.
type Pages struct {
	// Reader reads a fetched page; nil fetches none.
	Reader PageReader
	// Fetch is how many of the top results are fetched, 3 when 0.
	Fetch int
	// MaxBytes bounds a page's body, 2 MiB when 0; MaxChars the text kept
	// of it, 4000 when 0.
	MaxBytes int64
	MaxChars int
	// Client fetches the pages; when nil, a client that refuses
	// loopback, private and link-local addresses, so a result cannot point
	// the server at itself or its network.
	Client *http.Client
}

func (p Pages) maxChars() int {
	if p.MaxChars > 0 {
		return p.MaxChars
	}
	return 4000
}

// webHit is one result before it becomes a passage.
type webHit struct {
	url, title, text string
	score            float64
}

// passages turns hits into passages under the matcher, the first Fetch
// of them read from their pages when a reader is set; a page that cannot
// be fetched keeps its snippet.
func (p Pages) passages(ctx context.Context, hits []webHit, m *filter.Matcher, topK int) ([]*document.Document, error) {
	var out []*document.Document
	for _, h := range hits {
		if u, err := url.Parse(h.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || (h.title == "" && h.text == "") {
			continue
		}
		d := &document.Document{ID: h.url, SourceType: SourceWeb, SourceName: h.url,
			Content: strings.TrimSpace(h.title + "\n" + h.text), Metadata: map[string]any{}, Provenance: document.Provenance{Source: h.url}}
		d.SetScore(h.score)
		if !m.MatchDocument(d) {
			continue
		}
		out = append(out, d)
		if topK > 0 && len(out) == topK {
			break
		}
	}
	if p.Reader == nil {
		return out, nil
	}
	n := p.Fetch
	if n <= 0 {
		n = 3
	}
	var wg sync.WaitGroup
	for _, d := range out[:min(n, len(out))] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if text, err := p.read(ctx, d.ID); err == nil && text != "" {
				title, _, _ := strings.Cut(d.Content, "\n")
				d.Content = strings.TrimSpace(title + "\n" + text)
			}
		}()
	}
	wg.Wait()
	return out, ctx.Err()
}

// read fetches one page and reads its text.
func (p Pages) read(ctx context.Context, u string) (string, error) {
	hc := p.Client
	if hc == nil {
		hc = PublicClient(30 * time.Second)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "text/html, text/plain;q=0.9")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	limit := p.MaxBytes
	if limit <= 0 {
		limit = 2 << 20
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(body)) > limit {
		return "", fmt.Errorf("%s: over %d bytes", u, limit)
	}
	name := "page.html"
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/plain") {
		name = "page.txt"
	}
	docs, err := p.Reader.ReadBytes(ctx, name, body)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, d := range docs {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(d.Content)
	}
	return cutRunes(b.String(), p.maxChars()), nil
}

// PublicClient is an HTTP client that connects only to public addresses:
// loopback, private, link-local, shared (CGNAT), multicast and unspecified
// addresses are refused at dial time, after name resolution, so a
// redirect or a name that resolves inward is refused too.
func PublicClient(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return err
		}
		if !publicAddr(ip.Unmap()) {
			return fmt.Errorf("%w: %s", ErrNotPublic, ip)
		}
		return nil
	}}
	t := &http.Transport{DialContext: d.DialContext, Proxy: nil, TLSHandshakeTimeout: 10 * time.Second,
		ResponseHeaderTimeout: timeout, MaxIdleConns: 10, IdleConnTimeout: 30 * time.Second}
	return &http.Client{Timeout: timeout, Transport: t, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		return nil
	}}
}

// ErrNotPublic is a fetch refused because the address is not public.
var ErrNotPublic = errors.New("not a public address")

var sharedAddrs = netip.MustParsePrefix("100.64.0.0/10")

func publicAddr(ip netip.Addr) bool {
	return ip.IsValid() && !ip.IsLoopback() && !ip.IsPrivate() && !ip.IsLinkLocalUnicast() && !ip.IsLinkLocalMulticast() &&
		!ip.IsInterfaceLocalMulticast() && !ip.IsMulticast() && !ip.IsUnspecified() && !sharedAddrs.Contains(ip)
}

func webClient(hc *http.Client, retries int) httpx.Client {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	if retries == 0 {
		retries = 1
	}
	return httpx.New(httpx.Options{Client: hc, MaxRetries: retries})
}

// webCount is the results to ask for: topK within [1, most], 10 when 0.
func webCount(topK, most int) int {
	if topK <= 0 {
		return min(10, most)
	}
	return min(topK, most)
}

var tags = regexp.MustCompile(`<[^>]*>`)

// stripTags drops the markup engines put in snippets (<strong>) and
// decodes entities.
func stripTags(s string) string { return html.UnescapeString(tags.ReplaceAllString(s, "")) }

func cutQuery(q string, n int) string { return cutRunes(strings.TrimSpace(q), n) }

func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// NewWeb opens a web search from its spec: a URL (a SearXNG instance, as
// --web always took), "searxng@URL", "brave", "tavily", or either with
// "@URL" for another endpoint. Keys come from the providers' environment
// variables (BRAVE_SEARCH_API_KEY, TAVILY_API_KEY), read at each search.
// "brave+pages" and "tavily+pages" fetch the top results' pages and read
// them with pages.
func NewWeb(spec string, pages PageReader) (Retriever, error) {
	name, addr, _ := strings.Cut(strings.TrimSpace(spec), "@")
	if strings.Contains(name, "://") { // a bare URL
		name, addr = "searxng", strings.TrimSpace(spec)
	}
	name, fetch := strings.CutSuffix(name, "+pages")
	p := Pages{}
	if fetch {
		p.Reader = pages
	}
	switch strings.ToLower(name) {
	case "searxng":
		if addr == "" {
			return nil, errors.New("web search searxng: give the instance as searxng@URL")
		}
		return &SearXNG{BaseURL: addr}, nil
	case "brave":
		return &Brave{URL: addr, Pages: p}, nil
	case "tavily":
		return &Tavily{URL: addr, Pages: p}, nil
	}
	return nil, fmt.Errorf("web search %q: use a SearXNG URL, searxng@URL, brave or tavily", spec)
}
