package ingest

// Params are what an ingestion job records so that `quarry ingest
// --resume` can run it again: one shape for every surface that starts
// ingestions (the command line, the HTTP API, MCP).
type Params struct {
	Roots      []string       `json:"roots"`
	Collection string         `json:"collection"`
	Meta       map[string]any `json:"meta,omitempty"`
	Prune      bool           `json:"prune,omitempty"`
	Include    []string       `json:"include,omitempty"`
	Exclude    []string       `json:"exclude,omitempty"`
}
