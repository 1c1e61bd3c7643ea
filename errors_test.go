package quarry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

func TestFail(t *testing.T) {
	dbText := `ERROR: invalid input syntax for type integer: "tenant b's secret" (SQLSTATE 22P02)`
	tests := []struct {
		err  error
		code Code
		keep bool // the message is the error's own
	}{
		{fmt.Errorf("vector search: %w", errors.New(dbText)), CodeInternal, false},
		{fmt.Errorf("search: %w", &filter.SyntaxError{Syntax: "postgres raw fragment", Msg: "subqueries are not allowed"}), CodeInvalidFilter, true},
		{fmt.Errorf("%w: this caller may only read", ErrForbidden), CodeForbidden, true},
		{fmt.Errorf("%w: the raw fragment failed in the database (SQLSTATE 22P02)", store.ErrInvalidRequest), CodeInvalidRequest, true},
		{fmt.Errorf("open: %w", store.ErrCollectionNotFound), CodeNotFound, true},
		{context.DeadlineExceeded, CodeTimeout, false},
		{store.ErrClosed, CodeUnavailable, false},
	}
	for _, tt := range tests {
		var logged bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logged, nil))
		f := Fail(context.Background(), log, tt.err)
		if f.Code != tt.code {
			t.Errorf("Fail(%v).Code = %s, want %s", tt.err, f.Code, tt.code)
		}
		if tt.keep != (f.Message == tt.err.Error()) {
			t.Errorf("Fail(%v).Message = %q", tt.err, f.Message)
		}
		if strings.Contains(f.Message, "secret") || strings.Contains(f.Message, "SQLSTATE 22P02)\"") {
			t.Errorf("Fail(%v) shows the database's text: %q", tt.err, f.Message)
		}
		if tt.code == CodeInternal {
			if f.ID == "" || !strings.Contains(f.Message, f.ID) || !strings.Contains(logged.String(), f.ID) || !strings.Contains(logged.String(), "secret") {
				t.Errorf("an internal error's id %q is not in its message %q and the log %q beside the real error", f.ID, f.Message, logged.String())
			}
		} else if logged.Len() > 0 {
			t.Errorf("Fail(%v) logged %q", tt.err, logged.String())
		}
	}
	// A Failure passes through unchanged.
	f := Failure{Code: CodeConflict, Message: "taken"}
	if got := Fail(context.Background(), nil, fmt.Errorf("x: %w", f)); got != f {
		t.Errorf("a wrapped Failure became %+v", got)
	}
}
