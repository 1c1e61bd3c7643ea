// Package config resolves Quarry's settings: defaults, then the knowledge
// base's config.toml, then QUARRY_* environment variables; command-line
// flags override all three (the CLI applies them last).
package config

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

// DirName is the knowledge base directory looked for upward from the
// working directory, like .git.
const DirName = ".quarry"

// FileName is the configuration file inside a knowledge base.
const FileName = "config.toml"

// EnvKB names the environment variable that points at a knowledge base.
const EnvKB = "QUARRY_KB"

// Config holds every setting. Zero values are never left after Load: each
// field has a default.
type Config struct {
	// Store is the store URL; empty means the embedded store in the
	// knowledge base directory.
	Store string `koanf:"store"`
	// Collection is the collection commands use when none is given.
	Collection string `koanf:"collection"`
	// Embedder selects the embedding provider: "hash" (offline, default),
	// "static:DIR", "openai:MODEL", "ollama:MODEL", …
	Embedder string `koanf:"embedder"`
	// LLM selects the chat model for answers; empty answers extractively.
	LLM      string   `koanf:"llm"`
	Chunking Chunking `koanf:"chunking"`
	Search   Search   `koanf:"search"`
	Ingest   Ingest   `koanf:"ingest"`
	Agent    Agent    `koanf:"agent"`
	Graph    Graph    `koanf:"graph"`
	Azure    Azure    `koanf:"azure"`
	// Collections holds per-collection settings ([collections.NAME]).
	Collections map[string]CollectionSettings `koanf:"collections"`
	// Profiles holds the agent profiles ([profiles.NAME]): named ways to
	// search and ask that a request selects and a key can be limited to.
	Profiles map[string]Profile `koanf:"profiles"`

	// origins maps a setting ("search.mode") to where its value came
	// from: the environment variable or the file. Defaults have none.
	origins map[string]string
}

// Origin says where a setting's value came from, for messages that tell
// people what to change: the environment variable that set it
// ("QUARRY_EMBEDDER"), the config.toml that did, or "" for the default.
func (c Config) Origin(key string) string { return c.origins[key] }

// settingError is an invalid setting, named by its key.
type settingError struct {
	key string
	err error
}

func (e *settingError) Error() string { return e.err.Error() }
func (e *settingError) Unwrap() error { return e.err }

func invalidSetting(key, format string, args ...any) error {
	return &settingError{key: key, err: fmt.Errorf(format, args...)}
}

// Chunking configures splitting.
type Chunking struct {
	// Splitter is auto, recursive, markdown, code, sentence or delimiter.
	Splitter      string `koanf:"splitter"`
	MaxTokens     int    `koanf:"max_tokens"`
	OverlapTokens int    `koanf:"overlap_tokens"`
}

// Search configures default search behaviour.
type Search struct {
	// Mode is "" (the store's rule for the collection's embedder), vector,
	// keyword or hybrid.
	Mode string `koanf:"mode"`
	TopK int    `koanf:"top_k"`
	// Rerank reranks every answer's passages: "" or "off" for none, else a
	// reranker as --post rerank= takes it (cohere, jina, voyage, llm,
	// tei@URL, openai-compatible@URL).
	Rerank string `koanf:"rerank"`
	// MinRelevance is the relevance floor of answers (rag.Relevance): 0
	// is the rule for the collection's embedder (rag.MinRelevanceFor), a
	// negative value turns the floor off.
	MinRelevance float64 `koanf:"min_relevance"`
	// Calibrate is "auto" (an ingest that leaves a large collection without
	// a calibration measures one: quarry eval --calibrate) or "off".
	Calibrate string `koanf:"calibrate"`
	// CallerConcurrency bounds the store work one API key or MCP client
	// runs at once (searches, answers, adds and deletes; more wait their
	// turn), so that one caller cannot hold every connection of a server
	// store. Operators and the library's own calls are not bounded.
	CallerConcurrency int `koanf:"caller_concurrency"`
}

