package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/quarry-rag/quarry"
)

// Error codes: stable names clients branch on. The message (Detail) is for
// people and may change.
const (
	CodeInvalidRequest  = string(quarry.CodeInvalidRequest) // malformed or invalid input
	CodeInvalidFilter   = string(quarry.CodeInvalidFilter)  // a filter that does not parse or does not fit the schema
	CodeUnauthorized    = "unauthorized"                    // no key, or a key that is unknown or revoked
	CodeForbidden       = string(quarry.CodeForbidden)      // the key may not do this
	CodeOutOfScope      = string(quarry.CodeOutOfScope)     // a document outside the key's scope
	CodeNotFound        = string(quarry.CodeNotFound)       // no such collection, job or thread
	CodeConflict        = string(quarry.CodeConflict)       // the collection exists, or was built with another model
	CodeTooLarge        = "too_large"                       // the request body is over the limit
	CodeUnsupportedType = "unsupported_type"                // an upload of a format Quarry does not read
	CodeRateLimited     = "rate_limited"                    // the key's request rate is exceeded
	CodeTimeout         = string(quarry.CodeTimeout)        // the request took longer than allowed
	CodeUnavailable     = string(quarry.CodeUnavailable)    // the server is shutting down or the store is closed
	CodeNeedsModel      = string(quarry.CodeNeedsModel)     // a structured answer without a chat model
	CodeInternal        = string(quarry.CodeInternal)       // anything else
	CodeCrossOrigin     = "cross_origin"                    // a browser request from another site's page
	CodeNotAcceptable   = "not_acceptable"                  // a response type the server cannot produce
	CodeMethod          = "method_not_allowed"              // the path exists, the method does not
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

// fromLibrary maps an error from the library to an API error through the
// core's classification (quarry.Fail): errors a caller can act on keep
// Quarry's message, anything else is a 500 whose detail is only an error
// id, logged beside the real error, so no database, driver or provider
// text reaches a response.
func (s *Server) fromLibrary(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	f := quarry.Fail(context.Background(), s.log, err)
	return apiError(statusOf(f.Code), string(f.Code), f.Message)
}

// statusOf is the HTTP status of a core error code.
func statusOf(c quarry.Code) int {
	switch c {
	case quarry.CodeInvalidRequest, quarry.CodeInvalidFilter, quarry.CodeNeedsModel:
		return http.StatusBadRequest
	case quarry.CodeForbidden, quarry.CodeOutOfScope:
		return http.StatusForbidden
	case quarry.CodeNotFound:
		return http.StatusNotFound
	case quarry.CodeConflict:
		return http.StatusConflict
	case quarry.CodeTimeout:
		return http.StatusGatewayTimeout
	case quarry.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// routeMethods are the methods the API's routes use.
var routeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// noRoute answers what no API route takes under /v1/ with a problem, not
// the web UI's page: 405 naming the methods the path has (Allow) when it
// has some, else 404. mux is asked which methods reach another route.
func noRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range routeMethods {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "" && pattern != m+" /v1/" {
				allow = append(allow, m)
			}
		}
		e := apiError(http.StatusNotFound, CodeNotFound, "no such API path: see /openapi for the routes")
		if len(allow) > 0 {
			e = apiError(http.StatusMethodNotAllowed, CodeMethod, fmt.Sprintf("%s is not a method of %s: use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")))
			w.Header().Set("Allow", strings.Join(allow, ", "))
		}
		w.Header().Set("Content-Type", problemJSON)
		w.WriteHeader(e.Status)
		_ = json.NewEncoder(w).Encode(e)
	})
}
