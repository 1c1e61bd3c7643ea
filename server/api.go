package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/store"
)

// CollectionPath names a collection in the path.
type CollectionPath struct {
	Collection string `path:"collection" maxLength:"48" doc:"Collection name"`
}

// CollectionInfo describes a collection.
type CollectionInfo struct {
	Name      string           `json:"name"`
	Documents int              `json:"documents" doc:"Stored passages (chunks) this key can reach"`
	Model     embed.ModelInfo  `json:"model" doc:"The embedding model the collection was built with"`
	Fields    *document.Schema `json:"schema,omitempty" doc:"Declared metadata fields"`
	Language  string           `json:"language,omitempty"`
}

// CollectionList is the body of the collection list.
type CollectionList struct {
	Collections []CollectionInfo `json:"collections"`
}

// NewCollection is the body of a collection creation.
type NewCollection struct {
	Name     string           `json:"name" maxLength:"48" doc:"1-48 lowercase letters, digits, '_' or '-'"`
	Fields   *document.Schema `json:"schema,omitempty" doc:"Metadata fields, e.g. {\"fields\":[{\"name\":\"tenant\",\"type\":\"string\",\"required\":true,\"filterable\":true}]}"`
	Embedder string           `json:"embedder,omitempty" doc:"The embedder as provider/model (e.g. hash/hash-512); it must be the server's, which is the default"`
	Language string           `json:"language,omitempty" doc:"Keyword analyzer language (english when empty)"`
}

// NewDocument is one text to store whole, as one passage.
type NewDocument struct {
	ID       string   `json:"id,omitempty" doc:"Optional id; a document with the same id is replaced"`
	Text     string   `json:"text" minLength:"1"`
	Source   string   `json:"source,omitempty" doc:"Source name to cite and to delete by (default: manual)"`
	Metadata Metadata `json:"metadata,omitempty"`
}

// Metadata is a JSON object of metadata. Numbers keep their integer-ness:
// 2026 is an integer, 2026.0 a float (SEMANTICS §2).
type Metadata map[string]any

// UnmarshalJSON implements json.Unmarshaler.
func (m *Metadata) UnmarshalJSON(b []byte) error {
	v, err := document.DecodeJSONValue(b)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	switch v := v.(type) {
	case nil:
		*m = nil
	case map[string]any:
		*m = v
	default:
		return fmt.Errorf("metadata must be a JSON object, got %s", document.TypeName(v))
	}
	return nil
}

// Schema describes Metadata in the OpenAPI document.
func (Metadata) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, AdditionalProperties: true, Description: "Metadata: strings, numbers, booleans, lists"}
}

// DocumentsBody is the body of a document upsert.
type DocumentsBody struct {
	Documents []NewDocument `json:"documents" minItems:"1" maxItems:"256"`
}

// DocumentsResult is the result of a document upsert.
type DocumentsResult struct {
	Collection string   `json:"collection"`
	IDs        []string `json:"ids"`
}

// DeleteBody selects documents to delete.
type DeleteBody struct {
	Source string          `json:"source,omitempty" doc:"Delete every passage of this source name"`
	Filter json.RawMessage `json:"filter,omitempty" doc:"Delete every passage matching this filter, in any syntax (text string, short or canonical JSON)"`
}

// DeleteResult counts deleted passages.
type DeleteResult struct {
	Deleted int `json:"deleted"`
}

// SearchBody is a search.
type SearchBody struct {
	Query   string          `json:"query" minLength:"1" doc:"Question or keywords"`
	Mode    string          `json:"mode,omitempty" enum:"keyword,vector,hybrid," doc:"keyword (BM25), vector, or hybrid; the server's default when empty"`
	Filter  json.RawMessage `json:"filter,omitempty" doc:"Metadata filter in any syntax: a text string such as \"year >= 2024\", or JSON such as {\"tenant\":\"acme\"}"`
	TopK    int             `json:"top_k,omitempty" minimum:"0" maximum:"100" doc:"Results to return (server default when 0)"`
	Explain bool            `json:"explain,omitempty" doc:"Report each result's rank and score per branch"`
}

