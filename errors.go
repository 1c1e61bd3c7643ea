package quarry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
)

// Code names the kind of a failure, the same on every surface: the HTTP
// API's problem code, an MCP tool's error, the CLI's --json error. Clients
// branch on it; the message beside it is for people and may change.
type Code string

// The codes of Fail.
const (
	CodeInvalidRequest Code = "invalid_request" // the request is wrong as sent
	CodeInvalidFilter  Code = "invalid_filter"  // a filter that does not parse, fit the schema, or may not be sent
	CodeForbidden      Code = "forbidden"       // the caller's scope does not allow it
	CodeOutOfScope     Code = "out_of_scope"    // a document outside the caller's scope
	CodeNotFound       Code = "not_found"       // no such collection, job, thread or node
	CodeConflict       Code = "conflict"        // exists already, or was built with another model or schema
	CodeNeedsModel     Code = "needs_model"     // the operation needs a chat model
	CodeTimeout        Code = "timeout"         // it took longer than allowed
	CodeUnavailable    Code = "unavailable"     // shutting down, or the store is closed
	CodeInternal       Code = "internal_error"  // anything else: the message says only that, with ID
)

// Failure is an error as a caller outside the trust boundary may see it:
// a code, a message in Quarry's own words and, for an internal error, an
// id under which the real error was logged. Nothing a store, a driver or
// a provider said reaches Message unless Quarry wrote it.
type Failure struct {
	Code    Code
	Message string
	// ID names an internal error in the log; empty for the others.
	ID string
}

func (f Failure) Error() string { return f.Message }

// Fail classifies err for a caller outside the trust boundary (a key
// holder, an MCP client). Errors of a kind the caller can act on keep
// their message: Quarry writes those, naming what to change. Anything
// else — a database's or a provider's error, a failure Quarry did not
// foresee — becomes an internal error whose message says only that,
// logged with log at Error level under a fresh id the message names, so
// an operator can find the real error from what the caller reports.
func Fail(ctx context.Context, log *slog.Logger, err error) Failure {
	if err == nil {
		return Failure{}
	}
	var f Failure
	if errors.As(err, &f) {
		return f
	}
	var fe *filter.Error
	var se *filter.SyntaxError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Failure{Code: CodeTimeout, Message: "the request took longer than allowed"}
	case errors.Is(err, context.Canceled):
		return Failure{Code: CodeUnavailable, Message: "the request was cancelled"}
	case errors.As(err, &fe), errors.As(err, &se), errors.Is(err, retrieve.ErrNoThreads), errors.Is(err, retrieve.ErrEmptyThread):
		return Failure{Code: CodeInvalidFilter, Message: err.Error()}
	case errors.Is(err, ingest.ErrNameTaken), errors.Is(err, store.ErrCollectionExists),
		errors.Is(err, store.ErrModelMismatch), errors.Is(err, store.ErrSchemaMismatch), errors.Is(err, store.ErrFolderTaken),
		errors.Is(err, ErrImportRunning):
		return Failure{Code: CodeConflict, Message: err.Error()}
	case errors.Is(err, ErrForbidden):
		return Failure{Code: CodeForbidden, Message: err.Error()}
	case errors.Is(err, ingest.ErrOutOfScope):
		return Failure{Code: CodeOutOfScope, Message: err.Error()}
	case errors.Is(err, store.ErrCollectionNotFound), errors.Is(err, store.ErrJobNotFound), errors.Is(err, store.ErrThreadNotFound),
		errors.Is(err, store.ErrNodeNotFound):
		return Failure{Code: CodeNotFound, Message: err.Error()}
	case errors.Is(err, rag.ErrNeedsModel), errors.Is(err, retrieve.ErrNeedsModel):
		return Failure{Code: CodeNeedsModel, Message: err.Error()}
	case errors.Is(err, store.ErrInvalidRequest), errors.Is(err, store.ErrUnsupported):
		return Failure{Code: CodeInvalidRequest, Message: err.Error()}
	case errors.Is(err, store.ErrClosed), errors.Is(err, ingest.ErrClosed):
		return Failure{Code: CodeUnavailable, Message: "the knowledge base is closed or shutting down"}
	}
	id := errorID()
	if log == nil {
		log = slog.Default()
	}
	log.ErrorContext(ctx, "quarry: internal error", "error_id", id, "err", err)
	return Failure{Code: CodeInternal, ID: id, Message: "internal error " + id + ": the server logged what failed under this id"}
}

// Fail is the package's Fail with the knowledge base's logger.
func (kb *KB) Fail(ctx context.Context, err error) Failure { return Fail(ctx, kb.log, err) }

// errorID is a short random id for an internal error.
func errorID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