// Agent bounds the agentic loop of questions asked with --agent (package
// agent): each run stops at the first bound it reaches and answers from
// what it gathered, or abstains.
type Agent struct {
	// Rounds of retrieval, each followed by a sufficiency check.
	Rounds int `koanf:"rounds"`
	// ToolCalls bounds the searches and expansions of one question.
	ToolCalls int `koanf:"tool_calls"`
	// Tokens bounds what the chat model spends on triage, tool rounds and
	// judging.
	Tokens int `koanf:"tokens"`
	// Time bounds the gathering's wall time ("60s").
	Time string `koanf:"time"`
}

// Graph is a Neo4j knowledge graph searched beside the knowledge base
// through named Cypher templates (package retrieve/neo4j).
type Graph struct {
	// URL is Neo4j's HTTP address ("http://localhost:7474"); empty for no
	// graph.
	URL      string `koanf:"url"`
	Database string `koanf:"database"`
	// User authenticates; the password comes from NEO4J_PASSWORD.
	User string `koanf:"user"`
	// Templates is the folder of *.cypher templates, relative to the
	// knowledge base directory.
	Templates string `koanf:"templates"`
	// Search names the template every question is also searched with (its
	// query parameter takes the question); empty searches the graph only
	// through the agent's tools.
	Search string `koanf:"search"`
}

// Azure is an Azure AI Search index searched beside the knowledge base
// (package retrieve/azuresearch): with every answer, in parallel, and as
// a source of the agent.
type Azure struct {
	// Endpoint is the service ("https://NAME.search.windows.net"); empty
	// for none. The key comes from AZURE_SEARCH_API_KEY.
	Endpoint string `koanf:"endpoint"`
	Index    string `koanf:"index"`
	// KeyField, ContentField, TitleField and SourceField name the index's
	// fields a passage is made of (key "id" and content "content" when
	// empty; no title; the key names the source when no source field).
	KeyField     string `koanf:"key_field"`
	ContentField string `koanf:"content_field"`
	TitleField   string `koanf:"title_field"`
	SourceField  string `koanf:"source_field"`
	// VectorField and Embedder make searches hybrid: the question is
	// embedded with Embedder (the model the index's vectors were made
	// with, as embedder takes it) and searched in VectorField beside the
	// text.
	VectorField string `koanf:"vector_field"`
	Embedder    string `koanf:"embedder"`
	// Semantic names a semantic configuration of the index: the Semantic
	// Ranker reorders the results and adds captions.
	Semantic string `koanf:"semantic"`
	// Fields are the index's filterable fields as "name:type" (string,
	// integer, float, boolean, string[]): scopes and filters may name
	// them, and passages carry them as metadata.
	Fields []string `koanf:"fields"`
}

// TimeLimit is the agent's time bound.
func (a Agent) TimeLimit() time.Duration {
	d, _ := time.ParseDuration(a.Time)
	return d
}

// CollectionSettings override settings for one collection.
type CollectionSettings struct {
	// Rerank is the collection's search.rerank ("off" turns it off).
	Rerank string `koanf:"rerank"`
}

// Profile is one agent profile as config.toml writes it; the knowledge
// base checks its filter and specs when it opens (quarry.Profile).
type Profile struct {
	// Description says what the profile is for, in listings.
	Description string `koanf:"description"`
	// Collections the profile searches, the first when a request names
	// none; empty means the knowledge base's default and whatever else the
	// caller may use.
	Collections []string `koanf:"collections"`
	// Filter is the profile's view: a filter in any syntax, merged by AND
	// into everything the profile retrieves.
	Filter string `koanf:"filter"`
	// Sources are the source types it includes (file, object, url, manual,
	// conversation); empty includes all.
	Sources []string `koanf:"sources"`
	// Mode, TopK, LLM and Post stand for search.mode, search.top_k, llm
	// and --post for requests through the profile that name none.
	Mode string   `koanf:"mode"`
	TopK int      `koanf:"top_k"`
	LLM  string   `koanf:"llm"`
	Post []string `koanf:"post"`
}