// Passage is one retrieved passage with where it came from.
type Passage struct {
	Rank       int                `json:"rank"`
	ID         string             `json:"id"`
	Score      float64            `json:"score"`
	SourceType string             `json:"sourceType"`
	Source     string             `json:"source"`
	Page       int                `json:"page,omitempty"`
	Headings   []string           `json:"headings,omitempty"`
	LineStart  int                `json:"lineStart,omitempty"`
	LineEnd    int                `json:"lineEnd,omitempty"`
	Text       string             `json:"text"`
	Metadata   map[string]any     `json:"metadata,omitempty"`
	Explain    *store.Explanation `json:"explain,omitempty"`
}

// SearchResult is the result of a search.
type SearchResult struct {
	Collection string    `json:"collection"`
	Mode       string    `json:"mode"`
	Results    []Passage `json:"results"`
}

// AskBody is a question.
type AskBody struct {
	Question string          `json:"question" minLength:"1"`
	Filter   json.RawMessage `json:"filter,omitempty" doc:"Metadata filter in any syntax, as for search"`
	TopK     int             `json:"top_k,omitempty" minimum:"0" maximum:"100" doc:"Passages to read (default 8)"`
	Thread   string          `json:"thread,omitempty" maxLength:"100" doc:"Conversation thread: earlier turns are read and this one recorded"`
}

// AskResult is a cited answer.
type AskResult struct {
	Answer     string    `json:"answer" doc:"The answer, with [n] markers naming its citations"`
	Extractive bool      `json:"extractive" doc:"True when the answer quotes passages because no chat model is configured"`
	Citations  []Passage `json:"citations" doc:"The passages cited; rank is the n of the [n] marker"`
	Thread     string    `json:"thread,omitempty"`
}

// TextEvent is a piece of a streamed answer.
type TextEvent struct {
	Text string `json:"text"`
}

// Job is an ingestion job.
type Job struct {
	ID         string `json:"id"`
	Collection string `json:"collection"`
	State      string `json:"state" enum:"running,done,failed,interrupted"`
	Files      int    `json:"files" doc:"Files handled so far"`
	Total      int    `json:"total" doc:"Files found"`
	Chunks     int    `json:"chunks" doc:"Chunks written so far"`
	Failed     int    `json:"failed" doc:"Files that could not be read"`
	Error      string `json:"error,omitempty"`
	Started    string `json:"started"`
	Updated    string `json:"updated"`
	Finished   string `json:"finished,omitempty"`
}

// JobStarted is the answer to an upload or ingestion.
type JobStarted struct {
	JobID   string   `json:"job_id"`
	State   string   `json:"state"`
	Sources []string `json:"sources,omitempty" doc:"Source names the uploaded files get"`
}

// JobList lists jobs.
type JobList struct {
	Jobs []Job `json:"jobs"`
}

// IngestBody names folders or files on the server to ingest.
type IngestBody struct {
	Paths    []string `json:"paths" minItems:"1" doc:"Files or folders inside the server's ingest roots; relative paths start at the first root"`
	Metadata Metadata `json:"metadata,omitempty" doc:"Metadata added to every chunk"`
	Include  []string `json:"include,omitempty" doc:"Take only files matching one of these .gitignore-style patterns (e.g. *.md), relative to each folder"`
	Exclude  []string `json:"exclude,omitempty" doc:"Leave out files and folders matching these .gitignore-style patterns (e.g. drafts/)"`
}

// Thread is a conversation.
type Thread struct {
	ID    string       `json:"id"`
	Turns []store.Turn `json:"turns"`
}

// Status is the server's state as a key sees it.
type Status struct {
	Version           string           `json:"version"`
	DefaultCollection string           `json:"default_collection"`
	Model             embed.ModelInfo  `json:"model"`
	Chat              bool             `json:"chat" doc:"Whether a chat model writes answers (else they are extractive)"`
	Keys              bool             `json:"keys" doc:"Whether requests need an API key"`
	Permission        string           `json:"permission" doc:"What this caller may do"`
	Scoped            bool             `json:"scoped" doc:"Whether a mandatory filter holds this caller's requests"`
	Uploads           bool             `json:"uploads"`
	Roots             []string         `json:"roots,omitempty" doc:"Folders the ingest endpoint reads (admin keys only)"`
	Collections       []CollectionInfo `json:"collections"`
}

type body[T any] struct {
	Body T
}

