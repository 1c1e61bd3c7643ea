package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/store"
)

// IndexStates implements store.IndexMaintainer: it reads each collection's
// checkpoint manifest (not the index files, which check themselves on
// load) and compares its sequence number with the rows'.
func (b *Backend) IndexStates(ctx context.Context) ([]store.IndexState, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT name, seq FROM collections ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("index states: %w", err)
	}
	var out []store.IndexState
	for rows.Next() {
		var st store.IndexState
		if err := rows.Scan(&st.Collection, &st.Seq); err != nil {
			rows.Close()
			return nil, fmt.Errorf("index states: %w", err)
		}
		out = append(out, st)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("index states: %w", err)
	}
	for i := range out {
		st := &out[i]
		seq, err := b.checkpointSeq(st.Collection)
		st.CheckpointSeq = seq
		switch {
		case errors.Is(err, os.ErrNotExist) && st.Seq == 0:
			// Nothing was ever written: nothing to checkpoint.
		case errors.Is(err, os.ErrNotExist):
			st.Stale, st.Reason = true, "no checkpoint on disk"
		case err != nil:
			st.Stale, st.Reason = true, "checkpoint unreadable: "+err.Error()
		case seq < st.Seq:
			st.Stale, st.Reason = true, fmt.Sprintf("checkpoint reflects write %d of %d", seq, st.Seq)
		case seq > st.Seq:
			st.Stale, st.Reason = true, fmt.Sprintf("checkpoint claims write %d but the rows end at %d", seq, st.Seq)
		}
	}
	return out, nil
}

// checkpointSeq reads the sequence number of a collection's live
// checkpoint from its manifest, checking that the files it lists exist
// with their sizes.
func (b *Backend) checkpointSeq(name string) (int64, error) {
	dir := b.indexDir(name)
	cur, err := os.ReadFile(filepath.Join(dir, currentFile))
	if err != nil {
		return 0, err
	}
	ck := strings.TrimSpace(string(cur))
	if !strings.HasPrefix(ck, "ckpt-") || strings.ContainsAny(ck, `/\`) {
		return 0, fmt.Errorf("CURRENT names %q", ck)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ck, manifestFile))
	if err != nil {
		return 0, fmt.Errorf("manifest: %w", errors.Unwrap(err))
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("manifest: %w", err)
	}
	if m.Version != checkpointVersion || strconv.FormatInt(m.Seq, 10) != strings.TrimPrefix(ck, "ckpt-") {
		return 0, fmt.Errorf("manifest of %s does not match it", ck)
	}
	for file, size := range m.Sizes {
		st, err := os.Stat(filepath.Join(dir, ck, file))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", file, errors.Unwrap(err))
		}
		if st.Size() != size {
			return 0, fmt.Errorf("%s: %d bytes, the manifest says %d", file, st.Size(), size)
		}
	}
	return m.Seq, nil
}

// RebuildIndexes implements store.IndexMaintainer: the indexes are rebuilt
// from the rows and checkpointed afresh.
func (b *Backend) RebuildIndexes(ctx context.Context, name string) error {
	c, err := b.collection(ctx, name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	err = c.rebuild(ctx)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	// Without CURRENT the next checkpoint is written even at the same
	// sequence number.
	if err := os.Remove(filepath.Join(b.indexDir(name), currentFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rebuild indexes of %q: %w", name, err)
	}
	return c.checkpoint(ctx)
}

var _ store.IndexMaintainer = (*Backend)(nil)