// Ingest configures ingestion.
type Ingest struct {
	// BatchSize is how many chunks are embedded per call.
	BatchSize int `koanf:"batch_size"`
	// MaxFileSize skips larger files, in bytes.
	MaxFileSize int64 `koanf:"max_file_size"`
	// Include and Exclude narrow the files taken from folders, in
	// .gitignore syntax (load.Selection); --include and --exclude add to
	// them.
	Include []string `koanf:"include"`
	Exclude []string `koanf:"exclude"`
	// OCR reads scanned PDF pages with tesseract: off (the default: they
	// are reported as needing OCR), auto (when tesseract is installed) or
	// on (a scan fails when it is not).
	OCR string `koanf:"ocr"`
	// KeepData reads files and chunks that are data rather than prose or
	// code (lock files, minified bundles, generated code, keys, base64 and
	// hex dumps, number tables), which are otherwise left out with the
	// reason (load.Options.KeepData).
	KeepData bool `koanf:"keep_data"`
	// SkipFolders are the folder names a walk does not descend into below
	// the folders given (load.DefaultSkipFolders); each one left out is
	// reported. Empty reads every folder.
	SkipFolders []string `koanf:"skip_folders"`
}

// Defaults returns the built-in settings.
func Defaults() Config {
	return Config{
		Collection: "default",
		Embedder:   "hash",
		Chunking:   Chunking{Splitter: "auto", MaxTokens: 512, OverlapTokens: 64},
		Search:     Search{TopK: 10, Rerank: "off", Calibrate: "auto", CallerConcurrency: 4},
		Ingest:     Ingest{BatchSize: 64, MaxFileSize: 50 << 20, OCR: "off", SkipFolders: []string{"node_modules", "__pycache__", "venv", "build", "dist", "vendor"}},
		Agent:      Agent{Rounds: 4, ToolCalls: 16, Tokens: 24000, Time: "60s"},
		Graph:      Graph{Database: "neo4j", User: "neo4j", Templates: "cypher"},
		Azure:      Azure{Fields: []string{}},
	}
}

// sections are the nested tables; an environment variable QUARRY_SEARCH_TOP_K
// maps to search.top_k.
var sections = []string{"chunking", "search", "ingest", "agent", "graph", "azure"}

// Load resolves the settings of the knowledge base in dir (which may not
// exist yet, or be "" for none: then only defaults and the environment
// apply). environ is the environment to read (os.Environ when nil).
// Unknown keys in the file are errors, so a typo is never silently
// ignored.
func Load(dir string, environ func() []string) (Config, error) {
	k := koanf.New(".")
	def := Defaults()
	if err := k.Load(confmap.Provider(toMap(def), "."), nil); err != nil {
		return Config{}, fmt.Errorf("config defaults: %w", err)
	}
	origins := map[string]string{}
	// Without a knowledge base directory (a store URL alone) only the
	// defaults and the environment apply, never a config.toml that happens
	// to sit in the working directory.
	path := ""
	if dir != "" {
		path = filepath.Join(dir, FileName)
		if err := loadFile(k, path, origins); err != nil {
			return Config{}, err
		}
	}
	if environ == nil {
		environ = os.Environ
	}
	envp := env.Provider(".", env.Opt{
		Prefix:      "QUARRY_",
		EnvironFunc: environ,
		TransformFunc: func(k, v string) (string, any) {
			key, val := envKey(k, v)
			if key != "" {
				origins[key] = k
			}
			return key, val
		},
	})
	if err := k.Load(envp, nil); err != nil {
		return Config{}, fmt.Errorf("config environment: %w", err)
	}
	var c Config
	err := k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		ErrorUnused:      true,
		WeaklyTypedInput: true, // environment values arrive as strings
		Result:           &c,
		TagName:          "koanf",
	}})
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", cmp.Or(path, "(environment)"), err)
	}
	if len(origins) > 0 {
		c.origins = origins
	}
	if err := c.Check(); err != nil {
		var se *settingError
		if errors.As(err, &se) && strings.HasPrefix(origins[se.key], "QUARRY_") {
			return Config{}, fmt.Errorf("environment variable %s: %w", origins[se.key], err)
		}
		return Config{}, fmt.Errorf("config %s: %w", cmp.Or(path, "(environment)"), err)
	}
	return c, nil
}

