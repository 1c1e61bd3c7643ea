package filter

import (
	"github.com/quarry-rag/quarry/document"
)

// RequestPolicy is what a filter that arrives with a request may hold. The
// zero value is the default every surface starts from: portable conditions
// only.
type RequestPolicy struct {
	// AllowRaw lets a request carry raw, store-tagged fragments. Raw
	// fragments are developer-authored SQL or engine syntax; an operator
	// grants them to a server or a key (--allow-raw-filters) only for
	// callers trusted with the store's query language inside their scope.
	AllowRaw bool
}

// CheckRequest is the one check a request's filter passes before it is
// merged under the caller's scope: it validates e against the schema and
// refuses raw fragments unless the policy allows them. Scopes are merged
// after this check by the caller (Merge), so even an allowed raw fragment
// only narrows.
func CheckRequest(e Expr, s *document.Schema, p RequestPolicy) error {
	if err := Validate(e, s); err != nil {
		return err
	}
	if p.AllowRaw {
		return nil
	}
	var found *Raw
	walk(e, func(x Expr) bool {
		if r, ok := x.(*Raw); ok {
			found = r
			return false
		}
		return true
	})
	if found != nil {
		return errorf("", OpRaw, ReasonRawRefused,
			"raw filter fragments (here for %s) are not accepted from requests; use portable conditions, or ask the operator to enable raw filters (--allow-raw-filters)", found.Store)
	}
	return nil
}
