package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/retrieve"
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
	ToolIndex        = "knowledge_index"
	ToolQuery        = "knowledge_query"
	ToolImport       = "knowledge_import"
	ToolPutObjects   = "knowledge_put_objects"
	ToolCalibrate    = "knowledge_calibrate"
	ToolProfiles     = "knowledge_profiles"
)

// ProfilesInput is the (empty) input of knowledge_profiles.
type ProfilesInput struct{}

// ProfilesOutput is the structured result of knowledge_profiles.
type ProfilesOutput struct {
	Profiles []ProfileInfo `json:"profiles"`
}

// ProfileInfo is an agent profile as a client sees it.
type ProfileInfo = quarry.ProfileInfo

// PutObjectsInput is the input of knowledge_put_objects.
type PutObjectsInput struct {
	Objects    json.RawMessage `json:"objects" jsonschema:"a JSON object, or an array of objects (at most 256), each named by its id or @self.id; an object with the id of a stored one replaces it"`
	Collection string          `json:"collection,omitempty" jsonschema:"collection to add to, created when missing; omit for the default"`
}

// PutObjectsOutput is the structured result of knowledge_put_objects.
type PutObjectsOutput = quarry.ObjectsResult

// ImportInput is the input of knowledge_import.
type ImportInput struct {
	YAML       string `json:"yaml" jsonschema:"the import file: collection (optional) and nodes, each with name, optional type, parent, triggers, tags and chunks (text, optional id, source, metadata); see docs/hierarchy.md"`
	Collection string `json:"collection,omitempty" jsonschema:"collection to import into when the file names none; omit for the default"`
}

// ImportOutput is the structured result of knowledge_import: the job
// running the import.
type ImportOutput = IngestOutput

// QueryInput is the input of knowledge_query, NeuRAG's search: triggers
// first, then the knowledge base's default mode, a few passages.
type QueryInput struct {
	Query      string `json:"query" jsonschema:"what to look for: a question, keywords or a node's trigger"`
	TopN       int    `json:"top_n,omitempty" jsonschema:"how many passages to return (default 5, at most 10)"`
	Filter     any    `json:"filter,omitempty" jsonschema:"optional metadata filter in any syntax, as for knowledge_search"`
	Collection string `json:"collection,omitempty" jsonschema:"collection to search; omit for the default"`
	Profile    string `json:"profile,omitempty" jsonschema:"agent profile to search through (see knowledge_profiles): its collections and view narrow the search; omit for none, or for the only profile this client may use"`
}

// IndexInput is the input of knowledge_index.
type IndexInput struct {
	Paths []string `json:"paths" jsonschema:"files or folders to cut into chunks, inside the server's allowed roots; relative paths start at the first root"`
	Limit int      `json:"limit,omitempty" jsonschema:"the most chunks to return (default and most 1000)"`
}

// IndexOutput is the structured result of knowledge_index.
type IndexOutput = quarry.IndexResult

// SearchInput is the input of knowledge_search.
type SearchInput struct {
	Query      string `json:"query" jsonschema:"what to look for: a question or keywords in the documents' language"`
	Mode       string `json:"mode,omitempty" jsonschema:"auto (the knowledge hierarchy's triggers first, then the knowledge base's default), keyword (BM25), vector (meaning) or hybrid (both); omit for the knowledge base's default"`
	TopK       int    `json:"top_k,omitempty" jsonschema:"how many passages to return (default 10, at most 100)"`
	Filter     any    `json:"filter,omitempty" jsonschema:"optional metadata filter: text such as \"sourceName = 'guide.md' AND year >= 2024\", or JSON such as {\"sourceName\": \"guide.md\"}; only sourceType, sourceName and fields declared in the collection's schema can be filtered"`
	Collection string `json:"collection,omitempty" jsonschema:"collection to search; omit for the default (see knowledge_status)"`
	Explain    bool   `json:"explain,omitempty" jsonschema:"report each result's rank and score per branch"`
	Hierarchy  bool   `json:"hierarchy,omitempty" jsonschema:"place each result in the knowledge hierarchy: its node, the node's neighbours, the results linked to it"`
	Profile    string `json:"profile,omitempty" jsonschema:"agent profile to search through (see knowledge_profiles): its collections and view narrow the search; omit for none, or for the only profile this client may use"`
}

