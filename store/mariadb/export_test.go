package mariadb

import "context"

// FragmentUser is the fragment account of a database.
var FragmentUser = fragmentUser

// FencedQuery runs one statement as a fenced statement would, without the
// parse: what a parser defect could let through meets only the database's
// own fence.
func FencedQuery(ctx context.Context, b *Backend, q string) (string, error) {
	var out string
	err := b.fenced(ctx, func(db querier) error {
		var v *string
		if err := db.QueryRowContext(ctx, fenceStatement+q).Scan(&v); err != nil {
			return err
		}
		if v != nil {
			out = *v
		}
		return nil
	})
	return out, err
}