// loadFile loads path into k when it exists, noting the keys it sets.
func loadFile(k *koanf.Koanf, path string, origins map[string]string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := k.Load(file.Provider(path), toml.Parser()); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	kf := koanf.New(".")
	if err := kf.Load(file.Provider(path), toml.Parser()); err == nil {
		for _, key := range kf.Keys() {
			origins[key] = path
		}
	}
	return nil
}

// envKey maps QUARRY_SEARCH_TOP_K to search.top_k. Variables that name no
// setting (QUARRY_KB, QUARRY_TEST_PG_DSN, a user's own) are ignored: the
// environment is shared, unlike config.toml, where an unknown key is a typo.
func envKey(k, v string) (string, any) {
	key := strings.ToLower(strings.TrimPrefix(k, "QUARRY_"))
	for _, s := range sections {
		if strings.HasPrefix(key, s+"_") {
			key = s + "." + strings.TrimPrefix(key, s+"_")
			break
		}
	}
	if _, ok := toMap(Defaults())[key]; !ok {
		return "", nil
	}
	return key, v
}

// Check validates the settings.
func (c Config) Check() error {
	switch c.Chunking.Splitter {
	case "auto", "recursive", "markdown", "code", "sentence", "delimiter":
	default:
		return invalidSetting("chunking.splitter", "chunking.splitter %q: use auto, recursive, markdown, code, sentence or delimiter", c.Chunking.Splitter)
	}
	if c.Chunking.MaxTokens <= 0 || c.Chunking.OverlapTokens < 0 || c.Chunking.OverlapTokens >= c.Chunking.MaxTokens {
		return fmt.Errorf("chunking: max_tokens must be positive and overlap_tokens in [0, max_tokens), got %d and %d", c.Chunking.MaxTokens, c.Chunking.OverlapTokens)
	}
	switch c.Search.Mode {
	case "", "auto", "vector", "keyword", "hybrid":
	default:
		return invalidSetting("search.mode", "search.mode %q: use auto, vector, keyword or hybrid", c.Search.Mode)
	}
	if c.Search.MinRelevance > 1 {
		return invalidSetting("search.min_relevance", "search.min_relevance must be at most 1, got %g", c.Search.MinRelevance)
	}
	switch c.Search.Calibrate {
	case "auto", "off":
	default:
		return invalidSetting("search.calibrate", "search.calibrate %q: use auto or off", c.Search.Calibrate)
	}
	if c.Search.TopK <= 0 {
		return invalidSetting("search.top_k", "search.top_k must be positive, got %d", c.Search.TopK)
	}
	if c.Search.CallerConcurrency <= 0 {
		return invalidSetting("search.caller_concurrency", "search.caller_concurrency must be positive, got %d", c.Search.CallerConcurrency)
	}
	if c.Ingest.BatchSize <= 0 || c.Ingest.MaxFileSize <= 0 {
		return fmt.Errorf("ingest: batch_size and max_file_size must be positive")
	}
	switch c.Ingest.OCR {
	case "", "off", "auto", "on":
	default:
		return invalidSetting("ingest.ocr", "ingest.ocr %q: use off, auto or on", c.Ingest.OCR)
	}
	if c.Agent.Rounds <= 0 || c.Agent.ToolCalls <= 0 || c.Agent.Tokens <= 0 {
		return fmt.Errorf("agent: rounds, tool_calls and tokens must be positive, got %d, %d and %d", c.Agent.Rounds, c.Agent.ToolCalls, c.Agent.Tokens)
	}
	if d, err := time.ParseDuration(c.Agent.Time); err != nil || d <= 0 {
		return invalidSetting("agent.time", "agent.time %q: give a positive duration such as 60s", c.Agent.Time)
	}
	for name, p := range c.Profiles {
		key := "profiles." + name
		switch p.Mode {
		case "", "auto", "vector", "keyword", "hybrid":
		default:
			return invalidSetting(key+".mode", "%s.mode %q: use auto, vector, keyword or hybrid", key, p.Mode)
		}
		if p.TopK < 0 {
			return invalidSetting(key+".top_k", "%s.top_k must be positive, got %d", key, p.TopK)
		}
	}
	if c.Collection == "" || c.Embedder == "" {
		return fmt.Errorf("collection and embedder must not be empty")
	}
	return nil
}