// Passage is one retrieved chunk with where it came from, as every
// surface returns it.
type Passage = quarry.Passage

// SearchOutput is the structured result of knowledge_search.
type SearchOutput = quarry.SearchResult

// AskInput is the input of knowledge_ask.
type AskInput struct {
	Question   string   `json:"question" jsonschema:"the question to answer from the knowledge base"`
	Mode       string   `json:"mode,omitempty" jsonschema:"retrieval mode: auto, keyword, vector or hybrid; omit for the knowledge base's default (hybrid)"`
	TopK       int      `json:"top_k,omitempty" jsonschema:"how many passages to read (default 10, at most 100)"`
	Filter     any      `json:"filter,omitempty" jsonschema:"optional metadata filter in any syntax, as for knowledge_search"`
	Collection string   `json:"collection,omitempty" jsonschema:"collection to ask; omit for the default"`
	Thread     string   `json:"thread,omitempty" jsonschema:"conversation thread: its earlier questions and answers are read in context, and this one is added"`
	Memory     []string `json:"memory,omitempty" jsonschema:"threads whose past exchanges are recalled beside the documents"`
	Post       []string `json:"post,omitempty" jsonschema:"post-processors after the server's own: dedupe, mmr, threshold, adaptive, neighbours, pack, rerank=cohere|jina|voyage|llm"`
	Transforms []string `json:"transforms,omitempty" jsonschema:"query transforms (need a chat model): rewrite, hyde, decompose, multi-query"`
	Schema     any      `json:"schema,omitempty" jsonschema:"a JSON Schema: the answer is JSON valid against it (needs a chat model)"`
	// MinRelevance is AskRequest.MinRelevance.
	MinRelevance float64 `json:"min_relevance,omitempty" jsonschema:"abstain when the best passage covers less of the question than this (0 to 1); the server's floor when omitted, none when negative"`
	Profile      string  `json:"profile,omitempty" jsonschema:"agent profile to answer through (see knowledge_profiles): its view, mode, top-k, model and post-processors stand for what the call leaves out"`
	Agent        bool    `json:"agent,omitempty" jsonschema:"gather the passages in steps for a question with several parts: triage, searches and expansions, a sufficiency check after each round, within the server's budget; abstains and says what it searched when the passages do not suffice; the steps are in the result's agent field"`
}

// AskOutput is the structured result of knowledge_ask.
type AskOutput = quarry.AskResult

// IngestInput is the input of knowledge_ingest.
type IngestInput struct {
	Paths      []string       `json:"paths" jsonschema:"files or folders to ingest, inside the server's allowed roots; relative paths start at the first root"`
	Collection string         `json:"collection,omitempty" jsonschema:"collection to ingest into, created when missing; omit for the default"`
	Metadata   map[string]any `json:"metadata,omitempty" jsonschema:"metadata added to every chunk: strings, numbers, booleans or lists of strings"`
	Include    []string       `json:"include,omitempty" jsonschema:"take only files matching one of these .gitignore-style patterns (e.g. *.md), relative to each folder"`
	Exclude    []string       `json:"exclude,omitempty" jsonschema:"leave out files and folders matching these .gitignore-style patterns (e.g. drafts/)"`
	Prefix     string         `json:"prefix,omitempty" jsonschema:"name this run's sources PREFIX/path, so folders with files of the same names can share a collection"`
	Replace    bool           `json:"replace,omitempty" jsonschema:"let these files take over source names other files hold (refused otherwise)"`
}

