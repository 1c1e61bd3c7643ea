package server_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// TestOpenAPI checks /openapi.json is a valid OpenAPI 3.1 document, that
// every operation documents its errors with the Error schema, and that real
// requests and responses conform to it.
func TestOpenAPI(t *testing.T) {
	f := newFixture(t)
	r := f.do(t, "GET", "/openapi.json", "", nil)
	expect(t, "openapi", r, 200, "")
	doc, err := libopenapi.NewDocument([]byte(r.raw))
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1") {
		t.Fatalf("OpenAPI version %s, want 3.1", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s", se.Reason, se.FieldPath)
			}
		}
		t.FailNow()
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	ops := 0
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			ops++
			hasErr := false
			for code, resp := range op.Responses.Codes.FromOldest() {
				if code[0] == '4' || code[0] == '5' {
					hasErr = true
					mt := resp.Content.GetOrZero("application/problem+json")
					if mt == nil {
						mt = resp.Content.GetOrZero("application/json")
					}
					if mt == nil || !strings.HasSuffix(mt.Schema.GetReference(), "/Error") {
						t.Errorf("%s %s: response %s is not an Error", method, path, code)
					}
				}
			}
			if d := op.Responses.Default; d != nil {
				hasErr = true
			}
			if !hasErr {
				t.Errorf("%s %s documents no error", method, path)
			}
		}
	}
	if ops < 16 {
		t.Errorf("%d operations documented, want every endpoint", ops)
	}

	// Requests and responses through the real stack match the document.
	f.do(t, "POST", "/v1/collections", "", map[string]any{"name": "kb"})
	f.do(t, "POST", "/v1/collections/kb/documents", "", map[string]any{"documents": []map[string]any{{"text": "Quarry answers questions.", "metadata": map[string]any{"n": 1}}}})
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/collections/kb/search", `{"query":"answers","explain":true,"filter":"sourceType = 'manual'"}`},
		{"POST", "/v1/collections/kb/ask", `{"question":"What does Quarry do?"}`},
		{"GET", "/v1/status", ""},
		{"GET", "/v1/collections", ""},
		{"POST", "/v1/collections/kb/search", `{"query":"x","filter":"nope = 1"}`},
		{"POST", "/v1/collections/kb/search", `{"query":"x","top_k":1000}`},
		{"GET", "/v1/jobs/nope", ""},
	} {
		req, _ := http.NewRequest(tc.method, f.url+tc.path, strings.NewReader(tc.body))
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if ok, errs := v.ValidateHttpRequest(req); !ok && !strings.Contains(tc.body, "1000") {
			t.Errorf("%s %s request: %v", tc.method, tc.path, errs[0].Message)
		}
		req, _ = http.NewRequest(tc.method, f.url+tc.path, strings.NewReader(tc.body))
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode >= 400 && ct != "application/problem+json" {
			t.Errorf("%s %s: error %d with content type %q", tc.method, tc.path, resp.StatusCode, ct)
		}
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		resp.Body = nopCloser{bytes.NewReader(buf.Bytes())}
		vreq, _ := http.NewRequest(tc.method, f.url+tc.path, strings.NewReader(tc.body))
		if tc.body != "" {
			vreq.Header.Set("Content-Type", "application/json")
		}
		if ok, errs := v.ValidateHttpResponse(vreq, resp); !ok {
			for _, e := range errs {
				t.Errorf("%s %s response %d: %s: %s %s", tc.method, tc.path, resp.StatusCode, e.Message, e.Reason, buf.String())
			}
		}
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