func toMap(c Config) map[string]any {
	return map[string]any{
		"store": c.Store, "collection": c.Collection, "embedder": c.Embedder, "llm": c.LLM,
		"chunking.splitter": c.Chunking.Splitter, "chunking.max_tokens": c.Chunking.MaxTokens,
		"chunking.overlap_tokens": c.Chunking.OverlapTokens,
		"search.mode":             c.Search.Mode, "search.top_k": c.Search.TopK, "search.rerank": c.Search.Rerank,
		"search.min_relevance": c.Search.MinRelevance, "search.calibrate": c.Search.Calibrate,
		"search.caller_concurrency": c.Search.CallerConcurrency,
		"ingest.batch_size":         c.Ingest.BatchSize, "ingest.max_file_size": c.Ingest.MaxFileSize,
		"ingest.ocr": c.Ingest.OCR, "ingest.keep_data": c.Ingest.KeepData, "ingest.skip_folders": c.Ingest.SkipFolders,
		"agent.rounds": c.Agent.Rounds, "agent.tool_calls": c.Agent.ToolCalls, "agent.tokens": c.Agent.Tokens,
		"agent.time": c.Agent.Time,
		"graph.url":  c.Graph.URL, "graph.database": c.Graph.Database, "graph.user": c.Graph.User,
		"graph.templates": c.Graph.Templates, "graph.search": c.Graph.Search,
		"azure.endpoint": c.Azure.Endpoint, "azure.index": c.Azure.Index, "azure.key_field": c.Azure.KeyField,
		"azure.content_field": c.Azure.ContentField, "azure.title_field": c.Azure.TitleField,
		"azure.source_field": c.Azure.SourceField, "azure.vector_field": c.Azure.VectorField,
		"azure.embedder": c.Azure.Embedder, "azure.semantic": c.Azure.Semantic, "azure.fields": c.Azure.Fields,
	}
}