// register declares every operation.
func (s *Server) register() {
	// A key is needed once the server has one; without keys, none is.
	read := []map[string][]string{{"apiKey": {}}, {}}
	op := func(id, method, path, summary string, tags ...string) huma.Operation {
		return huma.Operation{OperationID: id, Method: method, Path: path, Summary: summary, Tags: tags, Security: read,
			MaxBodyBytes: s.cfg.MaxBodyBytes}
	}
	huma.Register(s.api, op("get-status", http.MethodGet, "/v1/status", "Server and collections status", "status"), s.status)
	huma.Register(s.api, op("list-collections", http.MethodGet, "/v1/collections", "List collections", "collections"), s.listCollections)
	create := op("create-collection", http.MethodPost, "/v1/collections", "Create a collection with a schema", "collections")
	create.DefaultStatus = http.StatusCreated
	huma.Register(s.api, create, s.createCollection)
	drop := op("delete-collection", http.MethodDelete, "/v1/collections/{collection}", "Delete a collection and its documents", "collections")
	drop.DefaultStatus = http.StatusNoContent
	huma.Register(s.api, drop, s.deleteCollection)
	huma.Register(s.api, op("upsert-documents", http.MethodPost, "/v1/collections/{collection}/documents", "Add or replace documents given as JSON", "documents"), s.upsertDocuments)
	huma.Register(s.api, op("delete-documents", http.MethodPost, "/v1/collections/{collection}/documents/delete", "Delete documents by filter or source", "documents"), s.deleteDocuments)
	up := op("upload-files", http.MethodPost, "/v1/collections/{collection}/uploads", "Upload files to ingest as a job", "documents")
	up.DefaultStatus = http.StatusAccepted
	up.MaxBodyBytes = s.cfg.MaxUploadBytes
	up.BodyReadTimeout = s.cfg.RequestTimeout // a large file on a slow link
	huma.Register(s.api, up, s.upload)
	ing := op("ingest-paths", http.MethodPost, "/v1/collections/{collection}/ingest", "Ingest folders from the server's ingest roots as a job", "documents")
	ing.DefaultStatus = http.StatusAccepted
	huma.Register(s.api, ing, s.ingestPaths)
	huma.Register(s.api, op("search", http.MethodPost, "/v1/collections/{collection}/search", "Search passages", "search"), s.search)
	huma.Register(s.api, op("ask", http.MethodPost, "/v1/collections/{collection}/ask", "Answer a question with citations", "ask"), s.ask)
	registerStream(s, op("ask-stream", http.MethodPost, "/v1/collections/{collection}/ask/stream", "Answer a question as server-sent events", "ask"),
		map[string]any{"text": TextEvent{}, "citation": Passage{}, "answer": AskResult{}, "error": Error{}}, s.askStream)
	huma.Register(s.api, op("list-jobs", http.MethodGet, "/v1/jobs", "List recent ingestion jobs", "jobs"), s.listJobs)
	huma.Register(s.api, op("get-job", http.MethodGet, "/v1/jobs/{id}", "An ingestion job's state and progress", "jobs"), s.getJob)
	registerStream(s, op("job-events", http.MethodGet, "/v1/jobs/{id}/events", "Follow a job's progress as server-sent events", "jobs"),
		map[string]any{"progress": Job{}, "error": Error{}}, s.jobEvents)
	huma.Register(s.api, op("get-thread", http.MethodGet, "/v1/threads/{thread}", "A conversation thread's turns", "threads"), s.getThread)
	dt := op("delete-thread", http.MethodDelete, "/v1/threads/{thread}", "Delete a conversation thread", "threads")
	dt.DefaultStatus = http.StatusNoContent
	huma.Register(s.api, dt, s.deleteThread)
	s.registerHierarchy()
}

// useErrorSchema documents Error as the body of every error response.
func useErrorSchema(api huma.API) {
	oa := api.OpenAPI()
	errSchema := oa.Components.Schemas.Schema(reflect.TypeFor[Error](), true, "Error")
	for _, item := range oa.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Delete, item.Patch} {
			if op == nil {
				continue
			}
			for code, resp := range op.Responses {
				if code == "default" || strings.HasPrefix(code, "4") || strings.HasPrefix(code, "5") {
					resp.Content = map[string]*huma.MediaType{problemJSON: {Schema: errSchema}}
				}
			}
		}
	}
}

