// Package openapicheck validates HTTP requests and answers against an
// engine's published OpenAPI document, for the fakes that stand in for
// engines no test here can run.
package openapicheck

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// Checker validates against one document. It is safe for concurrent use.
type Checker struct {
	v validator.Validator
}

// New reads an OpenAPI document (JSON or YAML).
func New(spec []byte) (*Checker, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("openapicheck: OpenAPI document: %w", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapicheck: validator: %v", errs)
	}
	return &Checker{v: v}, nil
}

// Request checks a request whose body has been read into body; nil when
// it conforms, else an error listing the validator's reasons.
func (c *Checker) Request(r *http.Request, body []byte) error {
	vr := r.Clone(r.Context())
	vr.Body = io.NopCloser(bytes.NewReader(body))
	ok, errs := c.v.ValidateHttpRequestSync(vr)
	if ok {
		return nil
	}
	var reasons []string
	for _, e := range errs {
		reasons = append(reasons, e.Message+": "+e.Reason)
		for _, se := range e.SchemaValidationErrors {
			reasons = append(reasons, "  "+se.Reason+" at "+se.FieldPath)
		}
	}
	return fmt.Errorf("%s %s %s: %s", r.Method, r.URL.RequestURI(), truncate(body), strings.Join(reasons, "; "))
}

// Response checks the answer to r: its status, content type and body.
func (c *Checker) Response(r *http.Request, code int, contentType string, body []byte) error {
	resp := &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {contentType}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}
	vr := r.Clone(r.Context())
	vr.Body = io.NopCloser(bytes.NewReader(nil))
	ok, errs := c.v.ValidateHttpResponse(vr, resp)
	if ok {
		return nil
	}
	var reasons []string
	for _, e := range errs {
		reasons = append(reasons, e.Message+": "+e.Reason)
		for _, se := range e.SchemaValidationErrors {
			reasons = append(reasons, "  "+se.Reason+" at "+se.FieldPath)
		}
	}
	return fmt.Errorf("answer to %s %s: %s", r.Method, r.URL.Path, strings.Join(reasons, "; "))
}

func truncate(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}