// FindKB returns the knowledge base directory: the value of QUARRY_KB when
// set, else the nearest .quarry directory from start upward. found is false
// when there is none; dir is then where a new one would go (start/.quarry).
func FindKB(start string, getenv func(string) string) (dir string, found bool, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(EnvKB); v != "" {
		st, err := os.Stat(v)
		return v, err == nil && st.IsDir(), nil
	}
	abs, err := filepath.Abs(start)
	if err != nil {
		return "", false, fmt.Errorf("find knowledge base: %w", err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		cand := filepath.Join(d, DirName)
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			return cand, true, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return filepath.Join(abs, DirName), false, nil
}

// Template is the config.toml that `quarry init` writes: every setting with
// its default and what it does.
func Template(c Config) string {
	q := strconv.Quote
	qs := func(ss []string) string {
		parts := make([]string, len(ss))
		for i, s := range ss {
			parts[i] = q(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return `# Quarry knowledge base settings. Precedence: command-line flag > QUARRY_* environment
# variable (QUARRY_SEARCH_TOP_K for search.top_k) > this file > built-in default.

# Store URL: empty for the embedded store in this directory, or postgres://user@host/db.
store = ` + q(c.Store) + `
# Collection used when a command names none; "_uncollected" keeps such documents apart from
# every named collection (docs/stores.md).
collection = ` + q(c.Collection) + `
# Embedder: hash (offline), static:DIR (model2vec), openai:MODEL, ollama:MODEL, ...
embedder = ` + q(c.Embedder) + `
# Chat model for answers; empty answers extractively from the best passages.
llm = ` + q(c.LLM) + `

[chunking]
# auto picks by file type: markdown, code, recursive.
splitter = ` + q(c.Chunking.Splitter) + `
max_tokens = ` + strconv.Itoa(c.Chunking.MaxTokens) + `
overlap_tokens = ` + strconv.Itoa(c.Chunking.OverlapTokens) + `

[search]
# Empty: the rule for the collection's embedder; or vector, keyword, hybrid.
mode = ` + q(c.Search.Mode) + `
top_k = ` + strconv.Itoa(c.Search.TopK) + `
# Rerank every answer's passages: off, or cohere, jina, voyage, llm, tei@URL, openai-compatible@URL.
# A collection can have its own: [collections.NAME] rerank = "off".
rerank = ` + q(c.Search.Rerank) + `
# Answers abstain when the best passage covers less of the question than this (0 to 1):
# 0 is the rule for the embedder (0.5 with the offline hash embedder, none with a semantic
# one), a negative value never abstains.
min_relevance = ` + strconv.FormatFloat(c.Search.MinRelevance, 'g', -1, 64) + `
# auto: an ingest that leaves a collection of 1000 chunks or more without a calibration
# (or four times larger than at its last one) measures which mode ranks its own text best
# (seconds, offline; quarry eval --calibrate), and searches that ask for no mode run it.
# off: the fixed rule for the embedder, unless quarry eval --calibrate records a choice.
calibrate = ` + q(c.Search.Calibrate) + `
# Searches, answers, adds and deletes one API key or MCP client runs at once; more wait their
# turn, so one caller cannot hold every connection of a server store.
caller_concurrency = ` + strconv.Itoa(c.Search.CallerConcurrency) + `

# Agent profiles: named ways to search and ask (--profile NAME, "profile" in the API and
# MCP), each with its collections, a filter (its view), the source types it includes, and
# its own mode, top_k, llm and post. A key can be limited to profiles (keys create --profile).
# [profiles.support]
# description = "Customer questions: published help articles only"
# collections = ["handbook"]
# filter = "status = 'published'"
# sources = ["file", "object"]
# mode = "hybrid"
# top_k = 5

[ingest]
batch_size = ` + strconv.Itoa(c.Ingest.BatchSize) + `
max_file_size = ` + strconv.FormatInt(c.Ingest.MaxFileSize, 10) + `
# Scanned PDF pages: off (reported as needing OCR), auto (read with tesseract when it is
# installed) or on (read with tesseract; a scan fails without it).
ocr = ` + q(c.Ingest.OCR) + `
# Lock files, minified bundles, generated code ("DO NOT EDIT"), keys and certificates, base64
# and hex dumps and number tables are left out, each with its reason; true reads them.
keep_data = ` + strconv.FormatBool(c.Ingest.KeepData) + `
# Folders not descended into below the folders you ingest (dependencies and build output, by
# name); each one left out is reported. [] reads them all.
skip_folders = ` + qs(c.Ingest.SkipFolders) + `

[agent]
# Bounds of a question asked with --agent (agent: true in the API and MCP): rounds of
# retrieval, searches and expansions, the chat model's tokens, and wall time.
rounds = ` + strconv.Itoa(c.Agent.Rounds) + `
tool_calls = ` + strconv.Itoa(c.Agent.ToolCalls) + `
tokens = ` + strconv.Itoa(c.Agent.Tokens) + `
time = ` + q(c.Agent.Time) + `

[graph]
# A Neo4j knowledge graph searched through named Cypher templates (docs/agent.md): its HTTP
# address (empty for none), database, user (the password from NEO4J_PASSWORD), the folder of
# *.cypher templates, and the template every question is also searched with (empty: only the
# agent's tools use the graph).
url = ` + q(c.Graph.URL) + `
database = ` + q(c.Graph.Database) + `
user = ` + q(c.Graph.User) + `
templates = ` + q(c.Graph.Templates) + `
search = ` + q(c.Graph.Search) + `

[azure]
# An Azure AI Search index searched beside the knowledge base (docs/agent.md): the service
# (empty for none; the key from AZURE_SEARCH_API_KEY), the index, the fields a passage is made
# of, a vector field with the embedder its vectors were made with (hybrid search), a semantic
# configuration (the Semantic Ranker and captions), and the filterable fields as "name:type".
endpoint = ` + q(c.Azure.Endpoint) + `
index = ` + q(c.Azure.Index) + `
key_field = ` + q(c.Azure.KeyField) + `
content_field = ` + q(c.Azure.ContentField) + `
title_field = ` + q(c.Azure.TitleField) + `
source_field = ` + q(c.Azure.SourceField) + `
vector_field = ` + q(c.Azure.VectorField) + `
embedder = ` + q(c.Azure.Embedder) + `
semantic = ` + q(c.Azure.Semantic) + `
fields = ` + qs(c.Azure.Fields) + `
`
}
