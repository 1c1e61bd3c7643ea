package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/store"
)

// Error codes: stable names clients branch on. The message (Detail) is for
// people and may change.
const (
	CodeInvalidRequest  = "invalid_request"    // malformed or invalid input
	CodeInvalidFilter   = "invalid_filter"     // a filter that does not parse or does not fit the schema
	CodeUnauthorized    = "unauthorized"       // no key, or a key that is unknown or revoked
	CodeForbidden       = "forbidden"          // the key may not do this
	CodeOutOfScope      = "out_of_scope"       // a document outside the key's scope
	CodeNotFound        = "not_found"          // no such collection, job or thread
	CodeConflict        = "conflict"           // the collection exists, or was built with another model
	CodeTooLarge        = "too_large"          // the request body is over the limit
	CodeUnsupportedType = "unsupported_type"   // an upload of a format Quarry does not read
	CodeRateLimited     = "rate_limited"       // the key's request rate is exceeded
	CodeTimeout         = "timeout"            // the request took longer than allowed
	CodeUnavailable     = "unavailable"        // the server is shutting down or the store is closed
	CodeNeedsModel      = "needs_model"        // a structured answer without a chat model
	CodeInternal        = "internal_error"     // anything else
	CodeCrossOrigin     = "cross_origin"       // a browser request from another site's page
	CodeNotAcceptable   = "not_acceptable"     // a response type the server cannot produce
	CodeMethod          = "method_not_allowed" // the path exists, the method does not
)

// Error is the body of every error response, as RFC 9457 problem details
// (application/problem+json): a stable code, the HTTP status, a short
// title and a detail that says what to change.
type Error struct {
	Code   string              `json:"code" doc:"Stable error code: invalid_request, invalid_filter, unauthorized, forbidden, out_of_scope, not_found, conflict, too_large, unsupported_type, rate_limited, timeout, unavailable, needs_model, cross_origin, not_acceptable, method_not_allowed, internal_error"`
	Status int                 `json:"status" doc:"HTTP status code"`
	Title  string              `json:"title" doc:"HTTP status text"`
	Detail string              `json:"detail" doc:"What went wrong and how to fix it"`
	Errors []*huma.ErrorDetail `json:"errors,omitempty" doc:"Per-field details of a validation error"`
}

func (e *Error) Error() string  { return e.Detail }
func (e *Error) GetStatus() int { return e.Status }

// problemJSON is the media type of error bodies: RFC 9457 problem
// details, with code as an extension member.
const problemJSON = "application/problem+json"

// ContentType makes errors problem details, as huma's own are.
func (e *Error) ContentType(ct string) string {
	if ct == "application/json" {
		return problemJSON
	}
	return ct
}

// apiError builds an Error.
func apiError(status int, code, detail string) *Error {
	return &Error{Code: code, Status: status, Title: http.StatusText(status), Detail: detail}
}

// codeFor is the code of a status huma reports by itself (validation,
// body size, content negotiation).
func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return CodeInvalidRequest
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethod
	case http.StatusNotAcceptable:
		return CodeNotAcceptable
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusUnsupportedMediaType:
		return CodeUnsupportedType
	case http.StatusTooManyRequests:
		return CodeRateLimited
	case http.StatusServiceUnavailable:
		return CodeUnavailable
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return CodeTimeout
	}
	return CodeInternal
}

// errorTransformer turns huma's own errors into Error, so every error
// body has a code.
func errorTransformer(_ huma.Context, status string, v any) (any, error) {
	em, ok := v.(*huma.ErrorModel)
	if !ok {
		return v, nil
	}
	st := em.Status
	if st == 0 {
		st, _ = strconv.Atoi(status)
	}
	detail := em.Detail
	if detail == "validation failed" && len(em.Errors) > 0 {
		detail = "validation failed: " + em.Errors[0].Message
		if em.Errors[0].Location != "" {
			detail += " (" + em.Errors[0].Location + ")"
		}
	}
	return &Error{Code: codeFor(st), Status: st, Title: http.StatusText(st), Detail: detail, Errors: em.Errors}, nil
}

// fromLibrary maps an error from the library to an API error. Anything it
// does not recognise is an internal error whose detail is kept, since the
// library's messages say what failed without holding secrets.
func fromLibrary(err error) *Error {
	var ae *Error
	var fe *filter.Error
	var se *filter.SyntaxError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, context.DeadlineExceeded):
		return apiError(http.StatusGatewayTimeout, CodeTimeout, "the request took longer than the server allows: "+err.Error())
	case errors.As(err, &fe), errors.As(err, &se):
		return apiError(http.StatusBadRequest, CodeInvalidFilter, err.Error())
	case errors.Is(err, ingest.ErrNameTaken):
		return apiError(http.StatusConflict, CodeConflict, err.Error())
	case errors.Is(err, quarry.ErrForbidden):
		return apiError(http.StatusForbidden, CodeForbidden, err.Error())
	case errors.Is(err, ingest.ErrOutOfScope):
		return apiError(http.StatusForbidden, CodeOutOfScope, err.Error())
	case errors.Is(err, store.ErrCollectionNotFound), errors.Is(err, store.ErrJobNotFound), errors.Is(err, store.ErrThreadNotFound):
		return apiError(http.StatusNotFound, CodeNotFound, err.Error())
	case errors.Is(err, store.ErrCollectionExists), errors.Is(err, store.ErrModelMismatch), errors.Is(err, store.ErrSchemaMismatch):
		return apiError(http.StatusConflict, CodeConflict, err.Error())
	case errors.Is(err, rag.ErrNeedsModel):
		return apiError(http.StatusBadRequest, CodeNeedsModel, err.Error())
	case errors.Is(err, store.ErrInvalidRequest), errors.Is(err, store.ErrUnsupported):
		return apiError(http.StatusBadRequest, CodeInvalidRequest, err.Error())
	case errors.Is(err, store.ErrClosed):
		return apiError(http.StatusServiceUnavailable, CodeUnavailable, err.Error())
	}
	return apiError(http.StatusInternalServerError, CodeInternal, err.Error())
}