// IngestOutput is the structured result of knowledge_ingest.
type IngestOutput struct {
	JobID string `json:"job_id" jsonschema:"pass it to knowledge_ingest_status to follow the job"`
	// State is running, or done or failed for a job that ended at once.
	State string `json:"state"`
}

// JobInput is the input of knowledge_ingest_status.
type JobInput struct {
	JobID string `json:"job_id" jsonschema:"the id knowledge_ingest or knowledge_import returned"`
}

// Job is an ingestion or import job as recorded in the store.
type Job struct {
	ID         string `json:"id"`
	Kind       string `json:"kind" jsonschema:"ingest (folders) or import (knowledge nodes)"`
	Collection string `json:"collection"`
	State      string `json:"state" jsonschema:"running, done, failed or interrupted (its process stopped; quarry ingest --resume)"`
	Files      int    `json:"files" jsonschema:"files handled so far"`
	Total      int    `json:"total" jsonschema:"files found; for an import, the file's chunks"`
	Chunks     int    `json:"chunks" jsonschema:"chunks written so far"`
	Nodes      int    `json:"nodes,omitempty" jsonschema:"knowledge nodes an import placed, once it has"`
	Failed     int    `json:"failed" jsonschema:"files that could not be parsed"`
	Ignored    int    `json:"ignored" jsonschema:"files not read on purpose: images, binaries, too large"`
	NoText     int    `json:"no_text" jsonschema:"files read that hold no text: empty, a scan that needs OCR, encrypted"`
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
type NewDocument = quarry.NewDocument

// AddDocumentsOutput is the structured result of knowledge_add_documents.
type AddDocumentsOutput = quarry.AddResult

// DeleteInput is the input of knowledge_delete.
type DeleteInput struct {
	Source     string `json:"source,omitempty" jsonschema:"delete every passage of this source name"`
	Filter     any    `json:"filter,omitempty" jsonschema:"delete every passage matching this metadata filter, in any syntax as for knowledge_search"`
	Collection string `json:"collection,omitempty" jsonschema:"collection to delete from; omit for the default"`
}

// CalibrateInput is the input of knowledge_calibrate.
type CalibrateInput struct {
	Collection string `json:"collection,omitempty" jsonschema:"collection to calibrate; omit for the default"`
	Queries    int    `json:"queries,omitempty" jsonschema:"pseudo-queries to draw from the collection (default 300)"`
	DryRun     bool   `json:"dry_run,omitempty" jsonschema:"measure without recording"`
	Reset      bool   `json:"reset,omitempty" jsonschema:"remove the calibration: searches follow the rule for the embedder again"`
}

// CalibrateOutput is the structured result of knowledge_calibrate.
type CalibrateOutput = quarry.CalibrateResult

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
	Jobs              quarry.JobCounts   `json:"jobs" jsonschema:"recent ingestion jobs (the last 50) by state, for clients without a scope filter"`
}