// authorize checks the caller may do perm on collection ("" for none).
func (s *Server) authorize(ctx context.Context, perm keys.Permission, collection string) (*principal, error) {
	p := principalFrom(ctx)
	if p == nil {
		return nil, apiError(http.StatusUnauthorized, CodeUnauthorized, "no credentials")
	}
	if !p.perm.Allows(perm) {
		return nil, apiError(http.StatusForbidden, CodeForbidden, fmt.Sprintf("this key may %s; this needs %s", p.perm, perm))
	}
	if collection != "" && !p.allows(collection) {
		return nil, apiError(http.StatusForbidden, CodeForbidden, fmt.Sprintf("collection %q is not open to this key", collection))
	}
	return p, nil
}

// errScoped refuses what would reach past a key's filter.
func errScoped(what string) *Error {
	return apiError(http.StatusForbidden, CodeForbidden, what+" reaches every document, so it is not open to a key with a filter")
}

// collection opens a collection the caller may use, built with the
// server's embedder; with create, a missing one is created.
func (s *Server) collection(ctx context.Context, p *principal, name string, create bool) (*store.Collection, error) {
	c, err := s.cfg.Store.Collection(ctx, name)
	if create && errors.Is(err, store.ErrCollectionNotFound) {
		c, err = s.cfg.Store.EnsureCollection(ctx, store.CollectionConfig{Name: name, Model: s.cfg.Embedder.Model()})
	}
	if errors.Is(err, store.ErrCollectionNotFound) {
		return nil, apiError(http.StatusNotFound, CodeNotFound, fmt.Sprintf("collection %q does not exist", name))
	}
	if err != nil {
		return nil, fromLibrary(err)
	}
	if m := c.Config().Model; m != s.cfg.Embedder.Model() {
		return nil, apiError(http.StatusConflict, CodeConflict, fmt.Sprintf("collection %q was built with %s; this server embeds with %s", name, m, s.cfg.Embedder.Model()))
	}
	if p.scope != nil {
		if err := filter.Validate(p.scope, c.Config().Schema); err != nil {
			return nil, apiError(http.StatusForbidden, CodeForbidden, fmt.Sprintf("this key's scope cannot apply to collection %q: %v", name, err))
		}
	}
	return c, nil
}

// requestFilter parses a request's filter and checks it against the
// collection's schema and the raw-filter policy (filter.CheckRequest); nil
// when there is none.
func (s *Server) requestFilter(p *principal, raw json.RawMessage, c *store.Collection) (filter.Expr, error) {
	f, err := filter.ParseValue(raw)
	if err != nil {
		return nil, apiError(http.StatusBadRequest, CodeInvalidFilter, "invalid filter: "+err.Error())
	}
	if f == nil {
		return nil, nil
	}
	if err := filter.CheckRequest(f, c.Config().Schema, s.rawPolicy(p)); err != nil {
		return nil, apiError(http.StatusBadRequest, CodeInvalidFilter, fmt.Sprintf("invalid filter for collection %q: %v", c.Name(), err))
	}
	return f, nil
}

// rawPolicy is what a caller's filters may hold: raw fragments only when
// the operator enabled them for the server or for the caller's key.
func (s *Server) rawPolicy(p *principal) filter.RequestPolicy {
	if p.key == nil {
		return filter.RequestPolicy{AllowRaw: s.cfg.AllowRawFilters}
	}
	return p.key.FilterPolicy(s.cfg.AllowRawFilters)
}

func (s *Server) topK(k int) int {
	if k == 0 {
		return s.cfg.TopK
	}
	return k
}

func (s *Server) collectionInfo(ctx context.Context, p *principal, cc store.CollectionConfig) (CollectionInfo, bool, error) {
	var f filter.Expr
	if p.scope != nil {
		if filter.Validate(p.scope, cc.Schema) != nil {
			return CollectionInfo{}, false, nil // nothing there is reachable
		}
		f = p.scope
	}
	c, err := s.cfg.Store.Collection(ctx, cc.Name)
	if err != nil {
		return CollectionInfo{}, false, fromLibrary(err)
	}
	n, err := c.Count(ctx, f)
	if err != nil {
		return CollectionInfo{}, false, fromLibrary(err)
	}
	return CollectionInfo{Name: cc.Name, Documents: n, Model: cc.Model, Fields: cc.Schema, Language: cc.Language}, true, nil
}

func (s *Server) collections(ctx context.Context, p *principal) ([]CollectionInfo, error) {
	cfgs, err := s.cfg.Store.Collections(ctx)
	if err != nil {
		return nil, fromLibrary(err)
	}
	out := []CollectionInfo{}
	for _, cc := range cfgs {
		if !p.allows(cc.Name) {
			continue
		}
		info, ok, err := s.collectionInfo(ctx, p, cc)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, info)
		}
	}
	return out, nil
}

