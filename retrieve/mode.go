package retrieve

import (
	"fmt"
	"slices"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/store"
)

// DefaultMode is the search mode used when none is asked for. With the
// offline hash embedder it is keyword, fixed by measurement on SciFact and
// Cranfield together (nDCG@10, `quarry eval --beir DIR --mode all`):
//
//	               scifact  cranfield  average
//	keyword         0.6821     0.3520   0.5171
//	vector          0.4220     0.2436   0.3328
//	hybrid (RRF)    0.5482     0.3247   0.4365
//	hybrid vw 0.3   0.6230     0.3518   0.4874
//	hybrid convex   0.6687     0.3615   0.5151
//
// The hash embedder is lexical, so fusing it with BM25 does not pay on
// average. A semantic embedder earns hybrid. It is a rule for the average
// collection: a collection's calibration (eval.Calibrate, recorded as a
// Calibration) replaces it for that collection's searches
// (Resolved.Calibrate).
func DefaultMode(m embed.ModelInfo) store.Mode {
	if m.Provider == "hash" {
		return store.ModeKeyword
	}
	return store.ModeHybrid
}

// AskMode is the retrieval mode of answers when nothing says otherwise:
// hybrid, whatever the embedder. Questions are short and worded unlike the
// text that answers them, and the offline hash embedder's word pieces catch
// what BM25 alone misses ("remove" for "removes", "notifications" for
// "notify"). Measured on the PostgreSQL manual with 20 questions whose
// answering page is known (extractive answers, ten passages), counting
// answers that cite that page:
//
//	keyword  10/20
//	hybrid   14/20
//
// Search keeps DefaultMode, measured on retrieval benchmarks.
const AskMode = store.ModeHybrid

// Modes lists the modes a caller may ask for, "auto" included.
var Modes = []string{"auto", string(store.ModeKeyword), string(store.ModeVector), string(store.ModeHybrid)}

// Resolved is a requested mode made concrete.
type Resolved struct {
	// Mode is keyword, vector or hybrid.
	Mode store.Mode
	// Fusion is how hybrid merges its branches; the zero value is the
	// store's default (reciprocal rank fusion).
	Fusion store.Fusion
	// Triggers is set when the request was "auto" for a search: the
	// knowledge hierarchy's triggers are tried first (hierarchy.TriggerSearch).
	Triggers bool
	// Default is set when a search's mode fell to the fixed rule
	// (DefaultMode): a collection's calibration may choose instead
	// (Calibrate).
	Default bool
	// Calibrated is set when the collection's calibration chose; Name then
	// names its configuration.
	Calibrated bool
	Name       string
}

// ResolveMode is the one rule that turns a requested mode into the mode
// run. requested is what the caller sent ("" when nothing), configured the
// knowledge base's search.mode ("" when unset). Empty falls back to
// configured; "auto" or nothing is DefaultMode for a search and AskMode
// for an answer, and "auto" also tries the hierarchy's triggers first.
// Anything else is an error that names the choices.
func ResolveMode(requested, configured string, m embed.ModelInfo, ask bool) (Resolved, error) {
	mode := requested
	if mode == "" {
		mode = configured
	}
	switch mode {
	case string(store.ModeKeyword), string(store.ModeVector), string(store.ModeHybrid):
		return Resolved{Mode: store.Mode(mode)}, nil
	case "auto", "":
		if ask {
			return Resolved{Mode: AskMode}, nil
		}
		return Resolved{Mode: DefaultMode(m), Triggers: mode == "auto", Default: true}, nil
	}
	return Resolved{}, fmt.Errorf("mode %q: use auto, keyword, vector or hybrid", mode)
}

// Calibrate lets a collection's calibration choose a search's default
// mode: only when the fixed rule would have chosen (Default), and only
// when the calibration was measured with the embedder m searches with —
// another embedder's vectors rank differently. Answers keep AskMode: the
// calibration's pseudo-queries are known-item searches, not questions.
func (r Resolved) Calibrate(cal *Calibration, m embed.ModelInfo) Resolved {
	if !r.Default || cal == nil || cal.Model != m.String() || !slices.Contains(Modes[1:], string(cal.Choice.Mode)) {
		return r
	}
	r.Mode, r.Fusion, r.Calibrated, r.Name = cal.Choice.Mode, cal.Choice.Fusion, true, cal.Choice.Name
	return r
}

// Config names the configuration that runs: the calibration's name for
// it, else the mode.
func (r Resolved) Config() string {
	if r.Name != "" {
		return r.Name
	}
	return string(r.Mode)
}
