package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/store"
)

// Tool names.
const (
	ToolSearch       = "knowledge_search"
	ToolAsk          = "knowledge_ask"
	ToolIngest       = "knowledge_ingest"
	ToolIngestStatus = "knowledge_ingest_status"
	ToolAddDocuments = "knowledge_add_documents"
	ToolDelete       = "knowledge_delete"
	ToolStatus       = "knowledge_status"
)

// maxAddDocuments bounds one knowledge_add_documents call so a single call
// cannot hold the embedder for long.
const maxAddDocuments = 256

// SearchInput is the input of knowledge_search.
type SearchInput struct {
	Query      string `json:"query" jsonschema:"what to look for: a question or keywords in the documents' language"`
	Mode       string `json:"mode,omitempty" jsonschema:"keyword (BM25), vector (meaning) or hybrid (both); omit for the knowledge base's default"`
	TopK       int    `json:"top_k,omitempty" jsonschema:"how many passages to return (default 10, at most 100)"`
	Filter     any    `json:"filter,omitempty" jsonschema:"optional metadata filter: text such as \"sourceName = 'guide.md' AND year >= 2024\", or JSON such as {\"sourceName\": \"guide.md\"}; only sourceType, sourceName and fields declared in the collection's schema can be filtered"`
	Collection string `json:"collection,omitempty" jsonschema:"collection to search; omit for the default (see knowledge_status)"`
}