func (s *Server) status(ctx context.Context, _ *struct{}) (*body[Status], error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	cs, err := s.collections(ctx, p)
	if err != nil {
		return nil, err
	}
	st := Status{Version: s.api.OpenAPI().Info.Version, DefaultCollection: s.cfg.Collection, Model: s.cfg.Embedder.Model(),
		Chat: s.cfg.Model != nil, Keys: s.Keyed(), Permission: string(p.perm), Scoped: p.scope != nil,
		Uploads: s.cfg.IngestOptions != nil, Collections: cs}
	if s.roots != nil && p.perm.Allows(keys.PermAdmin) {
		st.Roots = s.roots.Dirs()
	}
	return &body[Status]{Body: st}, nil
}

func (s *Server) listCollections(ctx context.Context, _ *struct{}) (*body[CollectionList], error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	cs, err := s.collections(ctx, p)
	if err != nil {
		return nil, err
	}
	return &body[CollectionList]{Body: CollectionList{Collections: cs}}, nil
}

func (s *Server) createCollection(ctx context.Context, in *body[NewCollection]) (*body[CollectionInfo], error) {
	p, err := s.authorize(ctx, keys.PermAdmin, in.Body.Name)
	if err != nil {
		return nil, err
	}
	m := s.cfg.Embedder.Model()
	if e := in.Body.Embedder; e != "" && e != m.Provider+"/"+m.Model && e != m.String() {
		return nil, apiError(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("this server embeds with %s/%s; a collection of another embedder could not be searched here", m.Provider, m.Model))
	}
	c, err := s.cfg.Store.CreateCollection(ctx, store.CollectionConfig{Name: in.Body.Name, Schema: in.Body.Fields, Model: m, Language: in.Body.Language})
	if err != nil {
		return nil, fromLibrary(err)
	}
	info, _, err := s.collectionInfo(ctx, p, c.Config())
	if err != nil {
		return nil, err
	}
	info.Name = c.Name()
	return &body[CollectionInfo]{Body: info}, nil
}

func (s *Server) deleteCollection(ctx context.Context, in *CollectionPath) (*struct{}, error) {
	p, err := s.authorize(ctx, keys.PermAdmin, in.Collection)
	if err != nil {
		return nil, err
	}
	if p.scope != nil {
		return nil, errScoped("dropping a collection")
	}
	if _, err := s.cfg.Store.Collection(ctx, in.Collection); err != nil {
		return nil, fromLibrary(err)
	}
	if err := s.cfg.Store.DropCollection(ctx, in.Collection); err != nil {
		return nil, fromLibrary(err)
	}
	return nil, nil
}

type upsertInput struct {
	CollectionPath
	Body DocumentsBody
}

func (s *Server) upsertDocuments(ctx context.Context, in *upsertInput) (*body[DocumentsResult], error) {
	p, err := s.authorize(ctx, keys.PermWrite, in.Collection)
	if err != nil {
		return nil, err
	}
	if len(in.Body.Documents) > maxDocuments {
		return nil, apiError(http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("at most %d documents per request, got %d", maxDocuments, len(in.Body.Documents)))
	}
	c, err := s.collection(ctx, p, in.Collection, true)
	if err != nil {
		return nil, err
	}
	docs := make([]*document.Document, len(in.Body.Documents))
	for i, nd := range in.Body.Documents {
		if strings.TrimSpace(nd.Text) == "" {
			return nil, apiError(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("documents[%d]: text is empty", i))
		}
		d := document.New(nd.Text)
		if nd.ID != "" {
			d.ID = nd.ID
		}
		if nd.Source != "" {
			d.SourceName = nd.Source
		}
		if err := d.AddMetadata(nd.Metadata); err != nil {
			return nil, apiError(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("documents[%d]: %v", i, err))
		}
		docs[i] = d
	}
	if err := ingest.Add(ctx, c, s.emb, docs, p.scope); err != nil {
		return nil, fromLibrary(err)
	}
	s.metrics.chunks.Add(float64(len(docs)))
	out := DocumentsResult{Collection: c.Name(), IDs: make([]string, len(docs))}
	for i, d := range docs {
		out.IDs[i] = d.ID
	}
	return &body[DocumentsResult]{Body: out}, nil
}