// CollectionStatus describes one collection.
type CollectionStatus struct {
	Name      string         `json:"name"`
	Documents int            `json:"documents" jsonschema:"stored passages"`
	Model     string         `json:"model"`
	Fields    []string       `json:"fields,omitempty" jsonschema:"metadata fields that can be filtered, besides sourceType and sourceName"`
	Sources   int            `json:"sources,omitempty" jsonschema:"sources (files, objects, ids) in the collection, for clients without a scope filter"`
	ByType    map[string]int `json:"by_type,omitempty" jsonschema:"passages by source type (file, object, url, manual, conversation, other), for clients without a scope filter"`
	// SearchDefault is quarry.CollectionInfo.SearchDefault.
	SearchDefault string `json:"search_default" jsonschema:"the retrieval configuration a search that names no mode runs: the collection's calibration's choice (knowledge_calibrate), else the rule for its embedder"`
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
		for _, m := range retrieve.Modes {
			p.Enum = append(p.Enum, m)
		}
	}
	if p := s.Properties["top_k"]; p != nil {
		p.Minimum, p.Maximum = new(float64(0)), new(float64(quarry.MaxTopK))
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
	addTool(s, &sdk.Tool{Name: ToolSearch, Annotations: readOnly("Search the knowledge base"), InputSchema: searchIn,
		Description: "Search the knowledge base and return the best-matching passages, each with its source, " +
			"page, headings and line range so it can be cited. Use keyword mode for exact names and codes, " +
			"vector or hybrid for questions phrased in other words. Narrow with a metadata filter."}, s.search)
	// json.RawMessage would be inferred as a byte array: an answer's JSON
	// and a tool call's arguments are any JSON value.
	askOut, err := jsonschema.For[AskOutput](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"}}})
	if err != nil {
		return fmt.Errorf("mcp: output schema: %w", err)
	}
	addTool(s, &sdk.Tool{Name: ToolAsk, Annotations: readOnly("Ask the knowledge base"), InputSchema: askIn, OutputSchema: askOut,
		Description: "Answer a question from the knowledge base. The answer cites passages with [n] markers; " +
			"citations lists each passage with its source, page, headings and lines."}, s.ask)
	addTool(s, &sdk.Tool{Name: ToolStatus, Annotations: readOnly("Knowledge base status"),
		Description: "List the collections with their passage counts and filterable fields, the embedding " +
			"model, whether the server is read-only, and the latest ingestion job."}, s.status)
	addTool(s, &sdk.Tool{Name: ToolProfiles, Annotations: readOnly("Agent profiles"),
		Description: "List the agent profiles this client may use: named ways to search and ask, each with the collections it " +
			"searches, its view (a filter and the source types it includes) and its mode, top-k and model. Pass a profile's " +
			"name as profile to knowledge_search, knowledge_query or knowledge_ask."}, s.profiles)
	addTool(s, &sdk.Tool{Name: ToolIngestStatus, Annotations: readOnly("Ingestion job status"),
		Description: "Report an ingestion job's state (running, done, failed or interrupted) and progress: files handled " +
			"of the total, chunks written, files that failed."}, s.ingestStatus)
	queryIn, err := jsonschema.For[QueryInput](nil)
	if err != nil {
		return fmt.Errorf("mcp: input schema: %w", err)
	}
	queryIn.Properties["top_n"].Minimum, queryIn.Properties["top_n"].Maximum = new(float64(0)), new(float64(quarry.MaxQueryTopK))
	addTool(s, &sdk.Tool{Name: ToolQuery, Annotations: readOnly("Query the knowledge base"), InputSchema: queryIn,
		Description: "Find the few passages that best answer a query: a knowledge node whose trigger the query is comes " +
			"first, then the best passages by meaning and keywords. Each passage has its source, page, headings " +
			"and lines so it can be cited."}, s.query)
	addTool(s, &sdk.Tool{Name: ToolIndex, Annotations: readOnly("Cut files into chunks"),
		Description: "Read files or folders inside the server's roots and return the chunks ingestion would make of " +
			"them, with their source, page, headings and lines, storing nothing: to look at a document's parts " +
			"before adding them, or to add them one by one with knowledge_add_documents."}, s.index)
	s.addHierarchyTools()
	s.addGraphTools()
	if s.cfg.ReadOnly {
		return nil
	}
	addTool(s, &sdk.Tool{Name: ToolIngest,
		Annotations: &sdk.ToolAnnotations{Title: "Ingest files", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		Description: "Ingest files or folders (Markdown, text, code, HTML, PDF, JSON, CSV…) into a collection. " +
			"Runs as a background job and returns its id at once; follow it with knowledge_ingest_status. " +
			"Unchanged files are skipped, changed files replaced. Paths must lie inside the server's roots " +
			"(see knowledge_status)."}, writes(s, s.ingest))
	addTool(s, &sdk.Tool{Name: ToolImport,
		Annotations: &sdk.ToolAnnotations{Title: "Import knowledge nodes", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		Description: "Import knowledge nodes (with their triggers and tags) and their chunks from YAML, as a job: each node is found " +
			"or made under its parent, its chunks stored and placed under it. Returns the job's id at once; follow it with " + ToolIngestStatus + ". " +
			"Importing the same YAML again changes nothing, and finishes an import that was cut off."}, writes(s, s.importNodes))
	objectsIn, err := jsonschema.For[PutObjectsInput](nil)
	if err != nil {
		return fmt.Errorf("mcp: input schema: %w", err)
	}
	// The objects arrive as JSON, kept as sent (their fields' order is the
	// passage's), not as the bytes a RawMessage would be described as.
	objectsIn.Properties["objects"] = &jsonschema.Schema{Types: []string{"object", "array"},
		Description: objectsIn.Properties["objects"].Description}
	addTool(s, &sdk.Tool{Name: ToolPutObjects, InputSchema: objectsIn,
		Annotations: &sdk.ToolAnnotations{Title: "Add objects", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		Description: "Add JSON objects to a collection, each searchable as one passage of source type object (its fields as " +
			"\"key: value\" lines, its id, title and @self fields as metadata). An object with the id of a stored one replaces it; " +
			"delete one with knowledge_delete and source set to its id."}, writes(s, s.putObjects))
	addTool(s, &sdk.Tool{Name: ToolAddDocuments,
		Annotations: &sdk.ToolAnnotations{Title: "Add documents", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		Description: "Add texts to a collection, each searchable as one passage, with optional metadata and " +
			"source name. Give an id to replace a document later."}, writes(s, s.addDocuments))
	calibrateIn, err := jsonschema.For[CalibrateInput](nil)
	if err != nil {
		return fmt.Errorf("mcp: input schema: %w", err)
	}
	calibrateIn.Properties["queries"].Minimum, calibrateIn.Properties["queries"].Maximum = new(float64(0)), new(float64(quarry.MaxCalibrationQueries))
	addTool(s, &sdk.Tool{Name: ToolCalibrate, InputSchema: calibrateIn,
		Annotations: &sdk.ToolAnnotations{Title: "Calibrate search", IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		Description: "Measure which retrieval configuration (keyword, hybrid, hybrid with convex fusion at a few vector " +
			"weights) ranks a collection's own text best, on pseudo-queries drawn from its passages, and make it the " +
			"collection's search default: what searches that ask for no mode run. Takes seconds; needs " +
			fmt.Sprint(quarry.MinCalibrationDocuments) + " passages."}, writes(s, s.calibrate))
	addTool(s, &sdk.Tool{Name: ToolDelete,
		Annotations: &sdk.ToolAnnotations{Title: "Delete passages", DestructiveHint: new(true), OpenWorldHint: new(false)},
		Description: "Delete passages from a collection: every passage of a source, or every passage matching " +
			"a metadata filter. Give source or filter (both: passages matching both)."}, writes(s, s.delete))
	return nil
}

// parseFilter reads a filter given as text or as JSON; nil stays nil. The
// core checks it against the collection and the call's scope.
func parseFilter(v any) (filter.Expr, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	e, err := filter.ParseValue(b)
	if err != nil {
		return nil, fmt.Errorf("invalid filter: %w", err)
	}
	return e, nil
}

func (s *Server) search(ctx context.Context, req *sdk.CallToolRequest, in SearchInput) (*sdk.CallToolResult, SearchOutput, error) {
	var out SearchOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	f, err := parseFilter(in.Filter)
	if err != nil {
		return nil, out, err
	}
	res, err := s.kb.Search(ctx, sc, quarry.SearchRequest{Collection: in.Collection, Query: in.Query, Mode: in.Mode, Filter: f,
		TopK: in.TopK, Explain: in.Explain, Hierarchy: in.Hierarchy, Profile: in.Profile})
	if err != nil {
		return nil, out, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: passagesText(res.Results)}}}, *res, nil
}

func (s *Server) profiles(ctx context.Context, req *sdk.CallToolRequest, _ ProfilesInput) (*sdk.CallToolResult, ProfilesOutput, error) {
	out := ProfilesOutput{Profiles: []ProfileInfo{}}
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	var b strings.Builder
	for _, p := range s.kb.Profiles(sc) {
		out.Profiles = append(out.Profiles, p.Info())
		fmt.Fprintf(&b, "%s: %s\n", p.Name, p.Description)
	}
	if len(out.Profiles) == 0 {
		b.WriteString("No agent profiles: search and ask without one.")
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}}, out, nil
}

func (s *Server) query(ctx context.Context, req *sdk.CallToolRequest, in QueryInput) (*sdk.CallToolResult, SearchOutput, error) {
	var out SearchOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	f, err := parseFilter(in.Filter)
	if err != nil {
		return nil, out, err
	}
	res, err := s.kb.Query(ctx, sc, quarry.SearchRequest{Collection: in.Collection, Query: in.Query, Filter: f, TopK: in.TopN, Profile: in.Profile})
	if err != nil {
		return nil, out, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: passagesText(res.Results)}}}, *res, nil
}

func (s *Server) index(ctx context.Context, req *sdk.CallToolRequest, in IndexInput) (*sdk.CallToolResult, IndexOutput, error) {
	var out IndexOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	paths, err := s.confineAll(in.Paths)
	if err != nil {
		return nil, out, err
	}
	res, err := s.kb.Index(ctx, sc, quarry.IndexRequest{Paths: paths, Limit: in.Limit})
	if err != nil {
		return nil, out, err
	}
	text := fmt.Sprintf("%d chunks from %d files", len(res.Chunks), res.Files)
	if res.Truncated {
		text += " (stopped at the limit)"
	}
	if n := len(res.Skipped) + len(res.NoText) + len(res.Failed); n > 0 {
		text += fmt.Sprintf("; %d files gave none (see skipped, no_text and failed)", n)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text + ".\n\n" + passagesText(res.Chunks)}}}, *res, nil
}