// Passage is one retrieved chunk with where it came from.
type Passage struct {
	Rank       int            `json:"rank" jsonschema:"1-based rank"`
	ID         string         `json:"id"`
	Score      float64        `json:"score"`
	SourceType string         `json:"sourceType" jsonschema:"file, url, object, manual or conversation"`
	Source     string         `json:"source" jsonschema:"the source's name: a path relative to the ingested folder, a URL or an id"`
	Page       int            `json:"page,omitempty" jsonschema:"1-based page, for paged formats such as PDF"`
	Headings   []string       `json:"headings,omitempty" jsonschema:"the headings enclosing the passage, outermost first"`
	LineStart  int            `json:"lineStart,omitempty"`
	LineEnd    int            `json:"lineEnd,omitempty"`
	Text       string         `json:"text"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// SearchOutput is the structured result of knowledge_search.
type SearchOutput struct {
	Collection string    `json:"collection"`
	Mode       string    `json:"mode"`
	Results    []Passage `json:"results"`
}

// AskInput is the input of knowledge_ask.
type AskInput struct {
	Question   string `json:"question" jsonschema:"the question to answer from the knowledge base"`
	TopK       int    `json:"top_k,omitempty" jsonschema:"how many passages to read (default 8, at most 100)"`
	Filter     any    `json:"filter,omitempty" jsonschema:"optional metadata filter in any syntax, as for knowledge_search"`
	Collection string `json:"collection,omitempty" jsonschema:"collection to ask; omit for the default"`
}

// AskOutput is the structured result of knowledge_ask.
type AskOutput struct {
	Answer     string    `json:"answer" jsonschema:"the answer, with [n] markers naming its citations"`
	Extractive bool      `json:"extractive" jsonschema:"true when the answer quotes the passages because no chat model is configured"`
	Citations  []Passage `json:"citations" jsonschema:"the passages the answer cites; rank is the n of its [n] marker"`
}

// IngestInput is the input of knowledge_ingest.
type IngestInput struct {
	Paths      []string       `json:"paths" jsonschema:"files or folders to ingest, inside the server's allowed roots; relative paths start at the first root"`
	Collection string         `json:"collection,omitempty" jsonschema:"collection to ingest into, created when missing; omit for the default"`
	Metadata   map[string]any `json:"metadata,omitempty" jsonschema:"metadata added to every chunk: strings, numbers, booleans or lists of strings"`
	Include    []string       `json:"include,omitempty" jsonschema:"take only files matching one of these .gitignore-style patterns (e.g. *.md), relative to each folder"`
	Exclude    []string       `json:"exclude,omitempty" jsonschema:"leave out files and folders matching these .gitignore-style patterns (e.g. drafts/)"`
}

// IngestOutput is the structured result of knowledge_ingest.
type IngestOutput struct {
	JobID string `json:"job_id" jsonschema:"pass it to knowledge_ingest_status to follow the job"`
	State string `json:"state"`
}

// JobInput is the input of knowledge_ingest_status.
type JobInput struct {
	JobID string `json:"job_id" jsonschema:"the id knowledge_ingest returned"`
}

// Job is an ingestion job as recorded in the store.
type Job struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Collection string `json:"collection"`
	State      string `json:"state" jsonschema:"running, done, failed or interrupted (its process stopped; quarry ingest --resume)"`
	Files      int    `json:"files" jsonschema:"files handled so far"`
	Total      int    `json:"total" jsonschema:"files found"`
	Chunks     int    `json:"chunks" jsonschema:"chunks written so far"`
	Failed     int    `json:"failed" jsonschema:"files that could not be read"`
	Error      string `json:"error,omitempty"`
	Started    string `json:"started"`
	Updated    string `json:"updated"`
	Finished   string `json:"finished,omitempty"`
}

// AddDocumentsInput is the input of knowledge_add_documents.
type AddDocumentsInput struct {
	Documents  []NewDocument `json:"documents" jsonschema:"the texts to add (at most 256 per call)"`
	Collection string        `json:"collection,omitempty" jsonschema:"collection to add to, created when missing; omit for the default"`
}

// NewDocument is one text to add.
type NewDocument struct {
	Text     string         `json:"text" jsonschema:"the text, searchable as one passage"`
	ID       string         `json:"id,omitempty" jsonschema:"optional id; a document with the same id is replaced"`
	Source   string         `json:"source,omitempty" jsonschema:"optional source name to cite and to delete by later (default: manual)"`
	Metadata map[string]any `json:"metadata,omitempty" jsonschema:"optional metadata: strings, numbers, booleans or lists of strings"`
}

// AddDocumentsOutput is the structured result of knowledge_add_documents.
type AddDocumentsOutput struct {
	Collection string   `json:"collection"`
	IDs        []string `json:"ids" jsonschema:"the ids of the added documents, in order"`
}

// DeleteInput is the input of knowledge_delete.
type DeleteInput struct {
	Source     string `json:"source,omitempty" jsonschema:"delete every passage of this source name"`
	Filter     any    `json:"filter,omitempty" jsonschema:"delete every passage matching this metadata filter, in any syntax as for knowledge_search"`
	Collection string `json:"collection,omitempty" jsonschema:"collection to delete from; omit for the default"`
}

// DeleteOutput is the structured result of knowledge_delete.
type DeleteOutput struct {
	Deleted int `json:"deleted" jsonschema:"how many passages were removed"`
}

// StatusInput is the (empty) input of knowledge_status.
type StatusInput struct{}

// StatusOutput is the structured result of knowledge_status.
type StatusOutput struct {
	DefaultCollection string             `json:"default_collection"`
	Collections       []CollectionStatus `json:"collections"`
	Model             string             `json:"model" jsonschema:"the embedding model queries are embedded with"`
	ReadOnly          bool               `json:"read_only"`
	Roots             []string           `json:"roots,omitempty" jsonschema:"folders knowledge_ingest may read"`
	LastJob           *Job               `json:"last_job,omitempty"`
}

// CollectionStatus describes one collection.
type CollectionStatus struct {
	Name      string   `json:"name"`
	Documents int      `json:"documents" jsonschema:"stored passages"`
	Model     string   `json:"model"`
	Fields    []string `json:"fields,omitempty" jsonschema:"metadata fields that can be filtered, besides sourceType and sourceName"`
}

func readOnly(title string) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: true, OpenWorldHint: new(false)}
}

// inputSchema is T's inferred schema with the choices and bounds a model
// should see: mode as an enum, top_k within [0, maxTopK].
func inputSchema[T any]() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: input schema: %w", err)
	}
	if p := s.Properties["mode"]; p != nil {
		p.Enum = []any{string(store.ModeKeyword), string(store.ModeVector), string(store.ModeHybrid)}
	}
	if p := s.Properties["top_k"]; p != nil {
		p.Minimum, p.Maximum = new(float64(0)), new(float64(maxTopK))
	}
	return s, nil
}

func (s *Server) addTools() error {
	searchIn, err := inputSchema[SearchInput]()
	if err != nil {
		return err
	}
	askIn, err := inputSchema[AskInput]()
	if err != nil {
		return err
	}
	sdk.AddTool(s.mcp, &sdk.Tool{Name: ToolSearch, Annotations: readOnly("Search the knowledge base"), InputSchema: searchIn,
		Description: "Search the knowledge base and return the best-matching passages, each with its source, " +
			"page, headings and line range so it can be cited. Use keyword mode for exact names and codes, " +
			"vector or hybrid for questions phrased in other words. Narrow with a metadata filter."}, s.search)
	sdk.AddTool(s.mcp, &sdk.Tool{Name: ToolAsk, Annotations: readOnly("Ask the knowledge base"), InputSchema: askIn,
		Description: "Answer a question from the knowledge base. The answer cites passages with [n] markers; " +
			"citations lists each passage with its source, page, headings and lines."}, s.ask)
	sdk.AddTool(s.mcp, &sdk.Tool{Name: ToolStatus, Annotations: readOnly("Knowledge base status"),
		Description: "List the collections with their passage counts and filterable fields, the embedding " +
			"model, whether the server is read-only, and the latest ingestion job."}, s.status)
	sdk.AddTool(s.mcp, &sdk.Tool{Name: ToolIngestStatus, Annotations: readOnly("Ingestion job status"),
		Description: "Report an ingestion job's state (running, done, failed or interrupted) and progress: files handled " +
			"of the total, chunks written, files that failed."}, s.ingestStatus)
	s.addHierarchyTools()
	if s.cfg.ReadOnly {
		return nil
	}
	sdk.AddTool(s.mcp, &sdk.Tool{Name: ToolIngest,
		Annotations: &sdk.ToolAnnotations{Title: "Ingest files", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		Description: "Ingest files or folders (Markdown, text, code, HTML, PDF, JSON, CSV…) into a collection. " +
			"Runs as a background job and returns its id at once; follow it with knowledge_ingest_status. " +
			"Unchanged files are skipped, changed files replaced. Paths must lie inside the server's roots " +
			"(see knowledge_status)."}, writes(s, s.ingest))
	sdk.AddTool(s.mcp, &sdk.Tool{Name: ToolAddDocuments,
		Annotations: &sdk.ToolAnnotations{Title: "Add documents", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		Description: "Add texts to a collection, each searchable as one passage, with optional metadata and " +
			"source name. Give an id to replace a document later."}, writes(s, s.addDocuments))
	sdk.AddTool(s.mcp, &sdk.Tool{Name: ToolDelete,
		Annotations: &sdk.ToolAnnotations{Title: "Delete passages", DestructiveHint: new(true), OpenWorldHint: new(false)},
		Description: "Delete passages from a collection: every passage of a source, or every passage matching " +
			"a metadata filter. Give source or filter (both: passages matching both)."}, writes(s, s.delete))
	return nil
}

// collection opens a collection by name (the default when empty) and
// checks it was built with the server's embedder. With create, a missing
// collection is created.
func (s *Server) collection(ctx context.Context, sc Scope, name string, create bool) (*store.Collection, error) {
	if name == "" {
		name = s.cfg.Collection
	}
	if !sc.allows(name) {
		return nil, fmt.Errorf("collection %q is not open to this client (allowed: %s)", name, strings.Join(sc.Collections, ", "))
	}
	c, err := s.cfg.Store.Collection(ctx, name)
	if create && errors.Is(err, store.ErrCollectionNotFound) {
		// Ensure, not create: another session may create it meanwhile.
		c, err = s.cfg.Store.EnsureCollection(ctx, store.CollectionConfig{Name: name, Model: s.cfg.Embedder.Model()})
	}
	if errors.Is(err, store.ErrCollectionNotFound) {
		return nil, fmt.Errorf("collection %q does not exist: call knowledge_status for the collections", name)
	}
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", name, err)
	}
	if m := c.Config().Model; m != s.cfg.Embedder.Model() {
		return nil, fmt.Errorf("collection %q was built with %s/%s, but this server embeds with %s/%s",
			name, m.Provider, m.Model, s.cfg.Embedder.Model().Provider, s.cfg.Embedder.Model().Model)
	}
	return c, nil
}

// parseFilter reads a filter given as text or as JSON and checks it against
// the collection's schema and the scope's raw-filter policy
// (filter.CheckRequest); nil stays nil.
func parseFilter(v any, sc Scope, c *store.Collection) (filter.Expr, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	e, err := filter.ParseValue(b)
	if err != nil {
		return nil, fmt.Errorf("invalid filter: %w", err)
	}
	if e == nil {
		return nil, nil
	}
	if err := filter.CheckRequest(e, c.Config().Schema, filter.RequestPolicy{AllowRaw: sc.AllowRawFilters}); err != nil {
		return nil, fmt.Errorf("invalid filter for collection %q: %w", c.Name(), err)
	}
	return e, nil
}

// scopedFilter is the call's filter narrowed by the scope's mandatory
// filter, which it can never widen (filter.Merge keeps it a conjunct).
func scopedFilter(v any, sc Scope, c *store.Collection) (filter.Expr, error) {
	f, err := parseFilter(v, sc, c)
	if err != nil {
		return nil, err
	}
	return withScope(f, sc, c)
}

func withScope(f filter.Expr, sc Scope, c *store.Collection) (filter.Expr, error) {
	if sc.Filter == nil {
		return f, nil
	}
	if err := filter.Validate(sc.Filter, c.Config().Schema); err != nil {
		return nil, fmt.Errorf("this client's scope cannot apply to collection %q: %w", c.Name(), err)
	}
	return filter.Merge(sc.Filter, f), nil
}

// maxTopK bounds a tool's top_k: a model rarely reads more, and the result
// goes into its context.
const maxTopK = 100

func (s *Server) search(ctx context.Context, req *sdk.CallToolRequest, in SearchInput) (*sdk.CallToolResult, SearchOutput, error) {
	var out SearchOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	if strings.TrimSpace(in.Query) == "" {
		return nil, out, errors.New("query is empty: say what to look for")
	}
	mode := store.Mode(in.Mode)
	switch mode {
	case store.ModeAuto:
		mode = s.cfg.Mode
	case store.ModeKeyword, store.ModeVector, store.ModeHybrid:
	default:
		return nil, out, fmt.Errorf("mode %q is not one of keyword, vector, hybrid", in.Mode)
	}
	if mode == store.ModeAuto {
		mode = store.ModeHybrid
	}
	topK, err := s.topK(in.TopK)
	if err != nil {
		return nil, out, err
	}
	c, err := s.collection(ctx, sc, in.Collection, false)
	if err != nil {
		return nil, out, err
	}
	f, err := scopedFilter(in.Filter, sc, c)
	if err != nil {
		return nil, out, err
	}
	sreq := store.SearchRequest{Query: in.Query, Mode: mode, Filter: f, TopK: topK}
	if mode != store.ModeKeyword {
		vecs, err := embed.EmbedQuery(ctx, s.cfg.Embedder, []string{in.Query})
		if err != nil {
			return nil, out, fmt.Errorf("embed the query: %w", err)
		}
		sreq.Embedding = vecs[0]
		if mode == store.ModeVector {
			sreq.Query = ""
		}
	}
	hits, err := c.Search(ctx, sreq)
	if err != nil {
		return nil, out, fmt.Errorf("search %q: %w", c.Name(), err)
	}
	out = SearchOutput{Collection: c.Name(), Mode: string(mode), Results: make([]Passage, len(hits))}
	for i, h := range hits {
		out.Results[i] = passage(i+1, h.Doc)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: passagesText(out.Results)}}}, out, nil
}

func (s *Server) topK(k int) (int, error) {
	switch {
	case k < 0:
		return 0, fmt.Errorf("top_k must be positive, got %d", k)
	case k > maxTopK:
		return 0, fmt.Errorf("top_k is at most %d, got %d", maxTopK, k)
	case k == 0:
		return s.cfg.TopK, nil // 0 lets the store use its default
	}
	return k, nil
}

func passage(rank int, d *document.Document) Passage {
	p := d.Provenance
	return Passage{Rank: rank, ID: d.ID, Score: d.Score, SourceType: d.SourceType, Source: d.SourceName,
		Page: p.Page, Headings: p.HeadingPath, LineStart: p.LineStart, LineEnd: p.LineEnd, Text: d.Content,
		Metadata: d.Metadata}
}

// location is a passage's source with its page, headings and lines, as a
// person would cite it.
func (p Passage) location() string {
	loc := p.Source
	if p.Page > 0 {
		loc += fmt.Sprintf(", page %d", p.Page)
	}
	if len(p.Headings) > 0 {
		loc += ", " + strings.Join(p.Headings, " › ")
	}
	if p.LineStart > 0 {
		loc += fmt.Sprintf(", lines %d-%d", p.LineStart, p.LineEnd)
	}
	return loc
}

func passagesText(ps []Passage) string {
	if len(ps) == 0 {
		return "No passage matches."
	}
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "[%d] %s (score %.4f)\n%s\n\n", p.Rank, p.location(), p.Score, p.Text)
	}
	return strings.TrimRight(b.String(), "\n")
}

func (s *Server) ask(ctx context.Context, req *sdk.CallToolRequest, in AskInput) (*sdk.CallToolResult, AskOutput, error) {
	var out AskOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	if strings.TrimSpace(in.Question) == "" {
		return nil, out, errors.New("question is empty")
	}
	topK, err := s.topK(in.TopK)
	if err != nil {
		return nil, out, err
	}
	c, err := s.collection(ctx, sc, in.Collection, false)
	if err != nil {
		return nil, out, err
	}
	f, err := scopedFilter(in.Filter, sc, c)
	if err != nil {
		return nil, out, err
	}
	p := rag.Pipeline{
		Retriever:  &rag.CollectionRetriever{Collection: c, Embedder: s.cfg.Embedder, Mode: s.cfg.AskMode},
		Model:      s.cfg.Model,
		Extractive: rag.Extractive{Embedder: s.cfg.Embedder},
		Logger:     s.log,
	}
	ans, err := p.Ask(ctx, rag.Request{Question: in.Question, Filter: f, TopK: topK})
	if err != nil {
		return nil, out, fmt.Errorf("ask %q: %w", c.Name(), err)
	}
	out = AskOutput{Answer: ans.Text, Extractive: ans.Extractive, Citations: make([]Passage, len(ans.Citations))}
	var b strings.Builder
	b.WriteString(ans.Text)
	if len(ans.Citations) > 0 {
		b.WriteString("\n\nSources:")
	}
	for i, ct := range ans.Citations {
		p := Passage{Rank: ct.N, ID: ct.ID, SourceType: ct.SourceType, Source: ct.Source, Page: ct.Page,
			Headings: ct.Headings, LineStart: ct.LineStart, LineEnd: ct.LineEnd, Text: ct.Text}
		if ct.Document != nil {
			p.Score, p.Metadata = ct.Document.Score, ct.Document.Metadata
		}
		out.Citations[i] = p
		fmt.Fprintf(&b, "\n[%d] %s", p.Rank, p.location())
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}}, out, nil
}

func (s *Server) status(ctx context.Context, req *sdk.CallToolRequest, _ StatusInput) (*sdk.CallToolResult, StatusOutput, error) {
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, StatusOutput{}, err
	}
	m := s.cfg.Embedder.Model()
	out := StatusOutput{DefaultCollection: s.cfg.Collection, Model: m.Provider + "/" + m.Model, ReadOnly: s.cfg.ReadOnly,
		Collections: []CollectionStatus{}}
	if !s.cfg.ReadOnly {
		out.Roots = s.roots.Dirs()
	}
	cfgs, err := s.cfg.Store.Collections(ctx)
	if err != nil {
		return nil, out, fmt.Errorf("list collections: %w", err)
	}
	for _, cc := range cfgs {
		if !sc.allows(cc.Name) {
			continue
		}
		c, err := s.cfg.Store.Collection(ctx, cc.Name)
		if err != nil {
			return nil, out, fmt.Errorf("collection %q: %w", cc.Name, err)
		}
		var f filter.Expr
		if sc.Filter != nil {
			if filter.Validate(sc.Filter, cc.Schema) != nil {
				continue // the scope cannot apply: nothing there is reachable
			}
			f = sc.Filter
		}
		n, err := c.Count(ctx, f)
		if err != nil {
			return nil, out, fmt.Errorf("count %q: %w", cc.Name, err)
		}
		cs := CollectionStatus{Name: cc.Name, Documents: n, Model: cc.Model.Provider + "/" + cc.Model.Model}
		if cc.Schema != nil {
			for _, f := range cc.Schema.Fields {
				cs.Fields = append(cs.Fields, f.Name)
			}
		}
		out.Collections = append(out.Collections, cs)
	}
	if js, err := s.cfg.Store.Jobs(); err == nil && sc.Filter == nil {
		jobs, err := js.ListJobs(ctx, 1)
		if err != nil {
			return nil, out, fmt.Errorf("list jobs: %w", err)
		}
		if len(jobs) == 1 {
			j := jobOut(jobs[0])
			out.LastJob = &j
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Embedding model %s; default collection %q", out.Model, out.DefaultCollection)
	if out.ReadOnly {
		b.WriteString("; read-only")
	}
	b.WriteString(".\n")
	if len(out.Collections) == 0 {
		b.WriteString("No collections yet.\n")
	}
	for _, c := range out.Collections {
		fmt.Fprintf(&b, "- %s: %d passages (%s)", c.Name, c.Documents, c.Model)
		if len(c.Fields) > 0 {
			fmt.Fprintf(&b, ", filterable: %s", strings.Join(c.Fields, ", "))
		}
		b.WriteString("\n")
	}
	if j := out.LastJob; j != nil {
		fmt.Fprintf(&b, "Last job %s: %s, %d/%d files, %d chunks.\n", j.ID, j.State, j.Files, j.Total, j.Chunks)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.TrimSpace(b.String())}}}, out, nil
}

func jobOut(j store.Job) Job {
	out := Job{ID: j.ID, Kind: j.Kind, Collection: j.Collection, State: j.State, Files: j.Files, Total: j.Total,
		Chunks: j.Chunks, Failed: j.Failed, Error: j.Error, Started: stamp(j.Started), Updated: stamp(j.Updated),
		Finished: stamp(j.Finished)}
	return out
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Server) ingestStatus(ctx context.Context, req *sdk.CallToolRequest, in JobInput) (*sdk.CallToolResult, Job, error) {
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, Job{}, err
	}
	if sc.Filter != nil {
		return nil, Job{}, errors.New("ingestion jobs are not open to a client with a scope filter")
	}
	js, err := s.cfg.Store.Jobs()
	if err != nil {
		return nil, Job{}, err
	}
	j, err := js.GetJob(ctx, in.JobID)
	if errors.Is(err, store.ErrJobNotFound) {
		return nil, Job{}, fmt.Errorf("no job has id %q", in.JobID)
	}
	if err != nil {
		return nil, Job{}, fmt.Errorf("job %s: %w", in.JobID, err)
	}
	if !sc.allows(j.Collection) {
		return nil, Job{}, fmt.Errorf("no job has id %q", in.JobID)
	}
	out := jobOut(j)
	text := fmt.Sprintf("Job %s is %s: %d of %d files, %d chunks written, %d failed.", out.ID, out.State, out.Files, out.Total, out.Chunks, out.Failed)
	if out.Error != "" {
		text += " Error: " + out.Error
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, out, nil
}

// firstJob passes PutJob through and hands over the id of the first job
// recorded, which is how an ingestion started in a goroutine reports its id.
type firstJob struct {
	store.JobStore
	once sync.Once
	id   chan string // buffered, 1
}

func (f *firstJob) PutJob(ctx context.Context, j store.Job) error {
	err := f.JobStore.PutJob(ctx, j)
	f.once.Do(func() { f.id <- j.ID })
	return err
}

func (s *Server) ingest(ctx context.Context, req *sdk.CallToolRequest, in IngestInput) (*sdk.CallToolResult, IngestOutput, error) {
	var out IngestOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	if sc.Filter != nil || sc.NoServerPaths {
		return nil, out, fmt.Errorf("ingestion of server folders is not open to this client (a scope filter, or a key below admin): add texts with %s, with metadata that matches the scope", ToolAddDocuments)
	}
	if len(in.Paths) == 0 {
		return nil, out, errors.New("paths is empty: give at least one file or folder")
	}
	paths := make([]string, len(in.Paths))
	for i, p := range in.Paths {
		real, err := s.confine(p)
		if err != nil {
			return nil, out, fmt.Errorf("refused: %w", err)
		}
		paths[i] = real
	}
	js, err := s.cfg.Store.Jobs()
	if err != nil {
		return nil, out, err
	}
	c, err := s.collection(ctx, sc, in.Collection, true)
	if err != nil {
		return nil, out, err
	}
	opt := s.cfg.IngestOptions(c)
	opt.Collection = c
	rec := &firstJob{JobStore: js, id: make(chan string, 1)}
	opt.Jobs = rec
	if len(in.Metadata) > 0 {
		opt.Metadata = in.Metadata
	}
	opt.Select = opt.Select.Plus(load.Selection{Include: in.Include, Exclude: in.Exclude})
	if err := opt.Select.Check(); err != nil {
		return nil, out, err
	}
	if opt.JobParams, err = json.Marshal(ingest.Params{Roots: paths, Collection: c.Name(), Meta: opt.Metadata, Include: in.Include, Exclude: in.Exclude}); err != nil {
		return nil, out, fmt.Errorf("record the job: %w", err)
	}
	done := make(chan error, 1)
	err = s.goJob(func(jctx context.Context) {
		rep, err := ingest.Run(jctx, paths, opt)
		if err != nil {
			s.log.Warn("mcp: ingestion failed", "collection", c.Name(), "paths", paths, "err", err)
		} else {
			s.log.Info("mcp: ingestion done", "collection", c.Name(), "files", rep.Files, "chunks", rep.Chunks)
		}
		done <- err
	})
	if err != nil {
		return nil, out, err
	}
	select {
	case id := <-rec.id:
		out = IngestOutput{JobID: id, State: store.JobRunning}
	case err := <-done:
		select {
		case id := <-rec.id:
			out = IngestOutput{JobID: id, State: store.JobDone}
			if err != nil {
				out.State = store.JobFailed
			}
		default:
			if err == nil {
				err = errors.New("the ingestion recorded no job")
			}
			return nil, out, fmt.Errorf("ingest: %w", err)
		}
	case <-ctx.Done():
		return nil, out, ctx.Err()
	}
	text := fmt.Sprintf("Ingestion job %s started into collection %q; follow it with %s.", out.JobID, c.Name(), ToolIngestStatus)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, out, nil
}

func (s *Server) addDocuments(ctx context.Context, req *sdk.CallToolRequest, in AddDocumentsInput) (*sdk.CallToolResult, AddDocumentsOutput, error) {
	var out AddDocumentsOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	if len(in.Documents) == 0 {
		return nil, out, errors.New("documents is empty")
	}
	if len(in.Documents) > maxAddDocuments {
		return nil, out, fmt.Errorf("at most %d documents per call, got %d", maxAddDocuments, len(in.Documents))
	}
	c, err := s.collection(ctx, sc, in.Collection, true)
	if err != nil {
		return nil, out, err
	}
	docs := make([]*document.Document, len(in.Documents))
	for i, nd := range in.Documents {
		if strings.TrimSpace(nd.Text) == "" {
			return nil, out, fmt.Errorf("documents[%d]: text is empty", i)
		}
		d := document.New(nd.Text)
		if nd.ID != "" {
			d.ID = nd.ID
		}
		if nd.Source != "" {
			d.SourceName = nd.Source
		}
		if err := d.AddMetadata(nd.Metadata); err != nil {
			return nil, out, fmt.Errorf("documents[%d]: %w", i, err)
		}
		docs[i] = d
	}
	if err := ingest.Add(ctx, c, s.cfg.Embedder, docs, sc.Filter); err != nil {
		return nil, out, err
	}
	out = AddDocumentsOutput{Collection: c.Name(), IDs: make([]string, len(docs))}
	for i, d := range docs {
		out.IDs[i] = d.ID
	}
	text := fmt.Sprintf("Added %s to collection %q.", count(len(docs), "document"), c.Name())
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, out, nil
}

func (s *Server) delete(ctx context.Context, req *sdk.CallToolRequest, in DeleteInput) (*sdk.CallToolResult, DeleteOutput, error) {
	var out DeleteOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	c, err := s.collection(ctx, sc, in.Collection, false)
	if err != nil {
		return nil, out, err
	}
	f, err := parseFilter(in.Filter, sc, c)
	if err != nil {
		return nil, out, err
	}
	if in.Source != "" {
		f = filter.Merge(f, filter.Eq("sourceName", in.Source))
	}
	// Checked before the scope is added: a scope alone must not delete
	// everything it reaches.
	if f == nil {
		return nil, out, errors.New("give a source or a filter: deleting everything is not offered")
	}
	if f, err = withScope(f, sc, c); err != nil {
		return nil, out, err
	}
	n, err := c.Delete(ctx, f)
	if err != nil {
		return nil, out, fmt.Errorf("delete from %q: %w", c.Name(), err)
	}
	out.Deleted = n
	text := fmt.Sprintf("Deleted %s from collection %q.", count(n, "passage"), c.Name())
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, out, nil
}

// count writes n with its noun, singular or plural.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