type deleteInput struct {
	CollectionPath
	Body DeleteBody
}

func (s *Server) deleteDocuments(ctx context.Context, in *deleteInput) (*body[DeleteResult], error) {
	p, err := s.authorize(ctx, keys.PermWrite, in.Collection)
	if err != nil {
		return nil, err
	}
	c, err := s.collection(ctx, p, in.Collection, false)
	if err != nil {
		return nil, err
	}
	f, err := s.requestFilter(p, in.Body.Filter, c)
	if err != nil {
		return nil, err
	}
	if in.Body.Source != "" {
		f = filter.Merge(f, filter.Eq("sourceName", in.Body.Source))
	}
	// Checked before the scope joins: a scope alone must not delete all it
	// reaches.
	if f == nil {
		return nil, apiError(http.StatusBadRequest, CodeInvalidRequest, "give a source or a filter: deleting everything is not offered (delete the collection instead)")
	}
	n, err := c.Delete(ctx, filter.Merge(p.scope, f))
	if err != nil {
		return nil, fromLibrary(err)
	}
	return &body[DeleteResult]{Body: DeleteResult{Deleted: n}}, nil
}

type searchInput struct {
	CollectionPath
	Body SearchBody
}

func (s *Server) search(ctx context.Context, in *searchInput) (*body[SearchResult], error) {
	p, err := s.authorize(ctx, keys.PermRead, in.Collection)
	if err != nil {
		return nil, err
	}
	c, err := s.collection(ctx, p, in.Collection, false)
	if err != nil {
		return nil, err
	}
	f, err := s.requestFilter(p, in.Body.Filter, c)
	if err != nil {
		return nil, err
	}
	mode := store.Mode(in.Body.Mode)
	if mode == store.ModeAuto {
		mode = s.cfg.Mode
	}
	if mode == store.ModeAuto {
		mode = store.ModeHybrid
	}
	req := store.SearchRequest{Query: in.Body.Query, Mode: mode, Filter: filter.Merge(p.scope, f), TopK: s.topK(in.Body.TopK), Explain: in.Body.Explain}
	if mode != store.ModeKeyword {
		vecs, err := embed.EmbedQuery(ctx, s.emb, []string{in.Body.Query})
		if err != nil {
			return nil, fromLibrary(fmt.Errorf("embed the query: %w", err))
		}
		req.Embedding = vecs[0]
		if mode == store.ModeVector {
			req.Query = ""
		}
	}
	hits, err := stage(ctx, s, "search", func(ctx context.Context) ([]store.Hit, error) { return c.Search(ctx, req) })
	if err != nil {
		return nil, fromLibrary(err)
	}
	out := SearchResult{Collection: c.Name(), Mode: string(mode), Results: make([]Passage, len(hits))}
	for i, h := range hits {
		out.Results[i] = passage(i+1, h.Doc)
		out.Results[i].Explain = h.Explain
	}
	return &body[SearchResult]{Body: out}, nil
}

func passage(rank int, d *document.Document) Passage {
	pv := d.Provenance
	return Passage{Rank: rank, ID: d.ID, Score: d.Score, SourceType: d.SourceType, Source: d.SourceName,
		Page: pv.Page, Headings: pv.HeadingPath, LineStart: pv.LineStart, LineEnd: pv.LineEnd, Text: d.Content,
		Metadata: d.Metadata}
}

func citation(ct rag.Citation) Passage {
	p := Passage{Rank: ct.N, ID: ct.ID, SourceType: ct.SourceType, Source: ct.Source, Page: ct.Page,
		Headings: ct.Headings, LineStart: ct.LineStart, LineEnd: ct.LineEnd, Text: ct.Text}
	if ct.Document != nil {
		p.Score, p.Metadata = ct.Document.Score, ct.Document.Metadata
	}
	return p
}

type askInput struct {
	CollectionPath
	Body AskBody
}

// askRun is an answer ready to run: the pipeline and its request.
type askRun struct {
	pipeline *rag.Pipeline
	req      rag.Request
}