func passagesText(ps []Passage) string {
	if len(ps) == 0 {
		return "No passage matches."
	}
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "[%d] %s (score %.4f)\n%s\n\n", p.Rank, p.Location, p.Score, p.Text)
	}
	return strings.TrimRight(b.String(), "\n")
}

func (s *Server) ask(ctx context.Context, req *sdk.CallToolRequest, in AskInput) (*sdk.CallToolResult, AskOutput, error) {
	var out AskOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	f, err := parseFilter(in.Filter)
	if err != nil {
		return nil, out, err
	}
	var schema json.RawMessage
	if in.Schema != nil {
		if schema, err = json.Marshal(in.Schema); err != nil {
			return nil, out, fmt.Errorf("%w: schema: %w", quarry.ErrInvalid, err)
		}
	}
	ans, err := s.kb.Ask(ctx, sc, quarry.AskRequest{Collection: in.Collection, Question: in.Question, Mode: in.Mode, Filter: f, TopK: in.TopK,
		Thread: in.Thread, Memory: in.Memory, Post: in.Post, Transforms: in.Transforms, Schema: schema,
		MinRelevance: in.MinRelevance, Profile: in.Profile, Agent: in.Agent})
	if err != nil {
		return nil, out, err
	}
	var b strings.Builder
	b.WriteString(ans.Answer)
	if g := ans.Agent; g != nil {
		fmt.Fprintf(&b, "\n\n(agent: %s, %d rounds, %d tool calls, stopped: %s; searched: %s)", g.Triage.Kind, g.Rounds, g.ToolCalls, g.Stopped, strings.Join(g.Queries, " | "))
	}
	if len(ans.Citations) > 0 {
		b.WriteString("\n\nSources:")
	}
	for _, p := range ans.Citations {
		fmt.Fprintf(&b, "\n[%d] %s", p.Rank, p.Location)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}}, *ans, nil
}