func (s *Server) prepareAsk(ctx context.Context, in *askInput) (*askRun, error) {
	p, err := s.authorize(ctx, keys.PermRead, in.Collection)
	if err != nil {
		return nil, err
	}
	c, err := s.collection(ctx, p, in.Collection, false)
	if err != nil {
		return nil, err
	}
	f, err := s.requestFilter(p, in.Body.Filter, c)
	if err != nil {
		return nil, err
	}
	mode := s.cfg.AskMode
	if mode == store.ModeAuto {
		mode = store.ModeHybrid
	}
	pl := &rag.Pipeline{
		Retriever:  &tracedRetriever{Retriever: &rag.CollectionRetriever{Collection: c, Embedder: s.emb, Mode: mode}, s: s},
		Scope:      p.scope,
		Extractive: rag.Extractive{Embedder: s.emb},
		Logger:     s.log,
	}
	if s.cfg.Model != nil {
		pl.Model = &tracedModel{ChatModel: s.cfg.Model, s: s}
	}
	if s.cfg.Pipeline != nil {
		if err := s.cfg.Pipeline(pl); err != nil {
			return nil, fromLibrary(fmt.Errorf("answer pipeline: %w", err))
		}
	}
	req := rag.Request{Question: in.Body.Question, Filter: f, TopK: s.topK(in.Body.TopK)}
	if in.Body.Thread != "" {
		ts, err := s.cfg.Store.Threads()
		if err != nil {
			return nil, fromLibrary(err)
		}
		if req.Thread, err = threadID(p, in.Body.Thread); err != nil {
			return nil, err
		}
		pl.Threads = ts
	}
	return &askRun{pipeline: pl, req: req}, nil
}

// threadID is the stored id of a caller's thread: a key's threads are its
// own, under its id.
func threadID(p *principal, id string) (string, error) {
	if p.key != nil {
		id = p.key.ID + "~" + id
	}
	if err := store.CheckThreadID(id); err != nil {
		return "", apiError(http.StatusBadRequest, CodeInvalidRequest, err.Error())
	}
	return id, nil
}

func askResult(a *rag.Answer, thread string) AskResult {
	out := AskResult{Answer: a.Text, Extractive: a.Extractive, Citations: make([]Passage, len(a.Citations)), Thread: thread}
	for i, ct := range a.Citations {
		out.Citations[i] = citation(ct)
	}
	return out
}

func (s *Server) ask(ctx context.Context, in *askInput) (*body[AskResult], error) {
	r, err := s.prepareAsk(ctx, in)
	if err != nil {
		return nil, err
	}
	a, err := r.pipeline.Ask(ctx, r.req)
	if err != nil {
		return nil, fromLibrary(err)
	}
	return &body[AskResult]{Body: askResult(a, in.Body.Thread)}, nil
}

// askStream checks the request before the stream opens; then the answer
// streams as text events, a citation event per cited passage and the
// answer, or an error event if generation fails midway.
func (s *Server) askStream(ctx context.Context, in *askInput) (iter.Seq[event], error) {
	r, err := s.prepareAsk(ctx, in)
	if err != nil {
		return nil, err
	}
	return func(yield func(event) bool) {
		for ev, err := range r.pipeline.Stream(ctx, r.req) {
			if err != nil {
				yield(event{"error", fromLibrary(err)})
				return
			}
			if ev.Text != "" && !yield(event{"text", TextEvent{Text: ev.Text}}) {
				return
			}
			if ev.Answer != nil {
				out := askResult(ev.Answer, in.Body.Thread)
				for _, c := range out.Citations {
					if !yield(event{"citation", c}) {
						return
					}
				}
				yield(event{"answer", out})
			}
		}
	}, nil
}

type threadPath struct {
	Thread string `path:"thread" maxLength:"100"`
}

func (s *Server) getThread(ctx context.Context, in *threadPath) (*body[Thread], error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	id, err := threadID(p, in.Thread)
	if err != nil {
		return nil, err
	}
	ts, err := s.cfg.Store.Threads()
	if err != nil {
		return nil, fromLibrary(err)
	}
	turns, err := ts.Turns(ctx, id, 0)
	if err != nil {
		return nil, fromLibrary(err)
	}
	return &body[Thread]{Body: Thread{ID: in.Thread, Turns: turns}}, nil
}

func (s *Server) deleteThread(ctx context.Context, in *threadPath) (*struct{}, error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	id, err := threadID(p, in.Thread)
	if err != nil {
		return nil, err
	}
	ts, err := s.cfg.Store.Threads()
	if err != nil {
		return nil, fromLibrary(err)
	}
	if err := ts.DeleteThread(ctx, id); err != nil {
		return nil, fromLibrary(err)
	}
	return nil, nil
}