func (s *Server) status(ctx context.Context, req *sdk.CallToolRequest, _ StatusInput) (*sdk.CallToolResult, StatusOutput, error) {
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, StatusOutput{}, err
	}
	m := s.kb.Embedder().Model()
	out := StatusOutput{DefaultCollection: s.kb.DefaultCollection(), Model: m.Provider + "/" + m.Model, ReadOnly: s.cfg.ReadOnly,
		Collections: []CollectionStatus{}}
	if !s.cfg.ReadOnly {
		out.Roots = s.roots.Dirs()
	}
	st, err := s.kb.Status(ctx, sc)
	if err != nil {
		return nil, out, err
	}
	for _, ci := range st.Collections {
		cs := CollectionStatus{Name: ci.Name, Documents: ci.Documents, Model: ci.Model.Provider + "/" + ci.Model.Model, Sources: ci.Sources, ByType: ci.ByType,
			SearchDefault: ci.SearchDefault}
		if ci.Fields != nil {
			for _, f := range ci.Fields.Fields {
				cs.Fields = append(cs.Fields, f.Name)
			}
		}
		out.Collections = append(out.Collections, cs)
	}
	if st.LastJob != nil {
		j := jobOut(*st.LastJob)
		out.LastJob = &j
	}
	out.Jobs = st.Jobs
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
	out := Job{ID: j.ID, Kind: j.Kind, Collection: j.Collection, State: j.State, Files: j.Files, Total: j.Total, Nodes: j.Nodes,
		Chunks: j.Chunks, Failed: j.Failed, Ignored: j.Ignored, NoText: j.NoText, Error: j.Error, Started: stamp(j.Started), Updated: stamp(j.Updated),
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
	if !sc.MayReachAll() {
		return nil, Job{}, fmt.Errorf("%w: ingestion jobs are not open to a client with a scope filter or limited to profiles", quarry.ErrForbidden)
	}
	js, err := s.kb.Store().Jobs()
	if err != nil {
		return nil, Job{}, err
	}
	j, err := js.GetJob(ctx, in.JobID)
	if errors.Is(err, store.ErrJobNotFound) {
		return nil, Job{}, fmt.Errorf("%w: no job has id %q", store.ErrJobNotFound, in.JobID)
	}
	if err != nil {
		return nil, Job{}, fmt.Errorf("job %s: %w", in.JobID, err)
	}
	if !sc.Allows(j.Collection) {
		return nil, Job{}, fmt.Errorf("%w: no job has id %q", store.ErrJobNotFound, in.JobID)
	}
	out := jobOut(j)
	text := fmt.Sprintf("Job %s is %s: %d of %d files, %d chunks written, %d failed.", out.ID, out.State, out.Files, out.Total, out.Chunks, out.Failed)
	if out.Kind == quarry.ImportJobKind {
		text = fmt.Sprintf("Import job %s is %s: %d of %s stored, %s placed.", out.ID, out.State, out.Chunks, count(out.Total, "chunk"), count(out.Nodes, "node"))
	}
	if out.Error != "" {
		text += " Error: " + out.Error
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, out, nil
}

func (s *Server) ingest(ctx context.Context, req *sdk.CallToolRequest, in IngestInput) (*sdk.CallToolResult, IngestOutput, error) {
	var out IngestOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	if err := sc.MayIngestPaths(); err != nil {
		return nil, out, fmt.Errorf("%w (with %s, texts with metadata that matches the scope)", err, ToolAddDocuments)
	}
	paths, err := s.confineAll(in.Paths)
	if err != nil {
		return nil, out, err
	}
	name := in.Collection
	if name == "" {
		name = s.kb.DefaultCollection()
	}
	done := func(rep *ingest.Report, err error) {
		if err != nil {
			s.log.Warn("mcp: ingestion failed", "collection", name, "paths", paths, "err", err)
			return
		}
		s.log.Info("mcp: ingestion done", "collection", name, "files", rep.Files, "chunks", rep.Chunks)
	}
	st, err := s.kb.StartIngest(ctx, sc, quarry.IngestRequest{Collection: name, Paths: paths, Metadata: in.Metadata,
		Include: in.Include, Exclude: in.Exclude, Prefix: in.Prefix, Replace: in.Replace}, quarry.Background{Jobs: s.jobs, Options: s.cfg.IngestOptions, Done: done})
	if err != nil {
		return nil, out, err
	}
	out = IngestOutput{JobID: st.ID, State: st.State}
	text := fmt.Sprintf("Ingestion job %s started into collection %q; follow it with %s.", out.JobID, name, ToolIngestStatus)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, out, nil
}

func (s *Server) putObjects(ctx context.Context, req *sdk.CallToolRequest, in PutObjectsInput) (*sdk.CallToolResult, PutObjectsOutput, error) {
	var out PutObjectsOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	res, err := s.kb.PutObjects(ctx, sc, in.Collection, in.Objects)
	if err != nil {
		return nil, out, err
	}
	text := fmt.Sprintf("Stored %s in collection %q.", count(len(res.Objects), "object"), res.Collection)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, *res, nil
}

func (s *Server) importNodes(ctx context.Context, req *sdk.CallToolRequest, in ImportInput) (*sdk.CallToolResult, ImportOutput, error) {
	var out ImportOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	f, err := quarry.ParseImport(strings.NewReader(in.YAML))
	if err != nil {
		return nil, out, err
	}
	st, err := s.kb.StartImport(ctx, sc, in.Collection, f, s.jobs)
	if err != nil {
		return nil, out, err
	}
	out = ImportOutput{JobID: st.ID, State: st.State}
	text := fmt.Sprintf("Import job %s started; follow it with %s.", out.JobID, ToolIngestStatus)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, out, nil
}

func (s *Server) addDocuments(ctx context.Context, req *sdk.CallToolRequest, in AddDocumentsInput) (*sdk.CallToolResult, AddDocumentsOutput, error) {
	var out AddDocumentsOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	res, err := s.kb.AddDocuments(ctx, sc, in.Collection, in.Documents)
	if err != nil {
		return nil, out, err
	}
	text := fmt.Sprintf("Added %s to collection %q.", count(len(res.IDs), "document"), res.Collection)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, *res, nil
}

func (s *Server) calibrate(ctx context.Context, req *sdk.CallToolRequest, in CalibrateInput) (*sdk.CallToolResult, CalibrateOutput, error) {
	var out CalibrateOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	res, err := s.kb.Calibrate(ctx, sc, quarry.CalibrateRequest{Collection: in.Collection, Queries: in.Queries, DryRun: in.DryRun, Reset: in.Reset})
	if err != nil {
		return nil, out, err
	}
	var text strings.Builder
	if err := res.WriteTable(&text); err != nil {
		return nil, out, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text.String()}}}, *res, nil
}

func (s *Server) delete(ctx context.Context, req *sdk.CallToolRequest, in DeleteInput) (*sdk.CallToolResult, DeleteOutput, error) {
	var out DeleteOutput
	sc, err := s.scope(ctx, req)
	if err != nil {
		return nil, out, err
	}
	f, err := parseFilter(in.Filter)
	if err != nil {
		return nil, out, err
	}
	n, err := s.kb.Delete(ctx, sc, quarry.DeleteRequest{Collection: in.Collection, Source: in.Source, Filter: f})
	if err != nil {
		return nil, out, err
	}
	out.Deleted = n
	name := in.Collection
	if name == "" {
		name = s.kb.DefaultCollection()
	}
	text := fmt.Sprintf("Deleted %s from collection %q.", count(n, "passage"), name)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, out, nil
}

// count writes n with its noun, singular or plural.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
